"""The ExpArt dataset (`naist-nlp/ExpArt`): section texts of artwork articles kept or dropped, model
explanations judged by experts; published as instruction data (the kept sections with the paper's
templates) and a judgement log (every finished item's decisions, scores, struck words and metrics)."""

from __future__ import annotations

from typing import Any

from app.datasets.artwork import charts as artwork_charts
from app.datasets.artwork import demo
from app.datasets.artwork.drafts import DRAFTS
from app.datasets.artwork.explanation import ArtworkExplanation, indices_of, metrics_of
from app.datasets.artwork.probes import PROBE
from app.datasets.artwork.schema import EXPLANATION, SECTIONS, ArtworkSection, instructions, section_path
from app.datasets.artwork.sections import ArtworkSections
from app.datasets.dataset import Dataset, JsonStyle
from app.datasets.registry import register
from app.datasets.wikido.tokenedits import tokenize


@register
class ExpArt(Dataset):
    name = "artwork"
    title = "ExpArt: artwork explanations"
    description = "Keep the section texts that explain an artwork; judge models' explanations of them against the text."
    item_schema = ArtworkSection
    image_fields = ("/image",)
    workflows = (ArtworkSections, ArtworkExplanation)
    breakdown = ("section",)
    demos = demo.DEMOS
    drafts = DRAFTS
    probes = (PROBE,)
    published_layout = "jsonl"
    published_path = "{split}.jsonl"
    export_log_name = "judgements.jsonl"
    release_style = JsonStyle(indent=None, ensure_ascii=False)

    def export_record(self, item, results, source=None):
        """The record as it came, then the paper's two instructions for its section path."""
        record = dict(source if source is not None else item)
        with_title, without_title = instructions(item)
        record["instruction"] = with_title
        record["instruction_without_title"] = without_title
        return record

    def export_log(self, item, results, source=None) -> dict[str, Any]:
        """A judgement line: the section decision, and for an explanation its score, struck words and metrics."""
        kept = results.get(SECTIONS)
        judged = results.get(EXPLANATION)
        line: dict[str, Any] = {
            "id": (source or item).get("id", item["id"]),
            "path": section_path(item),
            "decision": kept.get("decision") if kept else None,
            "reason": kept.get("reason") if kept else None,
        }
        if item.get("model") is not None:
            words = [t.text for t in tokenize(item.get("explanation") or "")]
            struck = indices_of(judged.get("struck")) if judged else set()
            line.update({
                "model": item["model"],
                "score": judged.get("score") if judged else None,
                "struck": judged.get("struck") if judged else None,
                "struck_words": [words[i] for i in sorted(struck) if i < len(words)] if judged else None,
                "tokens": len(words),
                "metrics": metrics_of(item),
            })
        return line

    def charts(self, finished):
        return artwork_charts.charts(finished)
