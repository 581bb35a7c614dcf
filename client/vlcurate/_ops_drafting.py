"""Drafting with a model on the server: the stage's draft kinds and prompt versions, runs over its items,
and the versions' evaluation against what people finished."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from vlcurate._ops import Operations
from vlcurate._progress import progress_bar
from vlcurate._protocol import Call, Op, Sleep
from vlcurate.errors import VlcurateError
from vlcurate.models import DraftEvaluation, DraftKindOut, PromptOut, RunOut

PromptRefs = str | Iterable[int | PromptOut]  # "1,2", or prompt ids, or PromptOut rows


class DraftingOps(Operations):
    """Prompt versions, runs and evaluation."""

    def _draft_kinds(self, stage: int) -> Op[list[DraftKindOut]]:
        reply = yield Call("GET", f"/stages/{stage}/draft-kinds")
        return [DraftKindOut.model_validate(k) for k in reply.json()]

    def _draft_prompts(self, stage: int) -> Op[list[PromptOut]]:
        reply = yield Call("GET", f"/stages/{stage}/prompts")
        return [PromptOut.model_validate(p) for p in reply.json()]

    def _draft_prompt(self, stage: int, draft_kind: str, drafter: str, fields: dict[str, Any]) -> Op[PromptOut]:
        body = {"draft_kind": draft_kind, "drafter": drafter, **{k: v for k, v in fields.items() if v is not None}}
        reply = yield Call("POST", f"/stages/{stage}/prompts", json=body)
        return PromptOut.model_validate(reply.json())

    def _prompt(self, prompt_id: int, run: int | None = None) -> Op[PromptOut]:
        reply = yield Call("GET", f"/prompts/{prompt_id}", params={} if run is None else {"run": run})
        return PromptOut.model_validate(reply.json())

    def _draft(self, prompt_id: int, scope: str = "missing", sample: int | None = None, seed: int = 0, *, wait: bool = False,
               poll: float = 1.0, timeout: float | None = None, progress: bool = False) -> Op[RunOut | PromptOut]:
        """Start a run; with `wait`, follow its jobs until none waits or runs and return the version then."""
        reply = yield Call("POST", f"/prompts/{prompt_id}/runs", json={"scope": scope, "sample": sample, "seed": seed})
        run = RunOut.model_validate(reply.json())
        if not wait:
            return run
        deadline = None if timeout is None else time.monotonic() + timeout
        bar = progress_bar(progress, run.items, f"draft {prompt_id}")
        try:
            while True:
                prompt = yield from self._prompt(prompt_id, run.run_id)
                assert prompt.run is not None  # asked for a run: it comes with its progress
                if bar is not None:
                    bar.n = prompt.run.done
                    bar.refresh()
                if not prompt.run.active:
                    break
                if deadline is not None and time.monotonic() > deadline:
                    raise VlcurateError(f"Prompt {prompt_id}'s run still has {prompt.run.waiting + prompt.run.running} jobs "
                                        f"waiting or running after {timeout} s ({prompt.run.done}/{prompt.run.items} items).")
                yield Sleep(poll)
        finally:
            if bar is not None:
                bar.close()
        if prompt.run.failed:
            raise VlcurateError(f"{prompt.run.failed} of {prompt.run.jobs} draft jobs of prompt {prompt_id} failed: "
                                + "; ".join(prompt.run.errors))
        return prompt

    def _draft_evaluation(self, stage: int, prompts: PromptRefs, gold: bool = False, samples: int = 1000, seed: int = 0,
                          parquet: str | Path | None = None) -> Op[DraftEvaluation]:
        if isinstance(prompts, str):
            ids = prompts
        else:
            ids = ",".join(str(getattr(p, "id", p)) for p in prompts)  # ids, or PromptOut rows
        params = {"prompts": ids, "gold": gold}
        reply = yield Call("GET", f"/stages/{stage}/drafts/evaluation", params={**params, "samples": samples, "seed": seed})
        found = DraftEvaluation.model_validate(reply.json())
        if parquet is not None:
            yield Call("GET", f"/stages/{stage}/drafts/evaluation.parquet", params=params, download_to=Path(parquet))
        return found
