"""The client's management calls against a live server: records updated by external id (a new revision,
the history keeps the record before) and hidden (their annotations kept), a project renamed, its
stage settings changed and deleted with confirmation, users and tokens, gold items and accuracy, and
the annotations as a Dataset equal to the items' history read directly; each with its role check."""

from __future__ import annotations

import asyncio

import pytest

from app.db import transaction
from tests import factories
from tests.client.test_client_live import png, wikido_dataset
from vlcurate import AsyncClient, Client, Conflict, Forbidden, Invalid, NotFound, Unauthorized


def record(i: int, caption: str) -> dict:
    return {"image_id": f"wd-{i:04d}", "caption": caption, "orig_cap": f"Tram {i} on the bridge.",
            "image": {"bytes": png(i), "path": f"topical_data/img_{i:04d}.png"}, "page_title": f"Page {i}",
            "topic": "food" if i % 2 else "transport"}


@pytest.fixture
def setup(committed):
    with transaction(committed) as s:
        pid, stages = factories.project(s, "wikido.verify", name="manage")
        other, _ = factories.project(s, "wikido.verify", name="taken")
        tokens = {role: factories.token(s, factories.user(s, f"m-{role}", role)) for role in ("admin", "reviewer", "annotator")}
    return pid, stages[0], other, tokens


@pytest.mark.committed
def test_records_update_by_external_id_and_hide(live_server, setup):
    pid, stage, _, tokens = setup
    with Client(live_server, tokens["admin"]) as admin, Client(live_server, tokens["annotator"]) as ann:
        assert admin.push_records(pid, wikido_dataset(6), progress=False).created == 6
        claimed = ann.claim(stage)
        annotated = claimed.data["image_id"]
        ann.submit(claimed.assignment_id, {"verdict": "correct"})
        fresh = next(f"wd-{i:04d}" for i in range(6) if f"wd-{i:04d}" != annotated)
        changed = [record(int(x[3:]), f"A new caption for {x}.") for x in (annotated, fresh)]

        skipped = admin.push_records(pid, changed, progress=False)
        assert (skipped.created, skipped.skipped, skipped.updated) == (0, 2, 0)
        updated = admin.push_records(pid, changed, progress=False, on_conflict="update")
        assert (updated.created, updated.skipped, updated.updated) == (0, 0, 2)
        again = admin.push_records(pid, changed, progress=False, on_conflict="update")
        assert (again.skipped, again.updated) == (2, 0)  # the same record again: no new revision
        with pytest.raises(ValueError, match="on_conflict"):
            admin.push_records(pid, changed, on_conflict="replace")

        rows = {r.external_id: r.id for r in admin.items(pid)}
        before_annotation = admin.item(rows[fresh])
        assert before_annotation.data["caption"] == f"A new caption for {fresh}."
        after_annotation = admin.item(rows[annotated])
        assert after_annotation.data["caption"] == f"A new caption for {annotated}."
        revisions = [e for e in after_annotation.history if e.what == "item.revise"]
        assert len(revisions) == 1 and revisions[0].detail["revision"] == 2
        assert "A red tram number" in revisions[0].detail["before"]  # the record before is kept
        assert [e.payload["verdict"] for e in after_annotation.history if e.what.startswith("annotation")] == ["correct"]

        with pytest.raises(Invalid) as unknown:
            admin.delete_records(pid, [fresh, "nope"], reason="duplicate of another page")
        assert "'nope'" in unknown.value.message and fresh not in unknown.value.message
        assert admin.item(rows[fresh]).status != "discarded"  # refused as a whole: nothing hidden
        hidden = admin.delete_records(pid, [fresh], reason="duplicate of another page")
        assert (hidden.hidden, hidden.already) == (1, 0)
        assert admin.delete_records(pid, [fresh]).already == 1
        gone = admin.item(rows[fresh])
        assert gone.status == "discarded"
        assert any(e.what == "item.delete" and e.detail["reason"] == "duplicate of another page" for e in gone.history)
        assert fresh not in {r.external_id for r in admin.items(pid, status="active")}
        with Client(live_server, tokens["reviewer"]) as reviewer, pytest.raises(Forbidden):
            reviewer.delete_records(pid, [annotated])
        assert admin.item(rows[annotated]).status != "discarded"


