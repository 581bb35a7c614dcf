"""Drafters: the model servers and local models that write drafts, named in a TOML file.

`VLCURATE_DRAFTERS_FILE` names the file; each `[drafters.<name>]` table is one drafter. Prompt
versions name a drafter, so the file can move a prompt to another server without touching the
database. Keys are never in the file's values that are shown: a drafter names the environment
variable (`api_key_env`) or the file (`api_key_file`) that holds its key, read only when a
request is made.

    [drafters.vllm]
    backend = "openai"
    base_url = "http://gpu-box:8000/v1"
    model = "Qwen/Qwen2.5-VL-7B-Instruct"
    api_key_env = "VLLM_API_KEY"
    max_in_flight = 32
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from app.errors import Invalid, format_validation_error


class OpenAIDrafter(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["openai"]
    base_url: str
    model: str
    api_key_env: str | None = None
    api_key_file: Path | None = None
    max_in_flight: int = Field(default=16, ge=1, le=1024)
    timeout_seconds: float = Field(default=60.0, gt=0)
    retries: int = Field(default=4, ge=0, le=20)
    backoff_seconds: float = Field(default=0.5, gt=0, le=60)  # the first wait before a retry; doubled each try
    structured: Literal["json_schema", "json_object", "none"] = "json_schema"
    image_transport: Literal["data_url", "presigned"] = "data_url"

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("base_url is an http:// or https:// URL, e.g. http://gpu-box:8000/v1")
        return value

    @model_validator(mode="after")
    def _one_key(self) -> "OpenAIDrafter":
        if self.api_key_env and self.api_key_file:
            raise ValueError("name the API key's environment variable (api_key_env) or its file (api_key_file), not both")
        return self

    def describe(self) -> str:
        from app.drafting.backends import public_url

        key = f", key from ${self.api_key_env}" if self.api_key_env else ", key from a file" if self.api_key_file else ""
        return f"openai {public_url(self.base_url)} model {self.model}, {self.max_in_flight} in flight{key}"


class LocalDrafter(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["local"]
    model_dir: Path
    batch_size: int = Field(default=8, ge=1, le=1024)
    device: str = "auto"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"

    def describe(self) -> str:
        return f"local {self.model_dir}, batches of {self.batch_size}, device {self.device}, dtype {self.dtype}"


DrafterConfig = Annotated[OpenAIDrafter | LocalDrafter, Field(discriminator="backend")]
_FILE = TypeAdapter(dict[str, dict[str, DrafterConfig]])
_cache: dict[Path, tuple[float, dict[str, OpenAIDrafter | LocalDrafter]]] = {}


def drafters(settings) -> dict[str, OpenAIDrafter | LocalDrafter]:
    """The configured drafters by name (none without a drafters file); read again when the file changes."""
    path = getattr(settings, "drafters_file", None)
    if path is None:
        return {}
    path = Path(path)
    try:
        mtime = path.stat().st_mtime
    except OSError as exc:
        raise Invalid(f"VLCURATE_DRAFTERS_FILE {path} cannot be read: {exc.strerror}.") from None
    cached = _cache.get(path)
    if cached and cached[0] == mtime:
        return cached[1]
    try:
        parsed = _FILE.validate_python({"drafters": tomllib.loads(path.read_text(encoding="utf-8")).get("drafters", {})})
    except tomllib.TOMLDecodeError as exc:
        raise Invalid(f"{path} is not valid TOML: {exc}.") from None
    except ValidationError as exc:
        raise Invalid(f"{path}: " + "; ".join(format_validation_error(exc))) from None
    found = parsed["drafters"]
    _cache[path] = (mtime, found)
    return found
