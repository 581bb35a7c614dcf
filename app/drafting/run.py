"""The draft job's body: render a prompt version for a batch of items, call its drafter, validate
every answer, and store valid drafts as suggestions and invalid ones as draft failures."""

from __future__ import annotations


def draft_batch(prompt_id: int, item_ids: list[int]) -> int:
    raise NotImplementedError("drafting backends are being built")
