"""The client's types hold: mypy (strict, as client/pyproject.toml configures it) passes over the
package; every public name has a docstring and every public method a return annotation; the async
client has every method of the sync one with the same parameters and return types; `py.typed` ships."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import vlcurate
from vlcurate import AsyncClient, Client

CLIENT = Path(vlcurate.__file__).resolve().parent.parent


def public_methods(cls: type) -> dict[str, object]:
    return {name: member for name, member in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_")}


def test_mypy_strict_passes_over_the_client():
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(CLIENT / "pyproject.toml"), "vlcurate"], cwd=CLIENT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "strict = true" in (CLIENT / "pyproject.toml").read_text()


def test_every_public_method_has_a_return_type_and_a_docstring():
    missing = []
    for cls in (Client, AsyncClient):
        for name, method in public_methods(cls).items():
            if inspect.signature(method).return_annotation is inspect.Signature.empty:
                missing.append(f"{cls.__name__}.{name}: no return type")
            if not (inspect.getdoc(method) or "").strip():
                missing.append(f"{cls.__name__}.{name}: no docstring")
    for name in vlcurate.__all__:
        if not (getattr(vlcurate, name).__doc__ or "").strip():
            missing.append(f"vlcurate.{name}: no docstring")
    assert not missing, "\n".join(missing)
    assert len(public_methods(Client)) >= 40


def test_the_async_client_matches_the_sync_one():
    sync, both = public_methods(Client), public_methods(AsyncClient)
    assert set(sync) - {"close"} == set(both) - {"aclose"}
    for name, method in sync.items():
        if name == "close":
            continue
        mine, theirs = inspect.signature(method), inspect.signature(both[name])
        assert list(mine.parameters.values()) == list(theirs.parameters.values()), name
        iterating = str(mine.return_annotation).startswith("Iterator[")
        expected = mine.return_annotation.replace("Iterator[", "AsyncIterator[") if iterating else mine.return_annotation
        assert theirs.return_annotation == expected, name
        assert inspect.iscoroutinefunction(both[name]) is not iterating, name


def test_py_typed_ships_with_the_package():
    assert (CLIENT / "vlcurate" / "py.typed").is_file()
    assert 'vlcurate = ["py.typed"]' in (CLIENT / "pyproject.toml").read_text()
