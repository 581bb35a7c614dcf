"""`annotations()` against a live server: one row per submitted annotation revision, equal to the items'
history read directly (answers, times, annotators) and to the stored suggestion outcomes and review
decisions; annotators are named to an admin and pseudonymous to a reviewer; annotators may not read it."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation, SuggestionOutcome
from tests import factories
from tests.client.test_client_live import wikido_dataset
from vlcurate import Client, Forbidden


@pytest.mark.committed
def test_annotations_equal_the_history(live_server, committed, tmp_path):
    with transaction(committed) as s:
        pid, (stage,) = factories.project(s, "wikido.verify", name="table", overlap=2)
        admin = factories.token(s, factories.user(s, "t-admin", "admin"))
        reviewer = factories.token(s, factories.user(s, "t-reviewer", "reviewer"))
        annotators = [factories.token(s, factories.user(s, f"t-ann{k}")) for k in range(2)]
    with Client(live_server, admin) as client:
        client.push_records(pid, wikido_dataset(3), progress=False)
        rows = [{"external_id": f"wd-{i:04d}", "kind": "wikido.unsupported", "payload": {"spans": [[0, 2]]}} for i in range(3)]
        client.push_suggestions(stage, "outside", "v1", rows)
    for k, verdict in enumerate(("correct", "wrong")):
        with Client(live_server, annotators[k]) as ann:
            while (claimed := ann.claim(stage)) is not None:
                ann.submit(claimed.assignment_id, {"verdict": verdict}, seconds_spent=3.5 + k)
    with Client(live_server, reviewer) as rv:
        queue = rv.review_queue(stage)
        first = rv.item(queue[0].item_id)
        accepted = first.annotations[0].annotation_id
        rv.resolve(stage, queue[0].item_id, accept=accepted)
        rv.send_back(stage, queue[1].item_id, "Look again.")
        table = rv.annotations(pid, cache_dir=str(tmp_path / "hf"))
        histories = {i: rv.item(i) for i in {r.item_id for r in queue}}
    with Client(live_server, admin) as client:
        named = list(client.annotation_rows(pid, stage="wikido.verify"))
    with Client(live_server, annotators[0]) as ann, pytest.raises(Forbidden):
        list(ann.annotation_rows(pid))

    assert table.num_rows == len(named) == 6
    assert {r.annotator for r in named} == {"t-ann0", "t-ann1"}
    pseudonyms = dict(zip(table["annotation_id"], table["annotator"], strict=True))
    assert len(set(pseudonyms.values())) == 2 and all(p.startswith("annotator-") for p in pseudonyms.values())
    for row in named:
        history = [e for e in histories[row.item_id].history if e.what == f"annotation (revision {row.revision})" and e.who == row.annotator]
        assert len(history) == 1 and history[0].payload == row.payload and history[0].at == row.submitted_at
        assert history[0].detail["seconds"] == row.seconds_spent
    with committed() as s:
        stored = {a.id: a for a in s.scalars(sa.select(Annotation))}
        outcomes = s.execute(sa.select(SuggestionOutcome.annotation_id, SuggestionOutcome.kind, SuggestionOutcome.outcome)).all()
    assert set(stored) == {r.annotation_id for r in named}
    assert sorted((o.annotation_id, o.kind, o.outcome) for o in outcomes) == sorted(
        (r.annotation_id, s.kind, s.outcome) for r in named for s in r.suggestions)
    assert outcomes, "the suggestions shown were recorded with what became of them"
    decisions = {r.annotation_id: r.review for r in named}
    on_first = [r.annotation_id for r in named if r.item_id == queue[0].item_id]
    assert decisions[accepted] == "accepted" and [decisions[a] for a in on_first if a != accepted] == ["overridden"]
    assert {decisions[r.annotation_id] for r in named if r.item_id == queue[1].item_id} == {"sent_back"}
    assert {decisions[r.annotation_id] for r in named if r.item_id == queue[2].item_id} == {None}
    by_id = {row["annotation_id"]: row for row in table}
    for row in named:
        assert by_id[row.annotation_id]["payload"] == row.payload
        assert json.loads(json.dumps(by_id[row.annotation_id]["suggestions"])) == [s.model_dump() for s in row.suggestions]
