"""Progress bars of long calls: tqdm's when it is installed and wanted (the `datasets` extra brings it)."""

from __future__ import annotations

from typing import Any

from vlcurate.models import LeakJob


def progress_bar(enabled: bool, total: int | None, what: str, unit: str = "rec") -> Any:
    """A tqdm bar when tqdm is installed and wanted, else None."""
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=what, unit=unit)


def show_step(bar: Any, job: LeakJob) -> None:
    """Show a job's step on a tqdm bar: its name, and done of total where it counts more than one."""
    if bar is None:
        return
    step = job.step or job.status
    if bar.desc != step:
        bar.set_description(step)
        bar.reset(total=job.total if job.total > 1 else None)
    bar.n = job.done if job.total > 1 else 0
    bar.refresh()
