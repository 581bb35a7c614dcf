"""Agreement sampling: a stage's full overlap on a random sample of n items, one annotator for the rest.

A stage with `sample_size` n and `overlap` k asks k annotators for the n items of its sample
(`stage_samples`) and one annotator for every other item. The sample is drawn when items are
imported: each sampled stage is topped up to n from the project's items that have not been
annotated in it yet, in the order of md5(seed, external id), so the same seed and the same
records give the same sample whatever order they were imported in. A sampled item that is
discarded before it reaches the stage simply never counts; the reports say how many had k.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.lifecycle import ItemStatus
from app.models import Stage

_TOP_UP = sa.text(
    f"""
    INSERT INTO stage_samples (stage_id, item_id)
    SELECT :stage, i.id FROM items i
    WHERE i.project_id = :project AND i.status <> '{ItemStatus.discarded}'
      AND NOT EXISTS (SELECT 1 FROM stage_samples s WHERE s.stage_id = :stage AND s.item_id = i.id)
      AND NOT EXISTS (SELECT 1 FROM assignments a WHERE a.stage_id = :stage AND a.item_id = i.id)
      AND NOT EXISTS (SELECT 1 FROM item_results r WHERE r.stage_id = :stage AND r.item_id = i.id)
    ORDER BY md5(:seed || ':' || i.external_id), i.id
    LIMIT greatest(:n - (SELECT count(*) FROM stage_samples s WHERE s.stage_id = :stage), 0)
    RETURNING item_id
    """
)

# Newly sampled items already waiting in the stage get the extra slots now; the others get them on entry.
_WIDEN = sa.text(
    "UPDATE items SET slots_left = slots_left + :extra"
    f" WHERE id = ANY(:ids) AND stage_id = :stage AND status = '{ItemStatus.active}'"
)


def entry_slots(stage: Stage) -> int:
    """Slots of an item entering the stage before its sample membership is known (imports)."""
    return 1 if stage.sample_size is not None else stage.overlap


def draw(session: Session, project_id: int) -> dict[int, int]:
    """Top up every sampled stage of the project; returns stage id -> items added to its sample."""
    added = {}
    stages = session.scalars(
        sa.select(Stage).where(Stage.project_id == project_id, Stage.sample_size.is_not(None)).order_by(Stage.position)
    )
    for stage in stages:
        ids = list(
            session.scalars(
                _TOP_UP,
                {"stage": stage.id, "project": project_id, "seed": str(stage.sample_seed), "n": stage.sample_size},
            )
        )
        if ids and stage.overlap > 1:
            session.execute(_WIDEN, {"extra": stage.overlap - 1, "ids": ids, "stage": stage.id})
        added[stage.id] = len(ids)
    return added
