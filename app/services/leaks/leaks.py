"""The leakage and duplicates report of a split version, and "keep groups together".

Finds, among the items a split version places: exact image duplicates (same sha256: an image is
stored once), near-duplicate images (perceptual hashes within the first stage's
`duplicate_image_distance` bits), and duplicate texts (the same normalised text, or MinHash LSH
near matches); and, in the worker job where the models are there, near-duplicate texts by MiniLM
cosine and near-duplicate images by CLIP cosine (`Embedders`; the report's `matchers` says which
ran). Linked items form groups (union-find); a group spanning two splits is a leak. Nothing is
compared pair by pair: see `app.leakage`.

Perceptual hashes are kept in `image_hashes`: the worker's `hash_images` job, queued by each import
that stored images, computes those the project's images lack (`hash_missing`). `run`, which the
worker's `leaks` job calls, first does the same for any still missing (stored before hashes were
kept, or imported while no worker ran), a batch per transaction with its progress; `compute` itself
only reads hashes, so no web request ever decodes an image for the report. Embeddings are computed per report, in the worker.
"""

from __future__ import annotations

import itertools
import resource
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app import leakage
from app.datasets.workflow import StageConfig
from app.errors import Conflict, NotFound
from app.lifecycle import ItemStatus
from app.models import Asset, ImageHash, Item, ItemSplit, LeakReport, SplitDefinition, Stage
from app.services.exports import splits
from app.services.users.audit import record

TEXT_THRESHOLD = 0.8  # word 3-shingle Jaccard at which two texts are near duplicates
MIN_TEXT_WORDS = 3  # shorter strings (labels, ids, topics) are not captions
# A text carried by more items than this (at least COMMON_TEXT_MIN) is boilerplate, e.g. the question
# every item of a stage asks: it links nothing, and the report lists it apart.
COMMON_TEXT_SHARE, COMMON_TEXT_MIN = 0.05, 10
HASH_BATCH = 500
EMBED_BATCH = 256

# What a long report says it is doing: (step, done, total), e.g. ("hashing images", 500, 10_000).
Progress = Callable[[str, int, int], None]


def _quiet(step: str, done: int, total: int) -> None:
    pass


_MISSING_HASHES = sa.text(
    """
    SELECT a.sha256, a.storage_key FROM assets a
     WHERE a.sha256 IN (SELECT e.value FROM items i, jsonb_each_text(i.assets) e WHERE i.project_id = :project)
       AND NOT EXISTS (SELECT 1 FROM image_hashes h WHERE h.sha256 = a.sha256)
     ORDER BY a.sha256
    """
)


def missing_hashes(session: Session, project_id: int) -> list[tuple[str, str]]:
    """(sha256, storage key) of the project's stored images that have no perceptual hash yet."""
    return [(sha, key) for sha, key in session.execute(_MISSING_HASHES, {"project": project_id})]


def hash_images(session: Session, storage, images: list[tuple[str, str]]) -> int:
    """Compute and keep the perceptual hashes of stored images (sha256, storage key); returns how
    many were kept (an unreadable image has none: its exact matches still count)."""
    rows = []
    for sha, key in images:
        try:
            rows.append({"sha256": sha, "phash": leakage.phash(storage.get(key))})
        except Exception:
            continue
    if rows:
        session.execute(pg_insert(ImageHash).values(rows).on_conflict_do_nothing())
    return len(rows)


def hash_missing(sessions, storage, project_id: int, progress: Progress | None = None) -> int:
    """Hash the project's stored images that have no perceptual hash yet, a batch per transaction
    (work done survives a stopped job), as the worker's `hash_images` job does after an import and
    the leaks job before its report; returns how many images lacked one."""
    progress = progress or _quiet
    with sessions.begin() as s:
        missing = missing_hashes(s, project_id)
    progress("hashing images", 0, len(missing))
    for start in range(0, len(missing), HASH_BATCH):
        with sessions.begin() as s:
            hash_images(s, storage, missing[start:start + HASH_BATCH])
        progress("hashing images", min(start + HASH_BATCH, len(missing)), len(missing))
    return len(missing)


def run(sessions, storage, project_id: int, version: int | None = None, *, embedders: Embedders | None = None,
        progress: Progress | None = None) -> tuple[int, dict[str, Any]]:
    """Make and store the report of a split version (the newest when None), as the worker's job
    does: hash the project's images that have no hash yet, a batch per transaction (work done
    survives a stopped job), then compute and store the report in one transaction. Returns (its id,
    the report)."""
    progress = progress or _quiet
    started = time.perf_counter()
    with sessions.begin() as s:
        splits.get_definition(s, project_id, version)  # no split version: refused before any work
    hashed = hash_missing(sessions, storage, project_id, progress)
    hashing = time.perf_counter() - started
    with sessions.begin() as s:
        report = compute(s, storage, project_id, version, embedders=embedders, progress=progress)
        report["hashed_now"] = hashed
        report["seconds"] = {"hash new images": round(hashing, 3), **report["seconds"], "total": round(time.perf_counter() - started, 3)}
        return store(s, project_id, report).id, report


