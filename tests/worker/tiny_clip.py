"""Randomly initialised CLIPs saved like real ones, so the worker loads them through its real path:
a tiny one for the tests, and full-size ViT-B/16 and ViT-L/14 shapes for the benchmark (the compute
of the real models, without their weights)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

# The published models' shapes (openai/clip-vit-base-patch16, openai/clip-vit-large-patch14).
FULL_SIZE = {
    "vit-b16": {
        "text": {"hidden_size": 512, "intermediate_size": 2048, "num_hidden_layers": 12, "num_attention_heads": 8},
        "vision": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12, "patch_size": 16},
        "projection_dim": 512,
    },
    "vit-l14": {
        "text": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12},
        "vision": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 16, "patch_size": 14},
        "projection_dim": 768,
    },
}


def save_tiny_clip(folder: Path, seed: int = 0) -> Path:
    return save_random_clip(
        folder,
        text={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2},
        vision={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2, "patch_size": 8},
        projection_dim=16, image_size=32, seed=seed,
    )


def save_full_size_clip(folder: Path, arch: str, words: Iterable[str] = (), seed: int = 0) -> Path:
    """A randomly initialised CLIP of a published shape ("vit-b16", "vit-l14") at 224 pixels. Its
    vocabulary table has the real size (49,408); `words` are single tokens, as a real vocabulary's
    common words are, so that texts made of them are as long in tokens as with the real tokenizer."""
    shape = FULL_SIZE[arch]
    return save_random_clip(folder, text=shape["text"], vision=shape["vision"], projection_dim=shape["projection_dim"],
                            image_size=224, vocab_size=49408, words=words, seed=seed)


def save_random_clip(folder: Path, *, text: dict, vision: dict, projection_dim: int, image_size: int,
                     vocab_size: int | None = None, words: Iterable[str] = (), seed: int = 0) -> Path:
    import torch
    import transformers
    from transformers import CLIPConfig, CLIPModel, CLIPProcessor, CLIPTokenizer

    # The PIL image processor: the default one wants torchvision, which the worker does not need.
    CLIPImageProcessor = getattr(transformers, "CLIPImageProcessorPil", None) or transformers.CLIPImageProcessor
    torch.manual_seed(seed)
    folder.mkdir(parents=True, exist_ok=True)
    # A byte-level vocabulary: every character is a token, and each of `words` one too (by merges).
    chars = _byte_chars()
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    merges = _word_merges(words, vocab)
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("\n".join(["#version: 0.2", *merges]) + "\n")
    tokenizer = CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))
    images = CLIPImageProcessor(size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size})
    config = CLIPConfig(
        text_config={**text, "vocab_size": vocab_size or len(vocab), "max_position_embeddings": 77,
                     "bos_token_id": vocab["<|startoftext|>"], "eos_token_id": vocab["<|endoftext|>"],
                     "pad_token_id": vocab["<|endoftext|>"]},
        vision_config={**vision, "image_size": image_size},
        projection_dim=projection_dim,
    )
    CLIPModel(config).save_pretrained(folder)
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)
    return folder


def _word_merges(words: Iterable[str], vocab: dict[str, int]) -> list[str]:
    """BPE merges (added to `vocab`) that build each word, lower-cased, into one token, left to right."""
    merges: list[str] = []
    for word in dict.fromkeys(w.lower() for w in words):
        if len(word) < 2 or not all(c in vocab for c in word):
            continue
        parts = [*word[:-1], word[-1] + "</w>"]
        done = parts[0]
        for part in parts[1:]:
            merged = done + part
            if merged not in vocab:
                vocab[merged] = len(vocab)
                merges.append(f"{done} {part}")
            done = merged
    return merges


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
