"""Split definitions: exact counts, ratios, held-out values, strata, groups, seeds, versions."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest
import sqlalchemy as sa

from app.db import transaction
from app.errors import Invalid
from app.models import Item, ItemSplit
from app.services.exports import splits
from app.services.imports import imports
from app.services.projects import projects
from tests.conftest import png_bytes

TOPICS = ["food", "paintings", "medicine", "sports", "music", "cities"]


def finished_project(sessions, settings, storage, tmp_path, n: int, *, group_size: int = 0, name: str = "Splits") -> int:
    """A generic.choice project with n finished items (topic = TOPICS[i % 6], group_id when group_size)."""
    (tmp_path / "img.png").write_bytes(png_bytes())
    records = []
    for i in range(n):
        r = {"id": f"x{i}", "image": "img.png", "topic": TOPICS[i % len(TOPICS)]}
        if group_size:
            r["group_id"] = f"g{i // group_size}"
        records.append(json.dumps(r))
    spec = projects.StageSpec(workflow="generic.choice", config={"choices": ["a", "b"]})
    with transaction(sessions) as s:
        project_id = projects.create_project(s, name, [spec]).id
        imports.import_items(s, project_id, "\n".join(records).encode(), "r.jsonl", settings=settings, storage=storage,
                             images=imports.ImageSource(settings, storage, base=tmp_path))
        # Finished as consolidation leaves them: a final record each, status done.
        s.execute(sa.text("INSERT INTO item_results (item_id, stage_id, payload, source) SELECT id, stage_id, '{\"choice\": \"a\"}', 'auto' FROM items WHERE project_id = :p"), {"p": project_id})
        s.execute(sa.text("UPDATE items SET status = 'done', slots_left = 0 WHERE project_id = :p"), {"p": project_id})
    return project_id


def assignment(sessions, definition_id) -> dict[str, str]:
    with transaction(sessions) as s:
        return dict(s.execute(sa.select(Item.external_id, ItemSplit.split).join(Item, Item.id == ItemSplit.item_id).where(ItemSplit.definition_id == definition_id)).all())


def save(sessions, project_id, config):
    with transaction(sessions) as s:
        d = splits.save_definition(s, project_id, config)
        return d.id, d.version, dict(d.counts)


def test_counts_are_exact_and_the_seed_decides(committed, settings, storage, tmp_path):
    project_id = finished_project(committed, settings, storage, tmp_path, 1000)
    first, version, counts = save(committed, project_id, {"counts": {"train": 700, "test": 300}, "seed": 4})
    assert version == 1 and counts == {"train": 700, "test": 300}
    again, version, _ = save(committed, project_id, {"counts": {"train": 700, "test": 300}, "seed": 4})
    other, _, _ = save(committed, project_id, {"counts": {"train": 700, "test": 300}, "seed": 5})
    assert version == 2 and assignment(committed, first) == assignment(committed, again)
    assert assignment(committed, first) != assignment(committed, other)


def test_a_fixed_size_sample_and_the_rest(committed, settings, storage, tmp_path):
    project_id = finished_project(committed, settings, storage, tmp_path, 100)
    sample, _, counts = save(committed, project_id, {"counts": {"eval": 30}})
    assert counts == {"eval": 30}
    with transaction(committed) as s:
        assert splits.unassigned(s, splits.get_definition(s, project_id)) == 70
    _, _, counts = save(committed, project_id, {"counts": {"eval": 30}, "rest": "train"})
    assert counts == {"eval": 30, "train": 70}


def test_one_split_takes_every_item(committed, settings, storage, tmp_path):
    project_id = finished_project(committed, settings, storage, tmp_path, 12, group_size=5)
    _, _, counts = save(committed, project_id, {"ratios": {"train": 1.0}})
    assert counts == {"train": 12}
    _, _, counts = save(committed, project_id, {"counts": {"train": 4}, "rest": "test"})
    assert counts["train"] >= 4 and sum(counts.values()) == 12


def test_groups_never_straddle_splits(committed, settings, storage, tmp_path):
    project_id = finished_project(committed, settings, storage, tmp_path, 300, group_size=7)
    definition, _, counts = save(committed, project_id, {"ratios": {"train": 0.6, "validation": 0.2, "test": 0.2}, "seed": 1})
    assert sum(counts.values()) == 300 and all(abs(counts[k] - 300 * r) <= 7 for k, r in (("train", 0.6), ("validation", 0.2), ("test", 0.2)))
    by_group = defaultdict(set)
    for external, split in assignment(committed, definition).items():
        by_group[int(external[1:]) // 7].add(split)
    assert len(by_group) == 43 and all(len(s) == 1 for s in by_group.values())


def test_held_out_values_only_in_their_split_and_strata_keep_proportions(committed, settings, storage, tmp_path):
    project_id = finished_project(committed, settings, storage, tmp_path, 600)
    config = {"ratios": {"train": 0.75, "test": 0.25}, "held_out": {"field": "topic", "values": ["food", "paintings", "medicine"], "split": "test_ood"},
              "stratify": "topic", "seed": 2}
    definition, _, counts = save(committed, project_id, config)
    assert counts == {"train": 225, "test": 75, "test_ood": 300}
    topics = {f"x{i}": TOPICS[i % 6] for i in range(600)}
    per = Counter((split, topics[e]) for e, split in assignment(committed, definition).items())
    assert {t for (split, t) in per if split == "test_ood"} == {"food", "paintings", "medicine"}
    assert not {t for (split, t) in per if split != "test_ood"} & {"food", "paintings", "medicine"}
    for topic in ("sports", "music", "cities"):  # 100 each: 75 / 25 within every stratum
        assert (per[("train", topic)], per[("test", topic)]) == (75, 25)


@pytest.mark.parametrize("config, message", [
    ({"ratios": {"train": 0.7, "test": 0.2}}, "add up to 0.9"),
    ({"counts": {"../train": 5}}, "become file names"),
    ({"counts": {"train": 5}, "stratify": "topic"}, "stratify works with ratios"),
    ({"ratios": {"train": 1.0}, "rest": "other"}, "needs counts"),
    ({"seed": 1}, "either ratios"),
    ({"counts": {"train": 5}, "held_out": {"field": "topic", "values": ["food"], "split": "train"}}, "once"),
])
def test_bad_definitions_are_explained_and_change_nothing(committed, settings, storage, tmp_path, config, message):
    project_id = finished_project(committed, settings, storage, tmp_path, 10)
    with pytest.raises(Invalid) as caught:
        save(committed, project_id, config)
    assert message in " ".join(caught.value.errors)
    with transaction(committed) as s:
        assert splits.definitions(s, project_id) == []


def test_split_order_survives_storage(committed, settings, storage, tmp_path):
    """JSONB reorders object keys; the definition keeps its splits in the order they were given."""
    project_id = finished_project(committed, settings, storage, tmp_path, 20)
    save(committed, project_id, {"ratios": {"train": 0.8, "validation": 0.1, "test": 0.1}, "held_out": {"field": "topic", "values": ["food"]}})
    with transaction(committed) as s:
        stored = splits.get_definition(s, project_id)
        assert stored.order == ["train", "validation", "test", "test_ood"]
        assert list(stored.ordered_counts) == stored.order and sum(stored.ordered_counts.values()) == 20
        # The stored config (with its order) is accepted again as a new version.
        again = splits.save_definition(s, project_id, dict(stored.config))
        assert again.order == stored.order and again.version == 2


def test_counts_stay_exact_with_groups_crossing_the_cuts(committed, settings, storage, tmp_path):
    project_id = finished_project(committed, settings, storage, tmp_path, 400)
    with transaction(committed) as s:  # 20 groups of 7 planted among 260 single items
        s.execute(sa.text("UPDATE items SET group_id = 'g' || ((substr(external_id, 2)::int) / 7) "
                          "WHERE project_id = :p AND substr(external_id, 2)::int < 140"), {"p": project_id})
    for seed in range(6):
        for config in ({"counts": {"train": 250, "validation": 50, "test": 70}, "seed": seed},
                       {"counts": {"train": 200, "test": 77}, "rest": "extra", "seed": seed},
                       {"counts": {"test": 33}, "seed": seed}):
            definition, _, counts = save(committed, project_id, config)
            expected = dict(config["counts"])
            if "rest" in config:
                expected["extra"] = 400 - sum(expected.values())
            assert counts == expected, (config, counts)
            placed = assignment(committed, definition)
            by_group = defaultdict(set)
            for external, split in placed.items():
                if int(external[1:]) < 140:
                    by_group[int(external[1:]) // 7].add(split)
            assert all(len(s) == 1 for s in by_group.values())
            # Groups are spread by the random order, not all put in the first split.
            if seed == 0 and "rest" not in config and len(config["counts"]) == 3:
                assert len({next(iter(s)) for s in by_group.values()}) >= 2
