"""The workflow plugin shape: what every dataset workflow declares and implements.

A workflow owns its item schema (validates imports), its annotation schema and semantic
checks, its screen template, how two annotations compare (agreement), how k annotations
become one final record (consolidation), whether the next stage applies, and its export
mapping. The core calls these hooks and knows no workflow by name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from app.errors import Invalid


class ItemBase(BaseModel):
    """Fields every item schema has: the external id and an optional group id."""

    # Published datasets often number their records; ids are kept as text.
    model_config = ConfigDict(extra="allow", str_strip_whitespace=True, coerce_numbers_to_str=True)

    id: str
    group_id: str | None = None


@dataclass(frozen=True)
class Consolidation:
    """The outcome of k annotations: a final payload, or a call for review."""

    final: dict[str, Any] | None
    discard: bool = False
    needs_review: bool = False


def format_validation_error(exc: ValidationError, prefix: str = "") -> list[str]:
    messages = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "record"
        messages.append(f"{prefix}field '{loc}': {err['msg']}")
    return messages


class Workflow:
    name: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str] = ""
    item_schema: ClassVar[type[ItemBase]] = ItemBase
    annotation_schema: ClassVar[type[BaseModel]]
    template: ClassVar[str]
    suggestion_kinds: ClassVar[tuple[str, ...]] = ()
    # JSON pointers into item data whose values are image references.
    image_fields: ClassVar[tuple[str, ...]] = ()
    # A workflow that builds on another one's result names it; it cannot be a project's first stage.
    requires: ClassVar[str | None] = None
    # Stages the project form adds after this one (ColorSwap: filter, then recaption).
    follow_on: ClassVar[tuple[str, ...]] = ()
    # Item fields the project page counts kept and discarded items by (at most two).
    breakdown: ClassVar[tuple[str, ...]] = ()
    keys_help: ClassVar[str] = "digits choose · Enter submits · S skips"
    # Project figures: the payload key whose final answers are counted, in this order, per
    # value of each `figure_by` item field; and (title, category key, value key) means over
    # a dict the final payload holds under "edits".
    figure_answer: ClassVar[str | None] = None
    figure_answers: ClassVar[tuple[str, ...]] = ()
    figure_by: ClassVar[tuple[str, ...]] = ()
    figure_means: ClassVar[tuple[tuple[str, str, str], ...]] = ()

    # -- items -------------------------------------------------------------
    def parse_item(self, record: Mapping[str, Any], config: Mapping[str, Any]) -> ItemBase:
        """Validate one imported record; raise ValidationError or Invalid."""
        return self.item_schema.model_validate(record, context={"config": config})

    def image_refs(self, item: ItemBase) -> dict[str, str]:
        """Map JSON pointer -> image reference (path, zip member or s3:// key) for this item."""
        data = item.model_dump(mode="json")
        refs = {}
        for pointer in self.image_fields:
            value = data.get(pointer.lstrip("/"))
            if value:
                refs[pointer] = value
        return refs

    # -- annotations ---------------------------------------------------------
    def validate_annotation(
        self,
        item: Mapping[str, Any],
        payload: Mapping[str, Any],
        config: Mapping[str, Any],
        results: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Check shape and meaning of a payload against its item (and the finals of earlier
        stages, by workflow name); return the normalized payload."""
        try:
            parsed = self.annotation_schema.model_validate(payload)
        except ValidationError as exc:
            raise Invalid("The annotation is not valid.", format_validation_error(exc)) from None
        problems = self.check(item, parsed, config, results or {})
        if problems:
            raise Invalid("The annotation is not valid.", problems)
        return parsed.model_dump(mode="json")

    def check(
        self, item: Mapping[str, Any], payload: BaseModel, config: Mapping[str, Any], results: Mapping[str, Any]
    ) -> list[str]:
        """Semantic checks beyond the schema; return messages in the annotator's terms."""
        return []

    def form_to_payload(self, form: Mapping[str, Any]) -> dict[str, Any]:
        """Turn a plain HTML form post (no JavaScript) into a payload."""
        return {k: v for k, v in form.items() if k in self.annotation_schema.model_fields}

    def payload_values(
        self, payload: Mapping[str, Any], item: Mapping[str, Any], config: Mapping[str, Any], results: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The form values that show `payload` on this workflow's screen, so that
        `form_to_payload(payload_values(p))` gives `p` back. A reviewer's editor and an item
        sent back to its annotator start from them."""
        return {k: v for k, v in payload.items() if k in self.annotation_schema.model_fields}

    def is_discard(self, payload: Mapping[str, Any]) -> bool:
        return bool(payload.get("discard"))

    # -- agreement and consolidation ------------------------------------------
    def compare(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
        """Agreement of two annotations in [0, 1]."""
        return 1.0 if dict(a) == dict(b) else 0.0

    # A free-text answer field whose agreement people judge (app.services.equivalence), or None.
    equivalence_field: str | None = None

    def agreement_facets(self) -> dict[str, str]:
        """What agreement is measured on: facet name -> "nominal" (a label), "set" (texts),
        "token_set" (token spans) or "boxes". Default: the whole payload as one label."""
        return {"answer": "nominal"}

    def facet_values(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Each facet's value in one annotation (None: this annotation says nothing on it)."""
        return {"answer": repr(_freeze(dict(payload)))}

    def consolidate(self, payloads: list[dict[str, Any]], config: Mapping[str, Any]) -> Consolidation:
        """Default: a strict majority of identical payloads wins; otherwise review."""
        if not payloads:
            return Consolidation(final=None, needs_review=True)
        if len(payloads) == 1:
            return Consolidation(final=payloads[0], discard=self.is_discard(payloads[0]))
        keyed = Counter(_freeze(p) for p in payloads)
        best, count = keyed.most_common(1)[0]
        if count * 2 > len(payloads):
            winner = next(p for p in payloads if _freeze(p) == best)
            return Consolidation(final=winner, discard=self.is_discard(winner))
        return Consolidation(final=None, needs_review=True)

    # -- pipeline and export -------------------------------------------------
    def applies(self, item: Mapping[str, Any], results: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
        """Whether an item entering this stage needs it; `results` maps earlier stages' workflow
        names to their final records."""
        return True

    def export_record(self, item: Mapping[str, Any], results: Mapping[str, Any]) -> dict[str, Any]:
        """The item's record in the dataset's published format."""
        return {**item, **{k: v for r in results.values() for k, v in r.items()}}

    # How the published layout writes records: "jsonl" ({split}.jsonl), "json" (an array in
    # {split}.json) or "annotation.json" (an object keyed by id in {split}/annotation.json).
    published_layout: ClassVar[str] = "jsonl"
    # The published log file (written for every finished item by export_log), or None.
    export_log_name: ClassVar[str | None] = None

    @property
    def export_image_columns(self) -> tuple[str, ...]:
        """Columns of the Parquet export that hold images (Hugging Face `Image` features)."""
        return tuple(p.strip("/").replace("/", "_") for p in self.image_fields)

    def export_images(self, item: Mapping[str, Any], assets: Mapping[str, str], results: Mapping[str, Any]) -> dict[str, str | None]:
        """Image column -> sha256 of the stored image (None where there is none, e.g. a URL only)."""
        return {p.strip("/").replace("/", "_"): assets.get(p) for p in self.image_fields}

    def export_log(self, item: Mapping[str, Any], results: Mapping[str, Any]) -> dict[str, Any] | None:
        """A line of the published format's log (WikiDO's verification log), or None where it has none.
        Written for every finished item, discarded ones included."""
        return None

    def export_files(
        self, item: Mapping[str, Any], assets: Mapping[str, str], results: Mapping[str, Any]
    ) -> dict[str, str]:
        """Files the published format ships with the record: relative path -> asset sha256."""
        return {}

    # -- screen --------------------------------------------------------------
    def screen_context(
        self,
        item: Mapping[str, Any],
        config: Mapping[str, Any],
        *,
        assets: Mapping[str, str],
        results: Mapping[str, Any],
        suggestions: Mapping[str, Any],
        values: Mapping[str, Any],
    ) -> dict[str, Any]:
        """Extra template context for the annotation screen. `suggestions` maps a suggestion
        kind to its newest row (model, model_version, payload, score); `values` are the form
        values shown (a draft, the initial values, or what was posted)."""
        return {}

    def initial_values(
        self,
        item: Mapping[str, Any],
        config: Mapping[str, Any],
        *,
        results: Mapping[str, Any],
        suggestions: Mapping[str, Any],
    ) -> dict[str, Any]:
        """Form values a fresh screen starts from (form field -> value) when there is no draft."""
        return {}

    def suggestion_outcome(self, kind: str, suggestion: Mapping[str, Any], payload: Mapping[str, Any], item: Mapping[str, Any]) -> str | None:
        """What the submitted payload did with a suggestion's payload: "accepted", "edited",
        "rejected", or None when the suggestion proposed nothing this payload speaks to."""
        return None

    def live_check(
        self, item: Mapping[str, Any], values: Mapping[str, Any], config: Mapping[str, Any], results: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """Context for the template's `live_check` block, recomputed as the annotator types;
        None when the workflow has no live check."""
        return None


def image_urls(ref: Any, sha: str | None) -> dict[str, str] | None:
    """Where a screen loads an image: the stored copy (thumbnail and full size), or the
    external http(s) URL an item names, which imports keep as a reference and never fetch."""
    if sha:
        return {"thumb": f"/assets/{sha}/thumb", "full": f"/assets/{sha}"}
    if isinstance(ref, str) and ref.startswith(("http://", "https://")):
        return {"thumb": ref, "full": ref}
    return None


def is_external(ref: str) -> bool:
    return ref.startswith(("http://", "https://"))


def consolidate_fields(
    payloads: list[dict[str, Any]], fields: tuple[str, ...], key=lambda value: value
) -> dict[str, Any] | None:
    """Field by field, the value most annotators gave; None when any field's top count is tied.
    `key` maps a value to what counts as the same answer (normalised text, for example)."""
    final: dict[str, Any] = {}
    for name in fields:
        values = [p.get(name) for p in payloads]
        counts = Counter(_freeze(key(v)) for v in values)
        ranked = counts.most_common(2)
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            return None
        final[name] = next(v for v in values if _freeze(key(v)) == ranked[0][0])
    return final


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value
