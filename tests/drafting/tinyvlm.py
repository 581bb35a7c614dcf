"""A randomly initialised vision-language model (LLaVA: a CLIP vision tower and a Llama decoder),
saved like a real one with its processor, tokenizer and chat template, all built here: nothing is
downloaded. The worker's local backend and `transformers serve` load it through their real paths.

The tests use the tiny shape; the drafting bench builds LLaVA-1.5-7B's shape (CLIP ViT-L/14 at
336 px, Llama-2-7B) on a GPU, the same compute as the real model without its weights. Its tokens
are single bytes (a vocabulary of 260, not 32,000: about 2 % fewer FLOPs a token at 7B), so what
it writes is random text: the drafting tests rely on that to see invalid answers counted and
kept, never shown.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.worker.tiny_clip import _byte_chars  # GPT-2's byte-to-character table

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
SHAPES = {
    "tiny": {
        "image_size": 32, "patch": 8, "vision": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2},
        "text": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2},
    },
    "llava-1.5-7b": {
        "image_size": 336, "patch": 14,
        "vision": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 16},
        "text": {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32},
    },
}
IMAGE_SIZE, PATCH = SHAPES["tiny"]["image_size"], SHAPES["tiny"]["patch"]
IMAGE_TOKENS = (IMAGE_SIZE // PATCH) ** 2  # the CLS token is dropped ("default" feature selection)


def save_tiny_vlm(folder: Path, seed: int = 0) -> Path:
    return save_vlm(folder, "tiny", seed)


def save_vlm(folder: Path, shape: str = "tiny", seed: int = 0, device: str = "cpu") -> Path:
    """Build the shape's model with random weights (on `device`, in bf16 off the CPU) and save it
    with its processor to `folder`."""
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
    dims = SHAPES[shape]
    size, patch = dims["image_size"], dims["patch"]
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(image_size=size, patch_size=patch, projection_dim=16, **dims["vision"]).to_dict(),
        text_config=LlamaConfig(
            vocab_size=len(vocab), max_position_embeddings=4096, bos_token_id=1, eos_token_id=2, pad_token_id=0, **dims["text"]
        ).to_dict(),
        image_token_index=vocab["<image>"],
        vision_feature_select_strategy="default",
        vision_feature_layer=-1 if shape == "tiny" else -2,
    )
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = LlavaForConditionalGeneration(config)
    finally:
        torch.set_default_dtype(default)
    model.generation_config.pad_token_id = 0
    model.generation_config.eos_token_id = 2
    model.save_pretrained(folder)
    images = CLIPImageProcessor(size={"shortest_edge": size}, crop_size={"height": size, "width": size})
    processor = LlavaProcessor(
        image_processor=images, tokenizer=tokenizer, patch_size=patch, vision_feature_select_strategy="default",
        num_additional_image_tokens=1, chat_template=CHAT_TEMPLATE,
    )
    processor.save_pretrained(folder)
    (folder / "random-vlm.json").write_text(json.dumps({"shape": shape, "seed": seed}))
    return folder

