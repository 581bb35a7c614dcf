"""The workflow registry: modules register their workflow class; the core looks them up by stage."""

from app.errors import Invalid
from app.workflows.base import Workflow

_WORKFLOWS: dict[str, Workflow] = {}


def register(cls: type[Workflow]) -> type[Workflow]:
    _WORKFLOWS[cls.name] = cls()
    return cls


def get_workflow(name: str) -> Workflow:
    try:
        return _WORKFLOWS[name]
    except KeyError:
        known = ", ".join(sorted(_WORKFLOWS)) or "none"
        raise Invalid(f"Unknown workflow '{name}'. Known workflows: {known}.") from None


def all_workflows() -> list[Workflow]:
    return [_WORKFLOWS[k] for k in sorted(_WORKFLOWS)]
