"""Dataset plugins: one package per dataset; importing this package registers the built-in ones.

Adding a dataset is a package `app/datasets/<name>/` (its `dataset.py` declares it with
`@register`), its templates under `templates/datasets/<name>/`, and one line in BUILTIN.
"""

from importlib import import_module

from app.datasets.registry import (
    all_datasets,
    all_workflows,
    dataset_of,
    draft_kinds,
    follow_on,
    get_dataset,
    get_workflow,
    producers,
)

BUILTIN = ("generic", "colorswap", "wikido", "visargs", "voldoger", "artwork")

for _name in BUILTIN:
    import_module(f"app.datasets.{_name}.dataset")

__all__ = ["all_datasets", "all_workflows", "dataset_of", "draft_kinds", "follow_on", "get_dataset", "get_workflow", "producers"]
