"""A tiny randomly initialised CLIP, saved like a real one, so the worker loads it through its real path."""

from __future__ import annotations

import json
from pathlib import Path


def save_tiny_clip(folder: Path, seed: int = 0) -> Path:
    import torch
    import transformers
    from transformers import CLIPConfig, CLIPModel, CLIPProcessor, CLIPTokenizer

    # The PIL image processor: the default one wants torchvision, which the worker does not need.
    CLIPImageProcessor = getattr(transformers, "CLIPImageProcessorPil", None) or transformers.CLIPImageProcessor
    torch.manual_seed(seed)
    folder.mkdir(parents=True, exist_ok=True)
    # A byte-level vocabulary without merges: every character is a token.
    chars = _byte_chars()
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))
    images = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    config = CLIPConfig(
        text_config={"vocab_size": len(vocab), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                     "num_attention_heads": 2, "max_position_embeddings": 77, "bos_token_id": vocab["<|startoftext|>"],
                     "eos_token_id": vocab["<|endoftext|>"], "pad_token_id": vocab["<|endoftext|>"]},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": 32, "patch_size": 8},
        projection_dim=16,
    )
    CLIPModel(config).save_pretrained(folder)
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)
    return folder


def _byte_chars() -> list[str]:
    """GPT-2's byte-to-character table, which CLIP's byte-level tokenizer uses."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]
