"""An item's earlier-stage finals read for a whole batch in one query are those read item by item."""

from __future__ import annotations

import sqlalchemy as sa

from app.lifecycle import ItemStatus
from app.models import GoldItem, Item
from app.services.annotation.pipeline import results_by_stage, results_by_stage_many
from tests import factories


def test_results_of_many_items_in_one_query_equal_those_of_each_item(session):
    project_id, (premises, structure, grounding) = factories.project(
        session, ["visargs.premises", "visargs.structure", "visargs.grounding"])
    items = [Item(project_id=project_id, external_id=f"i{k}", data={"k": k}, stage_id=grounding) for k in range(5)]
    session.add_all(items)
    session.flush()
    ids = [i.id for i in items]
    factories.finished(session, premises, ids[0], {"visual_premises": ["a"]})
    factories.finished(session, structure, ids[0], {"conclusion": "c0"})
    factories.finished(session, premises, ids[1], {"visual_premises": ["old"]})
    factories.finished(session, premises, ids[1], {"visual_premises": ["newer"]})  # the newest final of a stage wins
    factories.finished(session, grounding, ids[1], {"boxes": []})
    # ids[2] has no final; ids[3] is gold in the structure stage: its finals from there on are hidden.
    factories.finished(session, premises, ids[3], {"visual_premises": ["g"]})
    factories.finished(session, structure, ids[3], {"conclusion": "the truth"})
    session.add(GoldItem(stage_id=structure, item_id=ids[3], answer={"conclusion": "the truth"}, source="import"))
    session.execute(sa.update(Item).where(Item.id == ids[3]).values(status=ItemStatus.gold, stage_id=structure))
    factories.finished(session, premises, ids[4], {"visual_premises": ["x"]})

    many = results_by_stage_many(session, [*ids, 999_999_999])
    assert many == {**{i: results_by_stage(session, i) for i in ids}, 999_999_999: {}}
    assert many[ids[1]] == {"visargs.premises": {"visual_premises": ["newer"]}, "visargs.grounding": {"boxes": []}}
    assert many[ids[3]] == {"visargs.premises": {"visual_premises": ["g"]}} and many[ids[2]] == {}
    assert results_by_stage_many(session, []) == {}


def test_a_batch_reads_its_items_results_in_one_statement(session, engine):
    project_id, (premises, structure) = factories.project(session, ["visargs.premises", "visargs.structure"])
    items = [Item(project_id=project_id, external_id=f"i{k}", data={}, stage_id=structure) for k in range(20)]
    session.add_all(items)
    session.flush()
    for item in items:
        factories.finished(session, premises, item.id, {"visual_premises": [str(item.id)]})
    statements = []

    def seen(conn, cursor, statement, *rest):
        statements.append(statement)

    sa.event.listen(engine, "before_cursor_execute", seen)
    try:
        results = results_by_stage_many(session, [i.id for i in items])
    finally:
        sa.event.remove(engine, "before_cursor_execute", seen)
    assert len(statements) == 1 and results == {i.id: {"visargs.premises": {"visual_premises": [str(i.id)]}} for i in items}
