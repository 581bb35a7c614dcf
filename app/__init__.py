"""vlcurate: curate vision-language datasets with humans in the loop."""

from pathlib import Path

__version__ = "0.1.0"

# Templates, static files and migrations live beside the package at the repository top level.
ROOT = Path(__file__).resolve().parent.parent