def item_texts(data: dict[str, Any]) -> list[str]:
    """The item's caption-like texts: top-level strings of a few words or more, not URLs or paths."""
    out = []
    for key, value in data.items():
        if key in ("id", "group_id") or not isinstance(value, str) or "image" in key:
            continue
        if len(value.split()) >= MIN_TEXT_WORDS and not value.startswith(("http://", "https://", "/")):
            out.append(value)
    return out


@dataclass
class Embedders:
    """The optional embedding matchers, which only the worker job loads (never the web process):
    `texts` maps texts to unit vectors (MiniLM), `images` maps image bytes to unit vectors (CLIP).
    Where one is None, its `*_missing` says why, and the report says so."""

    texts: Callable[[list[str]], np.ndarray] | None = None
    images: Callable[[list[bytes]], np.ndarray] | None = None
    texts_missing: str = "MiniLM: run by the worker job (Find leaks)"
    images_missing: str = "CLIP: run by the worker job (Find leaks)"


def _config(stage: Stage | None, key: str) -> float:
    """A leak setting of the project's first stage (`duplicate_*`), or its default in StageConfig."""
    return float(((stage.config if stage else None) or {}).get(key, StageConfig.model_fields[key].default))


@dataclass
class _Matches:
    """Items linked by each matcher into groups, with the kinds of match of each linked pair and each matcher's time."""

    groups: leakage.UnionFind = field(default_factory=leakage.UnionFind)
    why: dict[tuple[int, int], set[str]] = field(default_factory=lambda: defaultdict(set))
    timing: dict[str, float] = field(default_factory=dict)

    def link(self, a: int, b: int, kind: str) -> None:
        if a != b:
            self.groups.union(a, b)
            self.why[(min(a, b), max(a, b))].add(kind)


@dataclass
class _Items:
    """The split version's items as the matchers read them."""

    count: int
    split_of: dict[int, str]
    info: dict[int, dict[str, Any]]  # what the report shows of each item
    by_sha: dict[str, list[int]]
    texts: list[tuple[int, str]]


