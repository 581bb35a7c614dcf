"""VisArgs step syntax and tree rules: round trips on varied strings, and each broken tree's message."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from app.datasets.visargs.argtree import (
    Step,
    StepSyntaxError,
    parse_step,
    parse_steps,
    print_step,
    render_tree,
    validate_tree,
)

NODES = st.builds(lambda k, n: f"{k}{n}", st.sampled_from(["VP", "CP", "IC"]), st.integers(1, 12))
TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=60).map(lambda t: " ".join(t.split()))


@given(st.lists(NODES, min_size=1, max_size=5), st.one_of(st.just("C"), NODES.filter(lambda n: n.startswith("IC"))), TEXT)
def test_print_then_parse_is_the_identity(inputs, output, text):
    step = Step(tuple(inputs), output, text)
    assert parse_step(print_step(step)) == step


@given(
    st.lists(NODES, min_size=1, max_size=4),
    st.sampled_from(["C", "IC1", "ic2"]),
    TEXT,
    st.sampled_from(["({i} -> {o}): {t}", "({i}->{o}):{t}", "( {i} -> {o} ) : {t}", "({i} -> {o}) {t}", "({i}  ->  {o}):   {t}  "]),
    st.sampled_from([", ", ",", " , "]),
    st.booleans(),
)
def test_varied_spellings_parse_to_the_printed_form(inputs, output, text, layout, sep, lower):
    # Written without the colon, a text that starts with one reads that colon as the separator.
    assume(":" in layout or not text.startswith(":"))
    raw = layout.format(i=sep.join(x.lower() if lower else x for x in inputs), o=output, t=text)
    step = parse_step(raw)
    assert step.inputs == tuple(inputs) and step.output == output.upper() and step.text == text
    assert parse_step(print_step(step)) == step


def test_text_may_hold_arrows_and_brackets():
    step = parse_step("(VP1, CP1 -> IC1): the ad (a bottle -> a tree) says: recycle")
    assert step.text == "the ad (a bottle -> a tree) says: recycle" and step.inputs == ("VP1", "CP1")


@pytest.mark.parametrize(
    "line, message",
    [
        ("VP1 -> C: text", "does not read as"),
        ("( -> C): text", "no inputs"),
        ("(VP1, XP2 -> C): text", "“XP2” is not a node name"),
        ("(VP1 -> IC0): text", "“IC0” is not a node name"),
    ],
)
def test_syntax_errors_say_what_is_wrong(line, message):
    with pytest.raises(StepSyntaxError, match=message):
        parse_step(line)
    assert parse_steps(["(VP1 -> C): ok", line])[1][0].startswith("Step 2: ")


VALID = ["(VP1, CP1 -> IC1): a", "(VP2, CP2 -> IC2): b", "(IC1, IC2 -> C): c"]


def steps(lines):
    parsed, errors = parse_steps(lines)
    assert not errors
    return parsed


def test_a_valid_tree_and_its_rendering():
    check = validate_tree(steps(VALID), 2, 2)
    assert check.ok and not check.warnings
    tree = render_tree(steps(VALID), ["vp one", "vp two"], ["cp one", "cp two"])
    assert tree.node == "C" and [c.node for c in tree.children] == ["IC1", "IC2"]
    assert [g.text for g in tree.children[0].children] == ["vp one", "cp one"]


@pytest.mark.parametrize(
    "lines, n_vp, n_cp, message",
    [
        (["(VP1, CP1 -> IC1): a", "(IC1, VP2, CP2 -> IC2): b"], 2, 2, "No step concludes C"),
        (VALID + ["(IC1 -> C): d"], 2, 2, "Steps 3 and 4 all conclude C"),
        (["(VP1, CP1 -> IC1): a", "(VP2, CP2 -> IC1): b", "(IC1 -> C): c"], 2, 2, "IC1 is concluded by steps 1 and 2"),
        (["(VP1, CP1 -> IC1): a", "(VP2, CP2 -> IC2): b", "(IC1 -> C): c"], 2, 2, "IC2 (step 2) is never used"),
        (["(VP1, CP1 -> IC1): a", "(IC1, IC3, VP2, CP2 -> C): c"], 2, 2, "Step 2 uses IC3, but no step concludes IC3"),
        (["(VP1, CP1, VP3 -> IC1): a", "(IC1, VP2, CP2 -> C): c"], 2, 2, "Step 1 uses VP3, but there are only 2 visual premises"),
        (["(VP1, CP4 -> IC1): a", "(IC1, VP2 -> C): c"], 2, 1, "Step 1 uses CP4, but there is only 1 commonsense premise"),
        (["(VP1, IC2 -> IC1): a", "(IC1, CP1 -> IC2): b", "(IC2, VP2 -> C): c"], 2, 1, "Steps 1 and 2 depend on each other in a circle"),
        (["(VP1, CP1 -> IC1): a", "(IC1, C -> C): c"], 1, 1, "Step 2 uses C"),
        (["(VP1, CP1 -> VP2): a", "(VP2 -> C): c"], 2, 1, "Step 1 concludes VP2"),
        (["(VP1, VP1, CP1 -> C): a"], 1, 1, "Step 1 uses VP1 twice"),
        (["(VP1, CP1 -> C): a"], 2, 2, "VP2, CP2 are not used by any step"),
        ([], 1, 0, "There are no reasoning steps"),
    ],
)
def test_each_broken_tree_is_named(lines, n_vp, n_cp, message):
    check = validate_tree(steps(lines), n_vp, n_cp)
    assert not check.ok
    assert any(message in e for e in check.errors), check.errors


def test_unused_premises_can_be_warnings():
    check = validate_tree(steps(["(VP1, CP1 -> C): a"]), 2, 1, unused="warning")
    assert check.ok and check.warnings == ["VP2 is not used by any step."]
