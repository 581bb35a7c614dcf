"""Acting on probes: an annotator who misses the planted wrong drafts is flagged, as low gold accuracy
flags one; the stage then sends their work to review, or gives them gold items only (a chance to
show they check) and no ordinary lease. An annotator who catches them is left alone."""

from __future__ import annotations

import random
import uuid

import pytest
import sqlalchemy as sa

from app.errors import Conflict
from app.models import AnnotatorFlag, AuditEvent, GoldItem
from app.services.annotation import annotation
from tests import factories
from tests.bias.test_simulation import answer, work
from tests.bias.world import stage

SETTINGS = {"gold_share": 0.5, "probe_share": 1.0, "probe_min_items": 4, "probe_threshold": 0.5, "gold_threshold": 0.0}


def flagged(session, stage_id: int, user_id: int) -> bool:
    return session.get(AnnotatorFlag, (stage_id, user_id)) is not None


@pytest.mark.parametrize("action", ["review", "pause", "none"])
def test_missing_probes_flags_and_acts(session, settings, storage, tmp_path, action):
    random.seed(3)
    stage_id, truths, _ = stage(session, settings, storage, tmp_path, n=30, n_gold=10, overlap=1, probe_action=action, **SETTINGS)
    anchored, careful = factories.user(session, "anchored"), factories.user(session, "careful")
    if action == "pause":
        # Once flagged they get gold items only (probes among them) until none is left: then a clear refusal.
        gold_ids = {i for (i,) in session.execute(sa.select(GoldItem.item_id).where(GoldItem.stage_id == stage_id))}
        rng, after_flag = random.Random(4), []
        with pytest.raises(Conflict, match="paused"):
            while (claimed := annotation.claim(session, stage_id, anchored)) is not None:
                if flagged(session, stage_id, anchored):
                    after_flag.append(claimed.item_id)
                screen = annotation.open_assignment(session, claimed.assignment_id, anchored)
                annotation.submit(session, claimed.assignment_id, anchored, answer("anchored", rng, screen, truths[claimed.item_id]),
                                  uuid.uuid4().hex)
        assert after_flag and set(after_flag) <= gold_ids
        # A careful annotator keeps getting ordinary items.
        assert work(session, stage_id, careful, "independent", truths, seed=5) > len(gold_ids)
        assert not flagged(session, stage_id, careful)
        return
    work(session, stage_id, anchored, "anchored", truths, seed=4)
    work(session, stage_id, careful, "independent", truths, seed=5)
    assert flagged(session, stage_id, anchored) == (action != "none")
    assert not flagged(session, stage_id, careful)
    routed = session.scalar(sa.select(sa.func.count()).select_from(AuditEvent).where(AuditEvent.action == "gold.routed_to_review"))
    assert (routed > 0) == (action == "review")
    if action == "review":
        event = session.scalars(sa.select(AuditEvent).where(AuditEvent.action == "gold.flagged")).one()
        assert event.detail["probe_catch"] < 0.5 and event.detail["probes"] >= 4