def compute(session: Session, storage, project_id: int, version: int | None = None, *,
            embedders: Embedders | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """The report of a split version (the newest when None): leaked groups per split pair, and
    duplicate groups within one split, each with its items (split, image, text) and why they match.
    With `embedders` (the worker job), MiniLM and CLIP embeddings find near duplicates too. Images
    are compared by the perceptual hashes kept (`run` hashes those that have none first)."""
    started = time.perf_counter()
    embedders = embedders or Embedders()
    progress = progress or _quiet
    progress("reading items", 0, 1)
    definition = splits.get_definition(session, project_id, version)
    first = session.scalar(sa.select(Stage).where(Stage.project_id == project_id).order_by(Stage.position).limit(1))
    distance = int(_config(first, "duplicate_image_distance"))
    items = _read_items(session, definition.id)
    matches = _Matches()
    image_matchers = _match_images(session, storage, items, matches, first, distance, embedders, progress)
    text_matchers, common = _match_texts(items, matches, first, embedders, progress)
    progress("grouping", 0, 1)
    out_groups, leaked = _grouped(items, matches)
    return {
        "version": definition.version,
        "definition_id": definition.id,
        "counts": definition.ordered_counts,
        "items": items.count,
        "images": len(items.by_sha),
        "texts": len(items.texts),
        "image_distance": distance,
        "text_threshold": TEXT_THRESHOLD,
        "leaked_groups": sum(g["leak"] for g in out_groups),
        "leaks": dict(leaked),
        "within_split_groups": sum(not g["leak"] for g in out_groups),
        "common_texts": dict(sorted(common.items(), key=lambda kv: -kv[1])[:20]),
        "groups": out_groups,
        "hashed_now": 0,
        "seconds": {**{k: round(v, 3) for k, v in matches.timing.items()}, "total": round(time.perf_counter() - started, 3)},
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "matchers": {"images": image_matchers, "texts": text_matchers},
    }


def _read_items(session: Session, definition_id: int) -> _Items:
    rows = session.execute(
        sa.select(Item.id, Item.external_id, Item.data, Item.assets, ItemSplit.split)
        .join(ItemSplit, ItemSplit.item_id == Item.id)
        .where(ItemSplit.definition_id == definition_id, Item.status != ItemStatus.gold)  # gold items are never exported
        .order_by(Item.id)
    ).all()
    items = _Items(len(rows), {r.id: r.split for r in rows}, {}, defaultdict(list), [])
    for r in rows:
        items.info[r.id] = {"id": r.id, "external_id": r.external_id, "split": r.split}
        for sha in dict.fromkeys((r.assets or {}).values()):
            items.by_sha[sha].append(r.id)
        items.info[r.id]["image"] = next(iter((r.assets or {}).values()), None)
        found = item_texts(r.data or {})
        items.info[r.id]["text"] = found[0] if found else None
        items.texts += [(r.id, t) for t in found]
    return items


def _match_images(session: Session, storage, items: _Items, matches: _Matches, first: Stage | None, distance: int,
                  embedders: Embedders, progress: Progress) -> str:
    """Link items by the same image, a near perceptual hash and (with CLIP) near embeddings; says which matchers ran."""
    by_sha = items.by_sha
    progress("matching images", 0, 1)
    for ids in by_sha.values():
        for a, b in zip(ids, ids[1:]):
            matches.link(a, b, "same image")
    t = time.perf_counter()
    hashes = dict(session.execute(sa.select(ImageHash.sha256, ImageHash.phash).where(ImageHash.sha256.in_(list(by_sha)))).all()) if by_sha else {}
    shas = list(hashes)
    for x, y in leakage.near_hash_pairs(shas, [hashes[s] for s in shas], distance):
        matches.link(by_sha[x][0], by_sha[y][0], "near image")
    matches.timing["near images"] = time.perf_counter() - t
    image_matchers = f"same bytes + pHash within {distance} bits"
    if embedders.images is None or not by_sha:
        return image_matchers + f"; {embedders.images_missing}"
    t = time.perf_counter()
    cosine = _config(first, "duplicate_image_cosine")
    found, vectors = image_embeddings(session, storage, list(by_sha), embedders.images, progress)
    for x, y in leakage.near_vector_pairs(found, vectors, cosine):
        matches.link(by_sha[x][0], by_sha[y][0], "near image (CLIP)")
    matches.timing["CLIP images"] = time.perf_counter() - t
    return image_matchers + f" + CLIP cosine >= {cosine:g}"


def _match_texts(items: _Items, matches: _Matches, first: Stage | None, embedders: Embedders,
                 progress: Progress) -> tuple[str, dict[str, int]]:
    """Link items by the same or a near text and (with MiniLM) near embeddings, leaving out texts too
    common to tell items apart; says which matchers ran, and returns the common texts with their counts."""
    progress("matching texts", 0, 1)
    t = time.perf_counter()
    by_text: dict[str, list[int]] = defaultdict(list)
    for item_id, text in items.texts:
        by_text[leakage.normalise_text(text)].append(item_id)
    limit = max(COMMON_TEXT_MIN, COMMON_TEXT_SHARE * items.count)
    common = {t: len(ids) for t, ids in by_text.items() if len(ids) > limit}
    for text in common:
        del by_text[text]
    for ids in by_text.values():
        for a, b in zip(ids, ids[1:]):
            matches.link(a, b, "same text")
    keys = list(by_text)
    for x, y in leakage.near_text_pairs(keys, keys, TEXT_THRESHOLD):
        matches.link(by_text[x][0], by_text[y][0], "near text")
    matches.timing["texts"] = time.perf_counter() - t
    text_matchers = f"exact after normalising + MinHash Jaccard >= {TEXT_THRESHOLD:g}"
    if embedders.texts is None or not keys:
        return text_matchers + f"; {embedders.texts_missing}", common
    t = time.perf_counter()
    cosine = _config(first, "duplicate_text_cosine")
    parts = []
    for i in range(0, len(keys), EMBED_BATCH):
        progress("embedding texts (MiniLM)", i, len(keys))
        parts.append(embedders.texts(keys[i:i + EMBED_BATCH]))
    for x, y in leakage.near_vector_pairs(keys, np.concatenate(parts), cosine):
        matches.link(by_text[x][0], by_text[y][0], "near text (MiniLM)")
    matches.timing["MiniLM texts"] = time.perf_counter() - t
    return text_matchers + f" + MiniLM cosine >= {cosine:g}", common


def _grouped(items: _Items, matches: _Matches) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The groups of linked items, leaks (across splits) first, and the number of leaked groups per split pair."""
    leaked: dict[str, int] = defaultdict(int)
    out_groups = []
    for members in matches.groups.groups():
        names = sorted({items.split_of[m] for m in members})
        kinds = sorted({k for a, b in itertools.combinations(members, 2) for k in matches.why.get((a, b), ())})
        for pair in itertools.combinations(names, 2):
            leaked[" / ".join(pair)] += 1
        out_groups.append({"leak": len(names) > 1, "splits": names, "kinds": kinds, "items": [items.info[m] for m in members]})
    out_groups.sort(key=lambda g: (not g["leak"], g["items"][0]["id"]))
    return out_groups, leaked


def image_embeddings(session: Session, storage, shas: list[str], embed: Callable[[list[bytes]], np.ndarray],
                     progress: Progress | None = None) -> tuple[list[str], np.ndarray]:
    """The embeddings of the stored images, a batch at a time (an unreadable image is left out)."""
    progress = progress or _quiet
    found: list[str] = []
    parts: list[np.ndarray] = []
    for start in range(0, len(shas), EMBED_BATCH):
        progress("embedding images (CLIP)", start, len(shas))
        batch = shas[start:start + EMBED_BATCH]
        keys = dict(session.execute(sa.select(Asset.sha256, Asset.storage_key).where(Asset.sha256.in_(batch))).all())
        datas = []
        for sha in batch:
            try:
                datas.append((sha, storage.get(keys[sha])))
            except Exception:  # missing from storage: its exact and perceptual matches still count
                continue
        if datas:
            parts.append(np.asarray(embed([d for _, d in datas]), dtype=np.float32))
            found += [sha for sha, _ in datas]
    return found, (np.concatenate(parts) if parts else np.zeros((0, 1), np.float32))


def store(session: Session, project_id: int, report: dict[str, Any]) -> LeakReport:
    row = LeakReport(project_id=project_id, definition_id=report["definition_id"], report=report)
    session.add(row)
    session.flush()
    return row


def latest(session: Session, definition_id: int) -> LeakReport | None:
    return session.scalar(sa.select(LeakReport).where(LeakReport.definition_id == definition_id).order_by(LeakReport.id.desc()).limit(1))


def stored(session: Session, project_id: int, version: int | None = None) -> dict[str, Any]:
    """The newest stored report of a split version (the newest when None); NotFound when none was made."""
    definition = splits.get_definition(session, project_id, version)
    row = latest(session, definition.id)
    if row is None:
        raise NotFound(f"No leak report of split version {definition.version} yet: ask for one "
                       f"(POST /api/v1/projects/{project_id}/leaks, or Find leaks on the export page).")
    return row.report


def keep_together(session: Session, project_id: int, report: dict[str, Any], *, actor_id: int | None = None) -> SplitDefinition:
    """Put each leaked group into one split: its items (and every item already grouped with one of
    them) share a group id, and the same split configuration is saved as a new version. Duplicate
    groups that sit within one split are grouped too: the new version places units afresh (with
    counts, single items fill around the groups), so an ungrouped pair could straddle it."""
    definition = session.get(SplitDefinition, report["definition_id"])
    if definition is None or definition.project_id != project_id:
        raise NotFound("That split version is not this project's.")
    merged = 0
    for group in report["groups"]:
        ids = [m["id"] for m in group["items"]]
        existing = [g for g in session.scalars(sa.select(Item.group_id).where(Item.id.in_(ids), Item.group_id.is_not(None)).distinct())]
        name = f"dup:{min(m['external_id'] for m in group['items'])}"
        where = Item.id.in_(ids) if not existing else sa.or_(Item.id.in_(ids), sa.and_(Item.project_id == project_id, Item.group_id.in_(existing)))
        session.execute(sa.update(Item).where(where).values(group_id=name))
        merged += 1
    new = splits.save_definition(session, project_id, dict(definition.config), actor_id=actor_id)
    record(session, "leaks.grouped", actor_id=actor_id, target=f"project:{project_id}", groups=merged, version=new.version)
    return new


def page_view(session: Session, project_id: int, shown: int = 50) -> dict[str, Any] | None:
    """The newest split version's newest report, for the export page (its first `shown` leaked groups)."""
    newest = session.scalar(sa.select(SplitDefinition).where(SplitDefinition.project_id == project_id).order_by(SplitDefinition.version.desc()).limit(1))
    if newest is None:
        return None
    row = latest(session, newest.id)
    if row is None:
        return {"version": newest.version, "report": None}
    leaked = [g for g in row.report["groups"] if g["leak"]]
    return {"version": newest.version, "report": row.report, "at": row.created_at, "groups": leaked[:shown], "more": max(0, len(leaked) - shown)}


def keep_newest_together(session: Session, project_id: int, *, actor_id: int | None) -> SplitDefinition:
    """"Keep groups together" on the newest split version's newest report."""
    view = page_view(session, project_id)
    if not view or not view["report"]:
        raise Conflict("Find the leaks of the newest split version first.")
    if not view["report"]["leaked_groups"]:
        raise Conflict("The newest split version has no leaked groups.")
    return keep_together(session, project_id, view["report"], actor_id=actor_id)
