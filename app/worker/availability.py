"""What this worker can run: which suggestion kinds (a cheap check, no model load) and why the others
cannot, the drafters it can call, and the embedding matchers of the leak report."""

from __future__ import annotations

import importlib.util

from app.datasets import producers
from app.errors import DomainError
from app.settings import Settings
from app.worker import backends
from app.worker.backends import ModelUnavailable


NO_EXTRA = "the worker extra is not installed"
NO_CLIP = "VLCURATE_CLIP_MODEL_DIR is not set"
# What to do about each reason, said once beside it.
_REMEDY = {NO_EXTRA: backends.WORKER_EXTRA, NO_CLIP: "a local CLIP model directory; nothing is downloaded"}


def blockers(kind: str, settings: Settings) -> dict[str, list[str]]:
    """What keeps a kind from running in this installation (a cheap check, no model load): each reason,
    worded the same for every kind it holds back, with the modules it misses; empty when the kind can run."""
    producer = producers().get(kind)
    if producer is None:
        return {f"unknown kind {kind}": []}
    found: dict[str, list[str]] = {}
    missing = [m for m in producer.modules if importlib.util.find_spec(m) is None]
    if missing:
        found[NO_EXTRA] = missing
    if producer.needs_clip and not settings.clip_model_dir:
        found[NO_CLIP] = []
    return found


def _said(reason: str, missing: list[str]) -> str:
    """A reason with its remedy and the modules missing: "the worker extra is not installed (pip install ...; missing torch)"."""
    notes = [n for n in (_REMEDY.get(reason), f"missing {', '.join(missing)}" if missing else None) if n]
    return f"{reason} ({'; '.join(notes)})" if notes else reason


def unavailable(kind: str, settings: Settings) -> str | None:
    """Why a kind cannot run in this installation, in one line, or None when it can."""
    return "; ".join(_said(why, missing) for why, missing in blockers(kind, settings).items()) or None


def availability(settings: Settings) -> list[str]:
    """The worker's start-up lines on suggestions: how many kinds can run here, then one line per reason
    that holds kinds back, naming them and the modules missing (not one line per kind)."""
    kinds = sorted(producers())
    held: dict[str, tuple[list[str], list[str]]] = {}  # reason -> (kinds, modules missing)
    for kind in kinds:
        for why, missing in blockers(kind, settings).items():
            names, modules = held.setdefault(why, ([], []))
            names.append(kind)
            modules.extend(m for m in missing if m not in modules)
    if not held:
        return [f"Suggestions: all {len(kinds)} kinds can run here."]
    ready = [k for k in kinds if not any(k in names for names, _ in held.values())]
    lines = [f"Suggestions: {len(ready)} of {len(kinds)} kinds can run here{' (' + ', '.join(ready) + ')' if ready else ''}; "
             "exports, agreement and leak reports need no model and run all the same."]
    lines += [f"  - {_said(why, modules)}: {', '.join(names)}" for why, (names, modules) in held.items()]
    return lines


def drafter_lines(settings: Settings) -> list[str]:
    """What the worker says at start-up about the drafters it can call: name, backend, URL or model
    directory, model (never a key)."""
    from app.drafting.config import drafters

    try:
        found = drafters(settings)
    except DomainError as exc:
        return [f"  drafters: unavailable — {exc.message}"]
    if not found:
        return ["  drafters: none (set VLCURATE_DRAFTERS_FILE to a TOML file of [drafters.<name>] tables)"]
    return [f"  drafter {name}: {config.describe()}" for name, config in sorted(found.items())]


def leak_embedders(settings: Settings):
    """The embedding matchers this worker can run for the leak report: MiniLM over texts where the
    worker extra is installed, CLIP over images where a model directory is configured; for each
    one that can't, the reason the report shows."""
    from app.services.leaks.leaks import Embedders

    out = Embedders()
    try:
        out.texts = backends.text_similarity().embed
    except ModelUnavailable:
        out.texts_missing = "MiniLM not installed (the worker extra)"
    if not settings.clip_model_dir:
        out.images_missing = "CLIP: no model directory configured (VLCURATE_CLIP_MODEL_DIR)"
    else:
        try:
            out.images = backends.image_text_for(settings).image_embeddings
        except ModelUnavailable as exc:
            out.images_missing = f"CLIP unavailable: {exc}"
    return out
