"""The dataset registry: datasets register once; the core finds tasks, datasets and producers by name."""

from __future__ import annotations

from app.datasets.dataset import Dataset
from app.bias.probes import Probe
from app.datasets.draft import DraftKind
from app.datasets.suggest import Producer
from app.datasets.task import Task
from app.errors import Invalid

_DATASETS: dict[str, Dataset] = {}
_TASKS: dict[str, Task] = {}
_OWNERS: dict[str, Dataset] = {}


def register(cls: type[Dataset]) -> type[Dataset]:
    """Register a dataset and its tasks (a class decorator); names must be new."""
    dataset = cls()
    if cls.name in _DATASETS:
        raise ValueError(f"a dataset named {cls.name!r} is registered already")
    tasks = [t() for t in cls.tasks]
    for task in tasks:
        if task.name in _TASKS:
            raise ValueError(f"a task named {task.name!r} is registered already")
    _DATASETS[cls.name] = dataset
    for task in tasks:
        _TASKS[task.name], _OWNERS[task.name] = task, dataset
    return cls


def unregister(name: str) -> None:
    """Forget a dataset and its tasks (for datasets registered by tests)."""
    dataset = _DATASETS.pop(name)
    for task in dataset.tasks:
        _TASKS.pop(task.name, None)
        _OWNERS.pop(task.name, None)


def get_task(name: str) -> Task:
    try:
        return _TASKS[name]
    except KeyError:
        known = ", ".join(sorted(_TASKS)) or "none"
        raise Invalid(f"Unknown workflow '{name}'. Known workflows: {known}.") from None


def dataset_of(task_name: str) -> Dataset:
    """The dataset a stage task belongs to."""
    get_task(task_name)
    return _OWNERS[task_name]


def follow_on(task_name: str) -> tuple[str, ...]:
    """The tasks that come after this one in its dataset's pipeline (a new project adds them)."""
    names = [t.name for t in dataset_of(task_name).tasks]
    return tuple(names[names.index(task_name) + 1 :])


def get_dataset(name: str) -> Dataset:
    try:
        return _DATASETS[name]
    except KeyError:
        raise Invalid(f"Unknown dataset '{name}'. Known datasets: {', '.join(sorted(_DATASETS))}.") from None


def all_tasks() -> list[Task]:
    return [_TASKS[k] for k in sorted(_TASKS)]


def all_datasets() -> list[Dataset]:
    """Every dataset, in the order they were registered (the built-in ones first)."""
    return list(_DATASETS.values())


def producers() -> dict[str, Producer]:
    """Every registered producer by suggestion kind."""
    return {p.kind: p for d in _DATASETS.values() for p in d.producers}


def draft_kinds() -> dict[str, DraftKind]:
    """Every registered draft kind by name."""
    return {k.name: k for d in _DATASETS.values() for k in d.drafts}


def probe_for(workflow: str) -> Probe | None:
    """The probe a dataset declares for the task, if any."""
    return next((p for d in _DATASETS.values() for p in d.probes if p.workflow == workflow), None)
