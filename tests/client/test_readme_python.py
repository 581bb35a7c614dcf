"""The README's "From Python" section runs as written, against a live server (only its address and
token are swapped for the test server's)."""

from __future__ import annotations

import re

import pytest

from app import ROOT
from app.db import transaction
from tests import factories


def python_blocks() -> list[str]:
    section = (ROOT / "README.md").read_text().split("\n## From Python\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_section_has_the_notebook_example():
    code = "\n".join(python_blocks())
    for needed in ("from vlcurate import Client", "push_records", "push_suggestions", "submit", "client.finals"):
        assert needed in code


@pytest.mark.committed
def test_from_python_blocks_run_against_a_live_server(live_server, committed, tmp_path, monkeypatch):
    with transaction(committed) as s:
        token = factories.token(s, factories.user(s, "readme-admin", "admin"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    namespace: dict = {}
    for block in python_blocks():
        code = block.replace('"http://127.0.0.1:8000"', repr(live_server)).replace('"vlc_your_admin_token"', repr(token))
        exec(compile(code, "README.md (From Python)", "exec"), namespace)  # noqa: S102
    namespace["client"].close()
