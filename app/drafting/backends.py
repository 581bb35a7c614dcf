"""Drafter backends behind one call: `Drafter.complete(requests) -> replies`, one reply per request,
in order. A reply is the model's text as it came; checking it is the caller's (`app.drafting.run`).

- `OpenAIBackend`: POST {base_url}/chat/completions (vLLM, SGLang, TGI, Ollama, LiteLLM,
  `transformers serve`, a hosted API). Requests run concurrently up to `max_in_flight` on one
  httpx.AsyncClient: the server batches them, and one at a time would leave it idle. A 429, a 5xx,
  a connection error or a timeout is retried with exponential backoff and jitter (a Retry-After is
  honoured); any other 4xx fails at once with the server's message. Failing after the retries
  fails the whole call (DrafterError): a batch is stored whole or not at all. The answer's schema
  goes as `response_format` (`structured`: json_schema with "strict", json_object, or none, the
  last two with the schema in the prompt); a schema that strict mode would refuse
  (`app.drafting.strict`) is asked as json_object instead, with a warning.
- `LocalBackend`: a vision-language model from a local directory through transformers
  (AutoModelForImageTextToText + AutoProcessor, `local_files_only`), on CUDA in bf16 when there is
  one, else CPU in fp32; batched `generate` over the processor's chat template, under
  `torch.inference_mode`. It cannot constrain decoding, so the prompt carries the schema.

API keys are read when a backend is built (from the environment variable or file the drafter
names), sent as a Bearer header and nowhere else: not in a repr, a log line, an error message (a
server that echoes one has it blanked), the database or a job's arguments. httpx logs requests
without headers; our retry warnings name the drafter and its URL without credentials.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import inspect
import json
import logging
import os
import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import httpx

from app.drafting.config import LocalDrafter, OpenAIDrafter
from app.drafting.strict import strict_schema_problems

log = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 30.0  # the longest wait our own backoff chooses between two tries
MAX_RETRY_AFTER_SECONDS = 120.0  # the longest Retry-After honoured: a longer one is a server to fail over
DEFAULT_MAX_TOKENS = 1024


class DrafterError(RuntimeError):
    """A drafter could not answer (down, refusing, out of retries); the message names the drafter
    and its URL, never its key."""


@dataclass(frozen=True)
class DraftImage:
    mime: str
    data: bytes = b""
    url: str | None = None  # a presigned URL, sent instead of the bytes

    def data_url(self) -> str:
        return self.url or f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"


@dataclass(frozen=True)
class DraftRequest:
    user: str
    system: str = ""
    images: tuple[DraftImage, ...] = ()
    schema: Mapping[str, Any] | None = None  # the JSON schema the answer must follow
    schema_name: str = "draft"
    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None


@dataclass(frozen=True)
class DraftReply:
    text: str
    model: str  # as the server names it (a local model: its directory's name)
    latency_ms: int
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None  # "length": cut off at max_tokens


class Drafter(Protocol):
    name: str

    def complete(self, requests: Sequence[DraftRequest]) -> list[DraftReply]: ...


def json_instruction(schema: Mapping[str, Any]) -> str:
    """What a prompt asks when the server does not constrain the answer to the schema itself."""
    return "\n\nAnswer with one JSON object and nothing else, following this JSON Schema:\n" + json.dumps(schema, ensure_ascii=False)


def public_url(url: str) -> str:
    """A URL fit to show: no user, password, query or fragment (where a key could hide)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def read_key(name: str, config: OpenAIDrafter) -> str | None:
    if config.api_key_env:
        key = os.environ.get(config.api_key_env)
        if not key:
            raise DrafterError(f"Drafter '{name}' takes its API key from ${config.api_key_env}, which is not set.")
        return key.strip()
    if config.api_key_file:
        try:
            return Path(config.api_key_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise DrafterError(f"Drafter '{name}': its API key file {config.api_key_file} cannot be read ({exc.strerror}).") from None
    return None


def build(name: str, config: OpenAIDrafter | LocalDrafter) -> Drafter:
    """The backend of a configured drafter (a local model is loaded once per process)."""
    if isinstance(config, LocalDrafter):
        return LocalBackend(name, config)
    return OpenAIBackend(name, config)


# -- OpenAI-compatible HTTP ------------------------------------------------------------------------


class OpenAIBackend:
    def __init__(self, name: str, config: OpenAIDrafter):
        self.name, self.config = name, config
        self._key = read_key(name, config)
        self.url = config.base_url.rstrip("/") + "/chat/completions"
        self.where = public_url(config.base_url)

    def __repr__(self) -> str:
        return f"OpenAIBackend({self.name!r}, {self.where!r}, model={self.config.model!r})"

    def body(self, request: DraftRequest) -> dict[str, Any]:
        """The chat-completions request body: a system message, then the user's text and images."""
        user = request.user
        structured = self.config.structured if request.schema is not None else "none"
        if structured == "json_schema" and strict_schema_problems(request.schema):
            structured = "json_object"  # strict mode would refuse the schema: it goes in the prompt
        if request.schema is not None and structured != "json_schema":
            user += json_instruction(request.schema)
        parts: list[dict[str, Any]] = [{"type": "text", "text": user}]
        parts += [{"type": "image_url", "image_url": {"url": image.data_url()}} for image in request.images]
        messages = ([{"role": "system", "content": request.system}] if request.system else []) + [{"role": "user", "content": parts}]
        body: dict[str, Any] = {"model": self.config.model, "messages": messages, "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS}
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.seed is not None:
            body["seed"] = request.seed
        if structured == "json_object":
            body["response_format"] = {"type": "json_object"}
        elif structured == "json_schema":
            name = re.sub(r"[^A-Za-z0-9_-]", "_", request.schema_name)[:64] or "draft"
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": name, "schema": request.schema, "strict": True}}
        return body

    def complete(self, requests: Sequence[DraftRequest]) -> list[DraftReply]:
        """Send every request, up to max_in_flight at once; called from a job's thread (no running loop)."""
        return asyncio.run(self.acomplete(requests))

    async def acomplete(self, requests: Sequence[DraftRequest]) -> list[DraftReply]:
        if self.config.structured == "json_schema":
            self._warn_not_strict(requests)
        limit = asyncio.Semaphore(self.config.max_in_flight)
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        timeout = httpx.Timeout(self.config.timeout_seconds, connect=min(10.0, self.config.timeout_seconds))
        pool = httpx.Limits(max_connections=self.config.max_in_flight, max_keepalive_connections=self.config.max_in_flight)
        async with httpx.AsyncClient(headers=headers, timeout=timeout, limits=pool) as client:
            try:
                async with asyncio.TaskGroup() as group:
                    tasks = [group.create_task(self._one(client, limit, r)) for r in requests]
            except ExceptionGroup as failed:
                # The first failure cancelled the rest; it is the one to report.
                first = next((e for e in failed.exceptions if isinstance(e, DrafterError)), failed.exceptions[0])
                raise first from None
        return [t.result() for t in tasks]

    def _warn_not_strict(self, requests: Sequence[DraftRequest]) -> None:
        schemas = {r.schema_name: r.schema for r in requests if r.schema is not None}
        for name, schema in schemas.items():
            problems = strict_schema_problems(schema)
            if problems:
                log.warning(
                    "drafter %s: the %s schema is not one strict structured output takes (%s); asking json_object with "
                    "the schema in the prompt", self.name, name, "; ".join(problems[:3]),
                )

    async def _one(self, client: httpx.AsyncClient, limit: asyncio.Semaphore, request: DraftRequest) -> DraftReply:
        body = self.body(request)
        tries = self.config.retries + 1
        async with limit:  # held through a backoff too: a busy server gets no more requests for it
            for attempt in range(tries):
                start = time.perf_counter()
                wait = None
                try:
                    response = await client.post(self.url, json=body)
                except httpx.TransportError as exc:  # refused, reset, timed out
                    problem = _transport_problem(exc, self.config.timeout_seconds)
                else:
                    if response.status_code == 200:
                        return self._reply(response, start)
                    problem = f"HTTP {response.status_code} {self._server_message(response)}".rstrip()
                    if response.status_code != 429 and response.status_code < 500:
                        raise DrafterError(f"Drafter '{self.name}' at {self.where} refused the request: {problem}.")
                    wait = retry_after(response.headers.get("retry-after"))
                if attempt + 1 == tries:
                    times = f"failed {tries} times; last: " if tries > 1 else "failed: "
                    raise DrafterError(f"Drafter '{self.name}' at {self.where} {times}{problem}.")
                delay = wait if wait is not None else backoff(self.config.backoff_seconds, attempt)
                log.warning("drafter %s at %s: %s; try %d of %d in %.2f s", self.name, self.where, problem, attempt + 2, tries, delay)
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    def _reply(self, response: httpx.Response, start: float) -> DraftReply:
        try:
            data = response.json()
            choice = data["choices"][0]
            content = choice["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise DrafterError(
                f"Drafter '{self.name}' at {self.where} answered HTTP 200 without a chat completion: {self._scrub(response.text[:200])!r}."
            ) from None
        if isinstance(content, list):  # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        usage = data.get("usage") or {}
        return DraftReply(
            text=str(content), model=str(data.get("model") or self.config.model),
            latency_ms=round((time.perf_counter() - start) * 1000),
            prompt_tokens=_int(usage.get("prompt_tokens")), completion_tokens=_int(usage.get("completion_tokens")),
            finish_reason=choice.get("finish_reason"),
        )

    def _server_message(self, response: httpx.Response) -> str:
        try:
            data = response.json()
            error = data.get("error") if isinstance(data, dict) else None
            message = (error.get("message") if isinstance(error, dict) else error) or data.get("detail") or data.get("message")
        except (ValueError, AttributeError):
            message = response.text
        return self._scrub(" ".join(str(message or "").split())[:300])

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, "[key]") if self._key else text


def _transport_problem(exc: httpx.TransportError, timeout: float) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"no answer within {timeout:g} s ({type(exc).__name__})"
    return f"{type(exc).__name__}: {str(exc) or 'connection failed'}"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def backoff(base: float, attempt: int) -> float:
    """Exponential backoff with jitter: half the step fixed, half random, so that many clients that
    failed together do not come back together."""
    step = min(MAX_BACKOFF_SECONDS, base * 2**attempt)
    return step / 2 + random.uniform(0, step / 2)


def retry_after(value: str | None) -> float | None:
    """A Retry-After header in seconds (a number or an HTTP date), capped; None when absent or unreadable."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - datetime.now(timezone.utc)).total_seconds()
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_SECONDS)


# -- a local model through transformers ----------------------------------------------------------------


@dataclass
class LocalModel:
    model: Any
    processor: Any
    device: str
    name: str
    processor_kwargs: bool  # whether apply_chat_template takes `processor_kwargs` (transformers >= 5.x)


@lru_cache(maxsize=2)
def load_local(model_dir: str, device: str = "auto", dtype: str = "auto") -> LocalModel:
    """Load a vision-language model and its processor from a local directory (never downloaded)."""
    from app.worker.backends import ModelUnavailable, _require
    from app.worker.backends import device as best_device

    path = Path(model_dir)
    if not (path / "config.json").is_file():
        raise ModelUnavailable(f"The local drafter's model_dir {model_dir} holds no model (config.json not found).")
    torch = _require("torch", "A local drafter")
    transformers = _require("transformers", "A local drafter")
    where = best_device() if device == "auto" else device
    if dtype == "auto":
        chosen = torch.bfloat16 if where.startswith("cuda") else torch.float32
    else:
        chosen = getattr(torch, dtype)
    processor = transformers.AutoProcessor.from_pretrained(path, local_files_only=True)
    tokenizer = getattr(processor, "tokenizer", None)
    if tokenizer is not None:
        tokenizer.padding_side = "left"  # a batch of prompts ends where generation starts
    model = transformers.AutoModelForImageTextToText.from_pretrained(path, local_files_only=True, dtype=chosen).to(where).eval()
    takes = "processor_kwargs" in inspect.signature(processor.apply_chat_template).parameters
    return LocalModel(model, processor, where, path.name, takes)


class LocalBackend:
    def __init__(self, name: str, config: LocalDrafter):
        self.name, self.config = name, config
        self.local = load_local(str(config.model_dir), config.device, config.dtype)

    def __repr__(self) -> str:
        return f"LocalBackend({self.name!r}, {str(self.config.model_dir)!r}, device={self.local.device!r})"

    def complete(self, requests: Sequence[DraftRequest]) -> list[DraftReply]:
        """Generate in batches of batch_size; requests with the same sampling settings share a batch."""
        replies: dict[int, DraftReply] = {}
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((r.max_tokens, r.temperature, r.seed), []).append(i)
        size = self.config.batch_size
        for indices in groups.values():
            for start in range(0, len(indices), size):
                chunk = indices[start : start + size]
                for i, reply in zip(chunk, self._generate([requests[i] for i in chunk])):
                    replies[i] = reply
        return [replies[i] for i in range(len(requests))]

    def _generate(self, chunk: list[DraftRequest]) -> list[DraftReply]:
        import torch

        from app.worker.backends import open_image

        local, first = self.local, chunk[0]
        conversations = []
        for r in chunk:
            text = r.user + (json_instruction(r.schema) if r.schema is not None else "")
            content = [{"type": "image", "image": open_image(image.data)} for image in r.images] + [{"type": "text", "text": text}]
            system = [{"role": "system", "content": [{"type": "text", "text": r.system}]}] if r.system else []
            conversations.append(system + [{"role": "user", "content": content}])
        padding = {"processor_kwargs": {"padding": True}} if local.processor_kwargs else {"padding": True}
        start = time.perf_counter()
        inputs = local.processor.apply_chat_template(
            conversations, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt", **padding
        )
        inputs = inputs.to(local.device, dtype=local.model.dtype)  # floating tensors (pixels) take the model's dtype
        options: dict[str, Any] = {"max_new_tokens": first.max_tokens or DEFAULT_MAX_TOKENS}
        if first.temperature:
            options.update(do_sample=True, temperature=first.temperature)
        else:
            options["do_sample"] = False
        if first.seed is not None:
            torch.manual_seed(first.seed)
        with torch.inference_mode():
            output = local.model.generate(**inputs, **options)
        latency = round((time.perf_counter() - start) * 1000)  # the batch's time: its requests ran together
        prompt_len = inputs["input_ids"].shape[1]
        tokenizer = getattr(local.processor, "tokenizer", local.processor)
        stops = _stop_ids(local.model, tokenizer)
        replies = []
        for row, mask in zip(output[:, prompt_len:].tolist(), inputs["attention_mask"].tolist()):
            stop = next((n for n, t in enumerate(row) if t in stops), None)
            used = len(row) if stop is None else stop + 1
            replies.append(DraftReply(
                text=tokenizer.decode(row[:used], skip_special_tokens=True), model=local.name, latency_ms=latency,
                prompt_tokens=int(sum(mask)), completion_tokens=used, finish_reason="length" if stop is None else "stop",
            ))
        return replies


def _stop_ids(model, tokenizer) -> set[int]:
    eos = getattr(model.generation_config, "eos_token_id", None)
    ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return ids
