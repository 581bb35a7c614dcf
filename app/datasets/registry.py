"""The dataset registry: datasets register once; the core finds workflows, datasets and producers by name."""

from __future__ import annotations

from app.datasets.dataset import Dataset
from app.datasets.draft import DraftKind
from app.datasets.suggest import Producer
from app.datasets.workflow import Workflow
from app.errors import Invalid

_DATASETS: dict[str, Dataset] = {}
_WORKFLOWS: dict[str, Workflow] = {}
_OWNERS: dict[str, Dataset] = {}


def register(cls: type[Dataset]) -> type[Dataset]:
    """Register a dataset and its workflows (a class decorator); names must be new."""
    dataset = cls()
    if cls.name in _DATASETS:
        raise ValueError(f"a dataset named {cls.name!r} is registered already")
    workflows = [t() for t in cls.workflows]
    for workflow in workflows:
        if workflow.name in _WORKFLOWS:
            raise ValueError(f"a workflow named {workflow.name!r} is registered already")
    _DATASETS[cls.name] = dataset
    for workflow in workflows:
        _WORKFLOWS[workflow.name], _OWNERS[workflow.name] = workflow, dataset
    return cls


def unregister(name: str) -> None:
    """Forget a dataset and its workflows (for datasets registered by tests)."""
    dataset = _DATASETS.pop(name)
    for workflow in dataset.workflows:
        _WORKFLOWS.pop(workflow.name, None)
        _OWNERS.pop(workflow.name, None)


def get_workflow(name: str) -> Workflow:
    try:
        return _WORKFLOWS[name]
    except KeyError:
        known = ", ".join(sorted(_WORKFLOWS)) or "none"
        raise Invalid(f"Unknown workflow '{name}'. Known workflows: {known}.") from None


def dataset_of(name: str) -> Dataset:
    """The dataset a stage workflow belongs to."""
    get_workflow(name)
    return _OWNERS[name]


def follow_on(name: str) -> tuple[str, ...]:
    """The workflows that come after this one in its dataset's pipeline (a new project adds them)."""
    names = [t.name for t in dataset_of(name).workflows]
    return tuple(names[names.index(name) + 1 :])


def get_dataset(name: str) -> Dataset:
    try:
        return _DATASETS[name]
    except KeyError:
        raise Invalid(f"Unknown dataset '{name}'. Known datasets: {', '.join(sorted(_DATASETS))}.") from None


def all_workflows() -> list[Workflow]:
    return [_WORKFLOWS[k] for k in sorted(_WORKFLOWS)]


def all_datasets() -> list[Dataset]:
    """Every dataset, in the order they were registered (the built-in ones first)."""
    return list(_DATASETS.values())


def producers() -> dict[str, Producer]:
    """Every registered producer by suggestion kind."""
    return {p.kind: p for d in _DATASETS.values() for p in d.producers}


def draft_kinds() -> dict[str, DraftKind]:
    """Every registered draft kind by name."""
    return {k.name: k for d in _DATASETS.values() for k in d.drafts}
