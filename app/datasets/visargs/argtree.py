"""VisArgs reasoning trees: the published step syntax, and the rules a tree must follow.

A step reads "(VP1, CP2 -> IC1): text": input nodes, an arrow, the node it concludes, and its
text. Nodes are visual premises VPn, commonsense premises CPn, intermediate conclusions ICn
and the conclusion C. Pure functions, no database or web imports; messages speak of steps by
their 1-based number, as annotators see them. Hand-written: the syntax is VisArgs' own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_STEP = re.compile(r"^\s*\(\s*(?P<inputs>[^()]*?)\s*->\s*(?P<output>[^()]*?)\s*\)\s*:?\s*(?P<text>.*?)\s*$", re.S)
_NODE = re.compile(r"^(VP|CP|IC)([1-9][0-9]*)$|^C$")


class StepSyntaxError(ValueError):
    pass


@dataclass(frozen=True)
class Step:
    inputs: tuple[str, ...]
    output: str
    text: str


def normalize_node(raw: str) -> str:
    node = re.sub(r"\s+", "", raw).upper()
    if not _NODE.match(node):
        raise StepSyntaxError(f"“{raw.strip()}” is not a node name (VP1, CP2, IC1 or C)")
    return node


def parse_step(line: str) -> Step:
    m = _STEP.match(line or "")
    if not m:
        raise StepSyntaxError(f"“{line.strip()}” does not read as “(VP1, CP1 -> IC1): text”")
    raw_inputs = [p for p in m.group("inputs").split(",")]
    if not any(p.strip() for p in raw_inputs):
        raise StepSyntaxError(f"“{line.strip()}” has no inputs before the arrow")
    inputs = tuple(normalize_node(p) for p in raw_inputs if p.strip())
    output = normalize_node(m.group("output"))
    return Step(inputs, output, " ".join(m.group("text").split()))


def print_step(step: Step) -> str:
    return f"({', '.join(step.inputs)} -> {step.output}): {step.text}"


def parse_steps(lines: list[str]) -> tuple[list[Step], list[str]]:
    """Parse every line; return the steps that parse and one message per line that does not."""
    steps, errors = [], []
    for n, line in enumerate(lines, 1):
        try:
            steps.append(parse_step(line))
        except StepSyntaxError as exc:
            errors.append(f"Step {n}: {exc}.")
    return steps, errors


@dataclass
class TreeCheck:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def _nums(steps: list[int]) -> str:
    words = [str(s) for s in steps]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _kind(node: str) -> str:
    return node[:2] if node != "C" else "C"


def _read_steps(steps: list[Step], n_vp: int, n_cp: int, errors: list[str]) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """Which steps conclude each node and which use it; a step's own mistakes (concluding a premise, an
    input twice, C or its own conclusion as an input, a premise that does not exist) go to `errors`."""
    producers: dict[str, list[int]] = {}
    users: dict[str, list[int]] = {}
    for n, step in enumerate(steps, 1):
        if _kind(step.output) in ("VP", "CP"):
            errors.append(f"Step {n} concludes {step.output}, but a step can only conclude an IC or C.")
        else:
            producers.setdefault(step.output, []).append(n)
        seen = set()
        for node in step.inputs:
            if node in seen:
                errors.append(f"Step {n} uses {node} twice.")
            seen.add(node)
            users.setdefault(node, []).append(n)
            if node == "C":
                errors.append(f"Step {n} uses C; C is the final conclusion and no step can build on it.")
            elif node == step.output:
                errors.append(f"Step {n} uses its own conclusion {node}.")
            elif _kind(node) == "VP" and int(node[2:]) > n_vp:
                errors.append(f"Step {n} uses {node}, but there {'is' if n_vp == 1 else 'are'} only {n_vp} visual premise{'' if n_vp == 1 else 's'}.")
            elif _kind(node) == "CP" and int(node[2:]) > n_cp:
                errors.append(f"Step {n} uses {node}, but there {'is' if n_cp == 1 else 'are'} only {n_cp} commonsense premise{'' if n_cp == 1 else 's'}.")
    return producers, users


def validate_tree(steps: list[Step], n_vp: int, n_cp: int, *, unused: str = "error") -> TreeCheck:
    """Check a reasoning tree over `n_vp` visual and `n_cp` commonsense premises.

    Errors: no step or several steps conclude C; an IC concluded twice, never concluded but
    used, or concluded but never used; a premise or conclusion as a step's output; an input
    naming a premise that does not exist; C used as an input; a step using its own output;
    steps that depend on each other in a cycle. Unused premises are errors or warnings
    (`unused` = "error" or "warning").
    """
    check = TreeCheck()
    if not steps:
        check.errors.append("There are no reasoning steps; add at least the step that concludes C.")
        return check
    producers, users = _read_steps(steps, n_vp, n_cp, check.errors)

    concluding = producers.get("C", [])
    if not concluding:
        check.errors.append("No step concludes C: the last step should read “(… -> C): …”.")
    elif len(concluding) > 1:
        check.errors.append(f"Steps {_nums(concluding)} all conclude C; exactly one step may.")
    for node in sorted((k for k in producers if _kind(k) == "IC"), key=lambda k: int(k[2:])):
        if len(producers[node]) > 1:
            check.errors.append(f"{node} is concluded by steps {_nums(producers[node])}; each IC is concluded once.")
        if node not in users:
            check.errors.append(f"{node} (step {producers[node][0]}) is never used; use it in a later step or conclude C.")
    for node in sorted((k for k in users if _kind(k) == "IC"), key=lambda k: int(k[2:])):
        if node not in producers:
            check.errors.append(f"Step {_nums(users[node])} uses {node}, but no step concludes {node}.")

    cycle = _find_cycle(steps)
    if cycle:
        check.errors.append(f"Steps {_nums(sorted(set(cycle)))} depend on each other in a circle; a tree has no cycles.")

    missing = [f"VP{i}" for i in range(1, n_vp + 1) if f"VP{i}" not in users]
    missing += [f"CP{i}" for i in range(1, n_cp + 1) if f"CP{i}" not in users]
    if missing:
        message = f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not used by any step."
        (check.errors if unused == "error" else check.warnings).append(message)
    return check


def _find_cycle(steps: list[Step]) -> list[int] | None:
    """Step numbers on a cycle of "step uses an IC concluded by step", if there is one."""
    producer = {}
    for n, step in enumerate(steps, 1):
        producer.setdefault(step.output, n)
    edges = {n: [producer[i] for i in step.inputs if i in producer and _kind(i) == "IC"] for n, step in enumerate(steps, 1)}
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    path: list[int] = []

    def visit(n: int) -> list[int] | None:
        state[n] = 1
        path.append(n)
        for m in edges[n]:
            if state.get(m) == 1:
                return path[path.index(m) :]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        path.pop()
        state[n] = 2
        return None

    for n in edges:
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


@dataclass
class TreeNode:
    """A node of the rendered tree: its id, its text, and the nodes it rests on."""

    node: str
    text: str
    children: list[TreeNode] = field(default_factory=list)


def render_tree(steps: list[Step], vps: list[str], cps: list[str]) -> TreeNode | None:
    """The tree from C down to the premises, for display (None without a step concluding C, or on a cycle)."""
    if _find_cycle(steps):
        return None
    by_output = {s.output: s for s in steps}
    if "C" not in by_output:
        return None

    def build(node: str, depth: int) -> TreeNode:
        if node.startswith("VP") and int(node[2:]) <= len(vps):
            return TreeNode(node, vps[int(node[2:]) - 1])
        if node.startswith("CP") and int(node[2:]) <= len(cps):
            return TreeNode(node, cps[int(node[2:]) - 1])
        step = by_output.get(node)
        if step is None or depth > len(steps):
            return TreeNode(node, "(missing)")
        return TreeNode(node, step.text, [build(i, depth + 1) for i in step.inputs])

    return build("C", 0)
