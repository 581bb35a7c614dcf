"""A tiny randomly initialised vision-language model (LLaVA: a CLIP vision tower and a Llama decoder),
saved like a real one with its processor, tokenizer and chat template, all built here: nothing is
downloaded. The worker's local backend and `transformers serve` load it through their real paths.

Its tokens are single characters, so what it writes is random text: the drafting tests rely on
that to see invalid answers counted and kept, never shown.
"""

from __future__ import annotations

import json
from pathlib import Path

# One user turn of text and images, then the assistant's. Images come as `<image>` where the
# message names them; the processor expands each into the vision tower's patch tokens.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ message['role'] | upper }}: "
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
IMAGE_SIZE, PATCH = 32, 8
IMAGE_TOKENS = (IMAGE_SIZE // PATCH) ** 2  # the CLS token is dropped ("default" feature selection)


def save_tiny_vlm(folder: Path, seed: int = 0) -> Path:
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import (
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    # The PIL image processor: the default one wants torchvision, which the worker does not need.
    CLIPImageProcessor = getattr(transformers, "CLIPImageProcessorPil", None) or transformers.CLIPImageProcessor
    torch.manual_seed(seed)
    folder.mkdir(parents=True, exist_ok=True)
    # Byte-level characters without merges: every byte of the text is one token.
    specials = ["<pad>", "<s>", "</s>", "<image>"]
    vocab = {t: i for i, t in enumerate(specials)}
    vocab.update({c: len(specials) + i for i, c in enumerate(_byte_chars())})
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, bos_token="<s>", eos_token="</s>", pad_token="<pad>", padding_side="left",
        additional_special_tokens=["<image>"],
    )
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, image_size=IMAGE_SIZE,
            patch_size=PATCH, projection_dim=16,
        ).to_dict(),
        text_config=LlamaConfig(
            vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
            num_key_value_heads=2, max_position_embeddings=2048, bos_token_id=1, eos_token_id=2, pad_token_id=0,
        ).to_dict(),
        image_token_index=vocab["<image>"],
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    model = LlavaForConditionalGeneration(config)
    model.generation_config.pad_token_id = 0
    model.generation_config.eos_token_id = 2
    model.save_pretrained(folder)
    images = CLIPImageProcessor(size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    processor = LlavaProcessor(
        image_processor=images, tokenizer=tokenizer, patch_size=PATCH, vision_feature_select_strategy="default",
        num_additional_image_tokens=1, chat_template=CHAT_TEMPLATE,
    )
    processor.save_pretrained(folder)
    (folder / "tiny-vlm.json").write_text(json.dumps({"seed": seed}))
    return folder


def _byte_chars() -> list[str]:
    """GPT-2's byte-to-character table, which a byte-level tokenizer uses."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]
