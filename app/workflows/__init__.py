"""Workflow plugins: importing this package registers every built-in workflow."""

from app.workflows import generic  # noqa: F401  (registers generic.choice)
from app.workflows.registry import all_workflows, get_workflow

__all__ = ["all_workflows", "get_workflow"]
