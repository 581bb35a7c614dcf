"""The draft job's body: render a prompt version for a batch of items, call its drafter, validate
every answer, and store valid drafts as suggestions and invalid ones as draft failures.

One batch, three steps, the database at both ends only:
1. read the prompt, its draft kind and the batch's items that still lack a valid draft of it
   (with the images the kind sends), and render each request (`template.format_map(fields)`);
2. call the drafter once for the whole batch (the HTTP backend sends them concurrently);
3. check each answer: JSON text (`app.jsontext`, strict; one enclosing Markdown code fence is taken
   off, as chat models often add one), valid against the kind's schema, accepted by the kind's
   `to_payload`. A valid one becomes a suggestion naming the prompt version, model, latency and
   tokens; an invalid one a DraftFailure with the reason and the raw text (replacing an earlier
   failure of the same prompt and item), never shown.
Everything of a batch is written in one transaction at the end; a drafter that fails (down, 500
after its retries, a refusal) fails the job with its message and nothing of the batch is stored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jsonschema
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app import jsontext
from app.datasets import draft_kinds, get_workflow
from app.datasets.draft import DraftInvalid, DraftKind
from app.datasets.suggest import ItemInput
from app.db import transaction
from app.drafting.backends import DraftImage, DraftReply, DraftRequest, DrafterError, build
from app.drafting.config import OpenAIDrafter, drafters
from app.errors import DomainError
from app.models import Asset, DraftFailure, Item, Prompt, Suggestion
from app.services.annotation import suggestions
from app.services.annotation.pipeline import results_by_stage_many
from app.services.drafting.prompts import stage_items
from app.worker.runtime import JobFailed, env

MAX_RAW_CHARS = 20_000  # of a failed answer's text kept (a runaway generation stays a readable row)
_FENCE = re.compile(r"\A```[A-Za-z0-9_-]*[ \t]*\n(.*)\n[ \t]*```\Z", re.S)


@dataclass(frozen=True)
class Outcome:
    drafted: int  # valid drafts stored
    invalid: int  # answers stored as draft failures
    skipped: int  # items that already had a valid draft of the prompt, or are no longer the stage's


@dataclass(frozen=True)
class Checked:
    payload: dict[str, Any] | None
    reason: str | None


def draft_batch(prompt_id: int, item_ids: list[int]) -> int:
    """Draft the items with the prompt version; returns how many valid drafts were stored."""
    return draft(prompt_id, item_ids).drafted


def draft(prompt_id: int, item_ids: list[int]) -> Outcome:
    e = env()
    with transaction(e.sessions) as s:
        prompt = s.get(Prompt, prompt_id)
        if prompt is None:
            raise JobFailed(f"Prompt {prompt_id} no longer exists.")
        kind = draft_kinds().get(prompt.draft_kind)
        if kind is None:
            raise JobFailed(f"Prompt {prompt_id} drafts '{prompt.draft_kind}', which no installed dataset declares.")
        try:
            configured = drafters(e.settings)
        except DomainError as exc:
            raise JobFailed(exc.message) from None
        config = configured.get(prompt.drafter)
        if config is None:
            known = ", ".join(sorted(configured)) or "none: set VLCURATE_DRAFTERS_FILE"
            raise JobFailed(f"Prompt {prompt_id} names drafter '{prompt.drafter}', which this worker does not configure (configured: {known}).")
        presigned = isinstance(config, OpenAIDrafter) and config.image_transport == "presigned"
        loaded = load_items(s, e.storage, prompt, kind, item_ids, presigned=presigned)
    # An item lacking an image the kind sends is not asked about: the model would draft blind.
    items = [(item, images) for item, images in loaded if len(images) == len(kind.images)]
    blind = [
        (item.id, NOT_ASKED, Checked(None, f"the item lacks a stored image the kind sends ({', '.join(kind.images)}; an "
                                           "image named by URL is not fetched): not sent to the model"))
        for item, images in loaded if len(images) != len(kind.images)
    ]
    replies = []
    if items:
        requests = [request_for(prompt, kind, item, images) for item, images in items]
        try:
            replies = build(prompt.drafter, config).complete(requests)
        except DrafterError as exc:
            raise JobFailed(str(exc)) from None
    checked = [check(kind, reply, item, e.settings) for (item, _), reply in zip(items, replies)]
    if loaded:
        with transaction(e.sessions) as s:
            store(s, prompt, kind, [(item.id, reply, c) for (item, _), reply, c in zip(items, replies, checked)] + blind)
    drafted = sum(c.payload is not None for c in checked)
    return Outcome(drafted, len(checked) - drafted + len(blind), len(item_ids) - len(loaded))


NOT_ASKED = DraftReply(text="", model="", latency_ms=None)


def load_items(
    session: Session, storage, prompt: Prompt, kind: DraftKind, item_ids: list[int], *, presigned: bool = False,
) -> list[tuple[ItemInput, tuple[DraftImage, ...]]]:
    """The batch's items that are the stage's and lack a valid draft of the prompt, in id order, with
    the images the kind sends (bytes, or presigned URLs)."""
    drafted = sa.exists().where(Suggestion.item_id == Item.id, Suggestion.prompt_id == prompt.id)
    rows = session.scalars(
        sa.select(Item).where(Item.id.in_(item_ids), Item.id.in_(stage_items(prompt.stage_id)), ~drafted).order_by(Item.id)
    ).all()
    shas = {item.assets.get(p) for item in rows for p in kind.images} - {None}
    assets = {a.sha256: a for a in session.scalars(sa.select(Asset).where(Asset.sha256.in_(shas)))} if shas else {}
    results = results_by_stage_many(session, [item.id for item in rows])
    out = []
    for item in rows:
        images, found = [], {}
        for pointer in kind.images:
            asset = assets.get(item.assets.get(pointer, ""))
            if asset is None:
                continue
            url = storage.url(asset.storage_key, asset.mime) if presigned else None
            if presigned and url is None and not getattr(storage, "presign_seconds", 0):
                raise JobFailed(
                    "image_transport = \"presigned\" needs S3 storage with VLCURATE_S3_PRESIGN_SECONDS set; "
                    "use \"data_url\" with this storage."
                )
            if url is not None:
                images.append(DraftImage(asset.mime, url=url))
            else:  # data_url, or a slice of a pack, which no URL names alone
                data = storage.get(asset.storage_key)
                images.append(DraftImage(asset.mime, data))
                found[pointer] = data
        out.append((ItemInput(item.id, item.data, found, results[item.id]), tuple(images)))
    return out


def request_for(prompt: Prompt, kind: DraftKind, item: ItemInput, images: tuple[DraftImage, ...]) -> DraftRequest:
    try:
        user = prompt.template.format_map(kind.fields(item))
    except KeyError as exc:
        raise JobFailed(f"Prompt {prompt.id} names {{{exc.args[0]}}}, which {kind.name} does not fill for item {item.id}.") from None
    settings = prompt.settings or {}
    return DraftRequest(
        user=user, system=prompt.system, images=images, schema=kind.schema, schema_name=kind.name,
        max_tokens=settings.get("max_tokens"), temperature=settings.get("temperature"), seed=settings.get("seed"),
    )


@lru_cache(maxsize=64)
def _validator(schema_text: str) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def check(kind: DraftKind, reply: DraftReply, item: ItemInput, settings) -> Checked:
    """A reply as a suggestion payload, or the reason it is not one."""
    cut = " (the answer was cut off at max_tokens)" if reply.finish_reason == "length" else ""
    text = reply.text.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if not text:
        return Checked(None, "empty answer" + cut)
    problem = jsontext.problem(text, max_bytes=settings.max_json_bytes, max_depth=settings.max_json_depth)
    if problem:
        return Checked(None, f"not storable JSON: {problem}")
    try:
        value = jsontext.loads(text)
    except json.JSONDecodeError as exc:
        return Checked(None, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}{cut}")
    except jsontext.NumberRefused as exc:
        return Checked(None, f"not valid JSON: {exc}")
    error = jsonschema.exceptions.best_match(_validator(json.dumps(kind.schema, sort_keys=True)).iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        return Checked(None, f"does not follow the schema: {error.message}" + (f" (at /{where})" if where else ""))
    try:
        payload = kind.to_payload(value, item)
    except DraftInvalid as exc:
        return Checked(None, f"refused by {kind.name}: {exc}")
    if problems := get_workflow(kind.workflows[0]).check_suggestion(kind.suggestion_kind, payload):
        return Checked(None, f"refused by {kind.name}: " + "; ".join(problems))
    try:
        json.dumps(payload, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return Checked(None, "not storable JSON: a lone surrogate escape (\\ud800-\\udfff) that is no character")
    return Checked(payload, None)


def store(session: Session, prompt: Prompt, kind: DraftKind, results: list[tuple[int, DraftReply, Checked]]) -> None:
    for item_id, reply, checked in results:
        cost = {"latency_ms": reply.latency_ms, "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens}
        if checked.payload is not None:
            suggestions.store(
                session, item_id, prompt.stage_id, kind.suggestion_kind, reply.model, checked.payload,
                model_version=f"{kind.name} v{prompt.version}", prompt_id=prompt.id, **cost,
            )
            continue
        values = {"reason": checked.reason or "", "raw": _storable(reply.text), "model": reply.model, **cost}
        session.execute(
            pg_insert(DraftFailure)
            .values(prompt_id=prompt.id, item_id=item_id, **values)
            .on_conflict_do_update(index_elements=["prompt_id", "item_id"], set_={**values, "created_at": sa.func.now()})
        )


def _storable(text: str) -> str:
    """A model's raw text as PostgreSQL's text type takes it: no NUL, bounded."""
    text = text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= MAX_RAW_CHARS else text[:MAX_RAW_CHARS] + f"… [{len(text) - MAX_RAW_CHARS:,} more characters]"
