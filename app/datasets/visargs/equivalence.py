"""visargs.equivalence: do two annotators' conclusions say the same? Items are conclusion pairs
(made by `app.services.review.equivalence` in a companion project); the judgements give the
conclusion-equivalence rate of the structure stage's agreement report."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from app.datasets.dataset import ItemBase
from app.datasets.workflow import StageConfig, Workflow, image_urls
from app.datasets.visargs.schema import EQUIVALENCE


class EquivalenceItem(ItemBase):
    conclusion_a: str = Field(min_length=1)
    conclusion_b: str = Field(min_length=1)
    image: str | None = None


class EquivalenceConfig(StageConfig):
    judges_stage: int | None = Field(default=None, description="the stage whose answers this stage judges (set by the equivalence action)")


class EquivalenceAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    equivalent: bool


class VisArgsEquivalence(Workflow):
    name = EQUIVALENCE
    title = "VisArgs: do two conclusions say the same?"
    description = "Judge whether two annotators' conclusions are equivalent (for agreement studies)."
    annotation_schema = EquivalenceAnnotation
    config_schema = EquivalenceConfig
    template = "datasets/visargs/equivalence.html"
    view_template = "datasets/visargs/equivalence_view.html"
    keys_help = "Y equivalent · N not equivalent · Enter submits · Z shows the image full size · S skips"
    facets = {"equivalent": "nominal"}

    def facet_values(self, payload):
        return {"equivalent": payload.get("equivalent")}

    def form_to_payload(self, form):
        value = str(form.get("equivalent", "")).lower()
        return {"equivalent": value in ("yes", "true", "on", "1")} if value else {}

    def payload_values(self, ctx, payload):
        return {"equivalent": "yes" if payload["equivalent"] else "no"} if "equivalent" in payload else {}

    def screen_context(self, ctx, values):
        return {"image": image_urls(ctx.item.get("image"), ctx.assets.get("/image")) if ctx.item.get("image") else None}

    def view_item(self, ctx):
        return {
            "image": image_urls(ctx.item.get("image"), ctx.assets.get("/image")) if ctx.item.get("image") else None,
            "a": ctx.item.get("conclusion_a") or "", "b": ctx.item.get("conclusion_b") or "",
        }

    def view_answer(self, ctx, payload, kind=None):
        return {"equivalent": bool(payload.get("equivalent"))}
