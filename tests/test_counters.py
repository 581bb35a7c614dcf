"""The maintained counts (app.models.counts) equal count(*) over the rows they count: after a concurrent
drain, and after every other path that moves items or adds annotations."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from app.db import transaction
from app.models import Assignment, Item
from app.services.annotation import annotation
from app.services.projects import projects
from app.services.review import review
from tests.conftest import make_choice_project, make_user, run_concurrently

# Each maintained figure, and the same figure counted from the rows (zero rows left out of both).
FIGURES = {
    "items": (
        "SELECT project_id, stage_id, status, sum(n) FROM item_counts GROUP BY 1, 2, 3 HAVING sum(n) <> 0",
        "SELECT project_id, coalesce(stage_id, 0), status, count(*) FROM items GROUP BY 1, 2, 3",
    ),
    "finished": (
        "SELECT stage_id, sum(finished) FROM stage_counts GROUP BY 1 HAVING sum(finished) <> 0",
        "SELECT stage_id, count(DISTINCT item_id) FROM item_results GROUP BY 1",
    ),
    "annotations": (
        "SELECT stage_id, sum(annotations) FROM stage_counts GROUP BY 1 HAVING sum(annotations) <> 0",
        "SELECT stage_id, count(*) FROM annotations WHERE revision = 1 GROUP BY 1",
    ),
    "submitted": (
        "SELECT stage_id, annotator_id, submitted FROM annotator_counts WHERE submitted <> 0",
        "SELECT stage_id, annotator_id, count(*) FROM assignments WHERE status = 'submitted' GROUP BY 1, 2",
    ),
}


def assert_exact(session) -> None:
    for name, (kept, counted) in FIGURES.items():
        assert sorted(session.execute(sa.text(kept)).all()) == sorted(session.execute(sa.text(counted)).all()), name


def assert_bars_agree(session, project_id: int) -> None:
    """Each stage's bar (one statement) shows what the project's progress says of that stage."""
    for stage in projects.project_progress(session, project_id).stages:
        assert projects.stage_progress(session, stage.id) == stage


def test_counts_stay_exact_under_a_concurrent_drain(committed, settings, storage):
    project_id, stage_id = make_choice_project(committed, settings, storage, 150, overlap=2)
    annotators = [make_user(committed, f"cnt{i}") for i in range(8)]

    def worker(annotator_id: int) -> None:
        while True:
            with transaction(committed) as s:
                c = annotation.claim(s, stage_id, annotator_id)
            if c is None:
                return
            # Two annotators disagree on every third item: those go to review.
            choice = "b" if c.item_id % 3 == 0 and annotator_id % 2 else "a"
            with transaction(committed) as s:
                annotation.submit(s, c.assignment_id, annotator_id, {"choice": choice}, uuid.uuid4().hex)

    run_concurrently(worker, [(annotators[i % 8],) for i in range(32)])
    with transaction(committed) as s:
        assert_exact(s)
        stage = projects.project_progress(s, project_id).stages[0]
        assert stage.total == 150 and stage.annotations == 300
        assert_bars_agree(s, project_id)
        assert sum(annotation.user_stage_counts(s, stage_id, a) for a in annotators) == 300


def test_counts_stay_exact_through_skip_release_expire_review_and_deletes(committed, settings, storage):
    project_id, stage_id = make_choice_project(committed, settings, storage, 6, overlap=2)
    a, b, reviewer = make_user(committed, "ca"), make_user(committed, "cb"), make_user(committed, "cr", "reviewer")
    with transaction(committed) as s:
        annotation.give_back(s, annotation.claim(s, stage_id, a).assignment_id, a, skip=True)
        annotation.give_back(s, annotation.claim(s, stage_id, a).assignment_id, a, skip=False)
        annotation.claim(s, stage_id, b)
        s.execute(sa.update(Assignment).where(Assignment.annotator_id == b).values(lease_until=sa.func.now() - sa.text("interval '1 second'")))
        annotation.claim(s, stage_id, a)  # expires b's lease first
        assert_exact(s)
    # Two new annotators take the same item and disagree: it goes to review, is sent back and revised.
    c, d = make_user(committed, "cc"), make_user(committed, "cd")
    with transaction(committed) as s:
        for user, choice in ((c, "a"), (d, "b")):
            claimed = annotation.claim(s, stage_id, user)
            annotation.submit(s, claimed.assignment_id, user, {"choice": choice}, uuid.uuid4().hex)
        item_id = s.scalar(sa.select(Item.id).where(Item.status == "review"))
        review.send_back(s, stage_id, item_id, reviewer, "look again")
        assert_exact(s)
        for user in (c, d):
            again = annotation.claim(s, stage_id, user)
            assert again.item_id == item_id
            annotation.submit(s, again.assignment_id, user, {"choice": "c"}, uuid.uuid4().hex)
        assert_exact(s)
        assert_bars_agree(s, project_id)
        assert annotation.user_stage_counts(s, stage_id, c) == 1
    # A bulk insert as an import writes it, a bulk move, an item deleted, a project deleted.
    with transaction(committed) as s:
        s.execute(sa.text(
            "INSERT INTO items (project_id, external_id, data, stage_id, status, slots_left)"
            " SELECT :p, 'bulk' || g, '{}', :s, 'active', 2 FROM generate_series(1, 500) g"
        ), {"p": project_id, "s": stage_id})
        s.execute(sa.text("UPDATE items SET status = 'discarded', slots_left = 0 WHERE external_id LIKE 'bulk1%'"))
        s.execute(sa.text("DELETE FROM items WHERE external_id LIKE 'bulk2%'"))
        assert_exact(s)
        assert_bars_agree(s, project_id)
        assert projects.stage_progress(s, stage_id).discarded > 100
        other, _ = make_choice_project(committed, settings, storage, 3)
    with transaction(committed) as s:
        s.execute(sa.text("DELETE FROM projects WHERE id = :p"), {"p": project_id})
        assert_exact(s)
        assert s.scalar(sa.text("SELECT count(*) FROM item_counts WHERE project_id = :p"), {"p": project_id}) == 0
        assert [p.items for p in projects.progress(s)] == [3]


def test_counts_stay_exact_on_either_side_of_the_small_statement_size(committed, settings, storage):
    """The triggers run a cached plan for at most 64 rows and plan bulk statements anew (0014counts):
    the same connection alternates between the two, and both count the same."""
    project_id, stage_id = make_choice_project(committed, settings, storage, 1)
    users = [make_user(committed, f"sz{k}") for k in range(3)]
    with transaction(committed) as s:
        for size in (1, 64, 65, 300, 2, 64, 65, 1):
            tag = f"n{size}-{uuid.uuid4().hex[:6]}-"
            params = {"p": project_id, "s": stage_id, "n": size, "tag": tag, "users": users}
            s.execute(sa.text(
                "INSERT INTO items (project_id, external_id, data, stage_id, status, slots_left)"
                " SELECT :p, :tag || g, '{}', :s, 'active', 1 FROM generate_series(1, :n) g"
            ), params)
            s.execute(sa.text(
                "INSERT INTO assignments (item_id, stage_id, annotator_id, status, lease_until)"
                " SELECT id, stage_id, (CAST(:users AS int[]))[1 + id % 3], 'active', now() + interval '1 hour'"
                " FROM items WHERE external_id LIKE :tag || '%'"
            ), params)
            s.execute(sa.text(
                "UPDATE assignments SET status = 'submitted', submitted_at = now()"
                " WHERE item_id IN (SELECT id FROM items WHERE external_id LIKE :tag || '%')"
            ), params)
            s.execute(sa.text(
                "INSERT INTO annotations (assignment_id, item_id, stage_id, annotator_id, revision, idempotency_key, payload)"
                " SELECT a.id, a.item_id, a.stage_id, a.annotator_id, 1, 'k' || a.id, '{}' FROM assignments a"
                " JOIN items i ON i.id = a.item_id WHERE i.external_id LIKE :tag || '%'"
            ), params)
            s.execute(sa.text(
                "INSERT INTO item_results (item_id, stage_id, payload, source)"
                " SELECT id, stage_id, '{}', 'auto' FROM items WHERE external_id LIKE :tag || '%'"
            ), params)
            s.execute(sa.text("UPDATE items SET status = 'done', slots_left = 0 WHERE external_id LIKE :tag || '%'"), params)
            assert_exact(s)
        # Deletes on either side of the size too: the results, then the items with everything under them.
        for size in (1, 65):
            s.execute(sa.text(
                "DELETE FROM item_results WHERE item_id IN (SELECT id FROM items WHERE external_id LIKE :tag || '%')"
            ), {"tag": f"n{size}-%"})
            s.execute(sa.text("DELETE FROM items WHERE external_id LIKE :tag || '%'"), {"tag": f"n{size}-%"})
            assert_exact(s)


def test_counting_a_final_reads_only_the_items_own_finals_when_the_statistics_are_stale(engine):
    """A final record's counting trigger asks whether its item had a final in the stage before. With
    statistics taken while `item_results` was empty and a stage's finals bulk-written since (no
    ANALYZE), the planner combined the item's index entries with every entry of the stage: each
    submit then read all of the stage's finals (migration 0016fence). The plan of that lookup, as
    the trigger runs it (auto_explain, sent to this client), must use the item's own index only."""
    with engine.connect() as conn:
        conn.exec_driver_sql("DELETE FROM item_results")  # the test's own transaction: rolled back at its end
        conn.exec_driver_sql("ANALYZE item_results")
        project = conn.exec_driver_sql("INSERT INTO projects (name) VALUES ('stale') RETURNING id").scalar_one()
        stage = conn.exec_driver_sql(
            f"INSERT INTO stages (project_id, position, name, workflow) VALUES ({project}, 0, 's', 'generic.choice') RETURNING id"
        ).scalar_one()
        conn.exec_driver_sql(
            f"INSERT INTO items (project_id, external_id, data, stage_id, status) SELECT {project}, g::text, '{{}}', {stage}, 'done'"
            " FROM generate_series(1, 200001) g"
        )
        conn.exec_driver_sql(
            f"INSERT INTO item_results (item_id, stage_id, payload, source) SELECT id, {stage}, '{{}}', 'auto' FROM items"
            f" WHERE stage_id = {stage} ORDER BY id LIMIT 200000"
        )
        last = conn.exec_driver_sql(f"SELECT max(id) FROM items WHERE stage_id = {stage}").scalar_one()
        plans: list[str] = []
        raw = conn.connection.driver_connection
        raw.add_notice_handler(lambda notice: plans.append(notice.message_primary or ""))
        for setting in ("LOAD 'auto_explain'", "SET LOCAL auto_explain.log_min_duration = 0", "SET LOCAL auto_explain.log_nested_statements = on",
                        "SET LOCAL auto_explain.log_level = notice", "SET LOCAL client_min_messages = notice"):
            conn.exec_driver_sql(setting)
        conn.exec_driver_sql(f"INSERT INTO item_results (item_id, stage_id, payload, source) VALUES ({last}, {stage}, '{{}}', 'auto')")
        conn.rollback()
    counted = [p for p in plans if "INSERT INTO stage_counts" in p]
    assert counted, plans
    assert all("ix_item_results_item_id" in p and "ix_item_results_stage_id" not in p for p in counted), counted
