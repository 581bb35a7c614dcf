"""The workflow plugin shape: what one step of a dataset's curation declares and does.

A workflow (`colorswap.filter`, `wikido.verify`, ...) is what a project stage runs. It owns its
annotation schema and semantic checks, how a plain form becomes a payload and back, its
screen (template, keys, context, live check), which suggestion kinds it reads and what an
annotator did with them, its agreement facets (the one way annotations are compared), how k
annotations become one final record, and whether an item entering the stage needs it. Facts
about the whole dataset (item schema, images, stage order, figures, published export) live on
`app.datasets.dataset.Dataset`. The core calls these hooks and knows no workflow by name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from app.errors import Invalid, format_validation_error


@dataclass(frozen=True, slots=True)
class ItemContext:
    """What a workflow's hooks read about one item in one stage, built once by the caller: the
    item's data, the stage's configuration, the earlier stages' finals by workflow name, the
    stored images by JSON pointer, the newest suggestion of each kind the screen reads (model,
    model_version, payload, score), and the stored images' (width, height) by pointer."""

    item: Mapping[str, Any]
    config: Mapping[str, Any] = field(default_factory=dict)
    results: Mapping[str, Any] = field(default_factory=dict)
    assets: Mapping[str, str] = field(default_factory=dict)
    suggestions: Mapping[str, Any] = field(default_factory=dict)
    sizes: Mapping[str, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Consolidation:
    """The outcome of k annotations: a final payload, or a call for review."""

    final: dict[str, Any] | None
    discard: bool = False
    needs_review: bool = False


@dataclass(frozen=True)
class Equivalence:
    """A free-text answer whose agreement people judge: the payload field, and the workflow whose
    stage (in a companion project) collects the judgements."""

    field: str
    judge: str


class StageConfig(BaseModel):
    """A stage's configuration: the keys every stage reads. A workflow's own schema subclasses it and adds
    its keys. Unknown keys are refused (a misspelt key would otherwise be ignored without a word), and
    types are strict (the stored JSON is what the workflow reads: "false" must not pass as a boolean)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    soft_match_threshold: float | None = Field(
        default=None, ge=0, le=1, description="cosine similarity at which two texts count as the same in agreement"
    )
    # Quality control with gold items (app.services.quality.gold).
    gold_share: float = Field(default=0.0, ge=0, le=0.5, description="share of claims that serve a gold item (e.g. 0.05)")
    gold_threshold: float = Field(
        default=0.7, ge=0, le=1, description="gold accuracy below which an annotator is flagged"
    )
    gold_min_items: int = Field(default=10, ge=1, description="gold answers an annotator needs before a flag")
    gold_route_to_review: bool = Field(
        default=False, description="send a flagged annotator's work in this stage to review instead of finalizing it"
    )
    gold_route_earlier: Literal["since_passing", "all", "none"] = Field(
        default="since_passing",
        description="with routing, which of their finished items go back to review when an annotator is flagged: those "
        "finished after their last passing window of gold answers, all, or none",
    )
    # Review (app.services.review.review): a reviewer who annotated an item would be judging their own answer.
    forbid_self_review: bool = Field(
        default=True, description="a reviewer may not decide an item they annotated in this stage (the review queue leaves it out for them)"
    )
    # The leakage report (app.services.leaks.leaks) reads the first stage's.
    duplicate_image_distance: int = Field(
        default=6, ge=0, le=16, description="perceptual-hash bits (of 64) within which two images count as near duplicates"
    )
    # Paraphrases of one caption score 0.85-0.98 with MiniLM; unrelated captions stay below 0.7.
    duplicate_text_cosine: float = Field(
        default=0.85, ge=0.5, le=1, description="MiniLM cosine at which two texts count as near duplicates (worker extra)"
    )
    duplicate_image_cosine: float = Field(
        default=0.95, ge=0.5, le=1, description="CLIP image-embedding cosine at which two images count as near duplicates (CLIP model configured)"
    )

    # Measuring what drafts do to people (app.bias, docs/draft-bias.md).
    draft_control_share: float = Field(
        default=0.0, ge=0, le=0.9,
        description="share of assignments whose screens show no suggestion (the control arm), drawn per assignment",
    )
    draft_control_seed: int = Field(
        default=0, ge=0, le=2**31 - 1, description="the seed of the arms' draw: the same seed gives each assignment the same arm"
    )
    probe_share: float = Field(
        default=0.0, ge=0, le=1,
        description="share of gold assignments outside the control arm whose screen shows a planted wrong draft (a probe)",
    )
    probe_threshold: float = Field(default=0.5, ge=0, le=1, description="probe catch rate below which `probe_action` acts on an annotator")
    probe_min_items: int = Field(default=5, ge=1, description="probes an annotator answers before `probe_action` acts")
    probe_action: Literal["none", "review", "pause"] = Field(
        default="none",
        description="for an annotator below the probe threshold: nothing, send their work in this stage to review, or give "
        "them gold items only, no ordinary lease (both through the gold flag)",
    )

    # The qualification gate and auto-pause (app.gate in the queue, app.services.quality.qualification).
    quiz_items: int = Field(default=0, ge=0, le=100, description="gold items in the qualification quiz an annotator passes "
                            "before their first real item in this stage (0: no quiz)")
    quiz_pass: float = Field(default=1, ge=0, le=100, description="score a quiz try needs (the sum of its answers' gold scores, "
                             "each 0 to 1): at most `quiz_items`")
    quiz_tries: int = Field(default=1, ge=1, le=20, description="quiz tries an annotator has before a manager resets them")
    pause_window: int = Field(default=0, ge=0, le=1000, description="gold answers of the rolling accuracy that pauses an "
                              "annotator (0: no auto-pause)")
    pause_threshold: float = Field(default=0.7, ge=0, le=1, description="rolling gold accuracy below which the annotator is "
                                   "paused: no lease until a manager lifts it, their unreviewed work to review")

    @field_validator("quiz_pass")
    @classmethod
    def _pass_within_quiz(cls, value: float, info: ValidationInfo) -> float:
        items = info.data.get("quiz_items", 0)
        if items and value > items:
            raise ValueError(f"a quiz of {items} items scores at most {items}")
        return value

    @classmethod
    def read(cls, config: dict[str, Any] | None, key: str) -> Any:
        """A stage's value of a key every stage reads: as its stored config says, else the field's default."""
        return (config or {}).get(key, cls.model_fields[key].default)

    @classmethod
    def routes_flagged(cls, config: dict[str, Any] | None) -> bool:
        """Whether a flagged annotator's work in the stage goes to review: low gold accuracy's routing, the
        probes' action, or auto-pause (a paused annotator is flagged)."""
        return (bool(cls.read(config, "gold_route_to_review")) or cls.read(config, "probe_action") == "review"
                or int(cls.read(config, "pause_window")) > 0)

    @classmethod
    def descriptions(cls) -> dict[str, str]:
        """The keys a stage reads and what each does (the project form lists them)."""
        return {name: f.description or "" for name, f in cls.model_fields.items()}

    @classmethod
    def check_stage(cls, config: Any, workflow: str) -> dict[str, Any]:
        """Check a stage configuration of `workflow` against this schema; return it as given (a stage
        keeps what its admin wrote, without filled-in defaults). Messages name the key and say why."""
        if not isinstance(config, Mapping):
            raise Invalid(f"The configuration of a {workflow} stage is a JSON object, e.g. {{}}.")
        try:
            cls.model_validate(dict(config))
        except ValidationError as exc:
            known = ", ".join(cls.model_fields)
            problems = []
            for err in exc.errors():
                key = ".".join(str(p) for p in err["loc"]) or "configuration"
                if err["type"] == "extra_forbidden":
                    problems.append(f"'{key}' is not a setting of {workflow} (it reads: {known}).")
                else:
                    problems.append(f"'{key}': {err['msg'].removeprefix('Value error, ')}.")
            raise Invalid(f"The configuration of the {workflow} stage is not valid.", problems) from None
        return dict(config)


class Workflow:
    """One workflow. Subclasses set the class attributes and override the hooks they need."""

    name: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str] = ""
    annotation_schema: ClassVar[type[BaseModel]]
    # The keys a stage of this workflow may set in its configuration (checked when a project is created).
    config_schema: ClassVar[type[StageConfig]] = StageConfig
    template: ClassVar[str]
    keys_help: ClassVar[str] = "digits choose · Enter submits · S skips"
    # Suggestion kinds the screen reads (their producers are declared by the dataset).
    suggestion_kinds: ClassVar[tuple[str, ...]] = ()
    # The payload of each kind, as the screen reads it: what the worker stores and what is pushed from
    # outside are both checked against it (`check_suggestion`). Every built-in kind declares one; a kind
    # without one takes any object.
    suggestion_schemas: ClassVar[Mapping[str, type[BaseModel]]] = {}
    # A workflow that builds on another one's final names it; it cannot be a project's first stage.
    requires: ClassVar[str | None] = None
    # What agreement is measured on: facet name -> "nominal" (a label), "set" (texts),
    # "token_set" (token spans) or "boxes". Review order compares annotations by them too.
    facets: ClassVar[dict[str, str]] = {"answer": "nominal"}
    # Optional capabilities, declared: a free-text answer judged for equivalence, a live check.
    equivalence: ClassVar[Equivalence | None] = None
    has_live_check: ClassVar[bool] = False

    # -- suggestions ---------------------------------------------------------------
    def check_suggestion(self, kind: str, payload: Any, prefix: str = "") -> list[str]:
        """What is wrong with a suggestion payload of `kind` (field by field; empty when nothing is)."""
        schema = self.suggestion_schemas.get(kind)
        if schema is None:
            return [] if isinstance(payload, dict) else [f"{prefix}field 'payload': a suggestion's payload is a JSON object"]
        try:
            schema.model_validate(payload)
        except ValidationError as exc:
            return format_validation_error(exc, prefix=f"{prefix}payload: ")
        return []

    # -- annotations ---------------------------------------------------------------
    def validate_annotation(self, ctx: ItemContext, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Check shape and meaning of a payload against its item (and the finals of earlier
        stages, by workflow name); return the normalized payload."""
        try:
            parsed = self.annotation_schema.model_validate(payload)
        except ValidationError as exc:
            raise Invalid("The annotation is not valid.", format_validation_error(exc)) from None
        problems = self.check(ctx, parsed)
        if problems:
            raise Invalid("The annotation is not valid.", problems)
        return parsed.model_dump(mode="json")

    def check(self, ctx: ItemContext, payload: BaseModel) -> list[str]:
        """Semantic checks beyond the schema; return messages in the annotator's terms."""
        return []

    def form_to_payload(self, form: Mapping[str, Any]) -> dict[str, Any]:
        """Turn a plain HTML form post (no JavaScript) into a payload."""
        return {k: v for k, v in form.items() if k in self.annotation_schema.model_fields}

    def payload_values(self, ctx: ItemContext, payload: Mapping[str, Any]) -> dict[str, Any]:
        """The form values that show `payload` on this workflow's screen, so that
        `form_to_payload(payload_values(ctx, p))` gives `p` back. A reviewer's editor and an item
        sent back to its annotator start from them."""
        return {k: v for k, v in payload.items() if k in self.annotation_schema.model_fields}

    def is_discard(self, payload: Mapping[str, Any]) -> bool:
        return bool(payload.get("discard"))

    # -- agreement and consolidation ----------------------------------------------------
    def facet_values(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Each facet's value in one annotation (None: this annotation says nothing on it)."""
        return {"answer": repr(freeze(dict(payload)))}

    def compare(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
        """Agreement of two annotations in [0, 1]: the mean over the facets either speaks to.
        Not a hook: every comparison goes through the facets."""
        # Imported here: the metrics bring numpy, which commands that only read the registry
        # (`vlcurate project list`) need not load.
        from app.agreement.pairs import mean_agreement

        return mean_agreement(self.facets, self.facet_values(a), self.facet_values(b))

    def consolidate(self, ctx: ItemContext, payloads: list[dict[str, Any]]) -> Consolidation:
        """Default: a strict majority of identical payloads wins; otherwise review."""
        if not payloads:
            return Consolidation(final=None, needs_review=True)
        if len(payloads) == 1:
            return Consolidation(final=payloads[0], discard=self.is_discard(payloads[0]))
        keyed = Counter(freeze(p) for p in payloads)
        best, count = keyed.most_common(1)[0]
        if count * 2 > len(payloads):
            winner = next(p for p in payloads if freeze(p) == best)
            return Consolidation(final=winner, discard=self.is_discard(winner))
        return Consolidation(final=None, needs_review=True)

    def applies(self, ctx: ItemContext) -> bool:
        """Routing: whether an item entering this stage needs it (`ctx.results`: the earlier
        stages' finals by workflow name)."""
        return True

    # -- screen ------------------------------------------------------------------
    def screen_context(self, ctx: ItemContext, values: Mapping[str, Any]) -> dict[str, Any]:
        """Extra template context for the annotation screen. `values` are the form values shown
        (a draft, the initial values, or what was posted)."""
        return {}

    def initial_values(self, ctx: ItemContext) -> dict[str, Any]:
        """Form values a fresh screen starts from (form field -> value) when there is no draft."""
        return {}

    def suggestion_outcome(self, ctx: ItemContext, kind: str, suggestion: Mapping[str, Any], payload: Mapping[str, Any]) -> str | None:
        """What the submitted payload did with a suggestion's payload: "accepted", "edited",
        "rejected", or None when the suggestion proposed nothing this payload speaks to."""
        return None

    def suggestion_distance(self, ctx: ItemContext, kind: str, suggestion: Mapping[str, Any], payload: Mapping[str, Any]) -> float | None:
        """How far the submitted payload is from a suggestion's by the workflow's own measure (0: taken as
        it is); None when the workflow has no measure for that kind."""
        return None

    def live_check(self, ctx: ItemContext, values: Mapping[str, Any]) -> dict[str, Any] | None:
        """Context for the template's `live_check` block, recomputed as the annotator types
        (only called when `has_live_check` is declared)."""
        return None

    # -- review views ----------------------------------------------------------------
    # How reviewers and an item's history see the item and its answers: a template with two macros,
    # `item(view)` and `answer(view, differs)` (`differs`: the payload keys on which the shown
    # annotations differ). The default shows images, and fields as readable text.
    view_template: ClassVar[str] = "datasets/_view.html"

    def view_item(self, ctx: ItemContext) -> dict[str, Any]:
        """What the `item` macro shows: the item as this workflow's screen shows it (its images, its
        texts; `ctx.sizes` gives the stored images' pixel sizes)."""
        images = item_images(ctx.item, ctx.assets)
        shown = {p.strip("/") for p in ctx.assets} | {i["field"] for i in images}
        return {"images": images, "fields": {k: v for k, v in ctx.item.items() if k not in shown and k not in ("id", "group_id")}}

    def view_answer(self, ctx: ItemContext, payload: Mapping[str, Any], kind: str | None = None) -> dict[str, Any]:
        """What the `answer` macro shows for one payload: an annotation or a final (`kind` None),
        or a suggestion of that kind."""
        return {"fields": dict(payload)}


def image_urls(ref: Any, sha: str | None) -> dict[str, str] | None:
    """Where a screen loads an image: the stored copy (thumbnail and full size), or the
    external http(s) URL an item names, which imports keep as a reference and never fetch."""
    if sha:
        return {"thumb": f"/assets/{sha}/thumb", "full": f"/assets/{sha}"}
    if isinstance(ref, str) and is_external(ref):
        return {"thumb": ref, "full": ref}
    return None


def item_images(item: Mapping[str, Any], assets: Mapping[str, str]) -> list[dict[str, Any]]:
    """The item's stored images (by pointer), and the external image URLs of its top-level
    `*image*` fields: {"field", "label", "src"} each, for a view."""
    images = [
        {"field": p.strip("/"), "label": p.strip("/").replace("/", " ").replace("_", " "), "src": image_urls(None, sha)}
        for p, sha in assets.items()
    ]
    for key, value in item.items():
        if "image" in key and f"/{key}" not in assets and isinstance(value, str) and is_external(value):
            images.append({"field": key, "label": key.replace("_", " "), "src": image_urls(value, None)})
    return images


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
        counts = Counter(freeze(key(v)) for v in values)
        ranked = counts.most_common(2)
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            return None
        final[name] = next(v for v in values if freeze(key(v)) == ranked[0][0])
    return final


def freeze(value: Any) -> Any:
    """A hashable, order-independent form of a JSON value (dict keys sorted)."""
    if isinstance(value, dict):
        return tuple(sorted((k, freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    return value