@pytest.mark.committed
def test_project_update_and_delete(live_server, setup):
    pid, stage, other, tokens = setup
    with Client(live_server, tokens["admin"]) as admin:
        settings = admin.update_project(pid, name="manage-renamed", description="WikiDO, second pass",
                                        stages=[{"id": stage, "guidelines": "Read the reference text first.", "lease_seconds": 600}])
        assert (settings.name, settings.description) == ("manage-renamed", "WikiDO, second pass")
        assert (settings.stages[0].guidelines, settings.stages[0].lease_seconds) == ("Read the reference text first.", 600)
        assert admin.project("manage-renamed").id == pid
        with pytest.raises(Conflict):
            admin.update_project(pid, name="taken")
        with pytest.raises(Invalid) as wrong_stage:
            admin.update_project(pid, stages=[{"id": 10**6, "guidelines": "x"}])
        assert "stages[0].id" in wrong_stage.value.message
        with pytest.raises(Invalid) as too_short:
            admin.update_project(pid, stages=[{"id": stage, "lease_seconds": 0}])  # checked before any request
        assert too_short.value.errors == ["stages.0.lease_seconds: Input should be greater than or equal to 1"]
        with Client(live_server, tokens["reviewer"]) as reviewer:
            with pytest.raises(Forbidden):
                reviewer.update_project(pid, name="mine")
            with pytest.raises(Forbidden):
                reviewer.delete_project(pid, confirm="manage-renamed")
        with pytest.raises(Invalid) as unconfirmed:
            admin.delete_project(pid, confirm="manage")
        assert "'manage-renamed'" in unconfirmed.value.message
        admin.push_records(pid, wikido_dataset(3), progress=False)
        with Client(live_server, tokens["annotator"]) as ann:
            claimed = ann.claim(stage)
            ann.submit(claimed.assignment_id, {"verdict": "correct"})
            kept = admin.annotations(pid).num_rows
            admin.delete_project(pid, confirm="manage-renamed")
            with pytest.raises(NotFound):
                admin.project(pid)
            with pytest.raises(NotFound):
                ann.claim(stage)  # the queue is closed with it
            with pytest.raises(NotFound):
                list(admin.items(pid))
            assert [p.id for p in admin.projects()] == [other]
            assert [p.name for p in admin.projects(archived=True)] == ["manage-renamed"]
            assert admin.projects(archived=True)[0].archived_at is not None
            with Client(live_server, tokens["reviewer"]) as reviewer, pytest.raises(Forbidden):
                reviewer.projects(archived=True)
            with pytest.raises(Conflict, match="archived"):
                admin.create_project("manage-renamed", [{"workflow": "wikido.verify"}])
            with pytest.raises(NotFound):
                admin.restore_project("no-such-project")
            back = admin.restore_project("manage-renamed")  # by name, found among the archived
            assert back.id == pid and back.archived_at is None and back.items == 3
            assert admin.annotations(pid).num_rows == kept == 1  # every annotation is still there
            assert ann.claim(stage) is not None
            with pytest.raises(Conflict):
                admin.restore_project(pid)  # not archived any more


@pytest.mark.committed
def test_users_tokens_and_gold(live_server, setup):
    pid, stage, _, tokens = setup
    with Client(live_server, tokens["admin"]) as admin:
        made = admin.create_user("new-annotator", "a long password 123")
        assert made.role == "annotator" and "new-annotator" in {u.username for u in admin.users()}
        token = admin.create_token("new-annotator", "notebook")
        with Client(live_server, token.token) as newcomer:
            assert newcomer.projects()[0].name == "manage"
            with pytest.raises(Forbidden):
                newcomer.users()
            newcomer.revoke_token(token.id)
            with pytest.raises(Unauthorized):
                newcomer.projects()

        admin.push_records(pid, wikido_dataset(4), progress=False)
        assert admin.import_gold(stage, [{"id": "wd-0001", "answer": {"verdict": "correct"}}]).imported == 1
        with pytest.raises(Invalid):
            admin.import_gold(stage, [{"id": "wd-0002", "answer": {"verdict": "maybe"}}])
        report = admin.gold_accuracy(stage, samples=10)
        assert report.gold_items == 1 and report.annotators == {}


@pytest.mark.committed
def test_pushed_suggestions_follow_the_kinds_schema(live_server, setup, committed):
    pid, stage, _, tokens = setup
    with Client(live_server, tokens["admin"]) as admin:
        admin.push_records(pid, wikido_dataset(2), progress=False)
        with pytest.raises(Invalid) as refused:
            admin.push_suggestions(stage, "outside", "v1", [
                {"external_id": "wd-0000", "kind": "wikido.unsupported", "payload": {"spans": "all"}},
                {"external_id": "wd-0001", "kind": "wikido.itm", "payload": {"score": "high"}},
                {"external_id": "wd-0001", "kind": "wikido.caption", "payload": {"caption": "x" * 5001}},
            ])
        assert refused.value.message == "Nothing was stored."
        assert refused.value.errors == [
            "suggestions[0].payload: field 'spans': Input should be a valid list",
            "suggestions[1].payload: field 'score': Input should be a valid number, unable to parse string as a number",
            "suggestions[2].payload: field 'caption': String should have at most 5000 characters",
        ]
        stored = admin.push_suggestions(stage, "outside", "v1", [
            {"external_id": "wd-0000", "kind": "wikido.unsupported", "payload": {"spans": [[0, 2]], "unrelated": False}},
            {"external_id": "wd-0001", "kind": "wikido.itm", "payload": {"score": 0.25}},
        ])
        assert stored.stored == 2


@pytest.mark.committed
def test_the_async_client_pushes_batches_at_once_and_streams_rows(live_server, setup):
    pid, stage, _, tokens = setup

    async def session() -> tuple[int, int, list[str]]:
        async with AsyncClient(live_server, tokens["admin"]) as admin:
            pushed = await admin.push_records(pid, wikido_dataset(7), batch_size=2, progress=False)  # 4 requests, 2 at a time
            again = await admin.push_records(pid, wikido_dataset(7), batch_size=3, progress=False)
            hidden = await admin.delete_records(pid, ["wd-0006"])
            async with AsyncClient(live_server, tokens["annotator"]) as ann:
                claimed = await ann.claim(stage)
                await ann.submit(claimed.assignment_id, {"verdict": "wrong"})
            rows = [r.annotator async for r in admin.annotation_rows(pid)]
            return pushed.created + again.skipped, hidden.hidden, rows

    assert asyncio.run(session()) == (14, 1, ["m-annotator"])
