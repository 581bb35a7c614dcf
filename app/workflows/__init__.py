"""Workflow plugins: importing this package registers every built-in workflow."""

from app.workflows import colorswap, generic, visargs, visargs_boxes, wikido  # noqa: F401  (importing registers)
from app.workflows.registry import all_workflows, get_workflow

__all__ = ["all_workflows", "get_workflow"]
