"""Screenshots of every annotation screen at 1280×800, as an annotator first sees it (the viewport,
not the whole page): the browser tests drive each screen with real data and keep a picture of it
(`tests/e2e/conftest.py shoot`). Exits 1 when a registered workflow has no picture.

    python bench/screenshots.py [--out screenshots] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.datasets import all_workflows  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots")
    parser.add_argument("--chromium", default=os.environ.get("VLCURATE_CHROMIUM", "/usr/bin/chromium"))
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.png"):
        old.unlink()
    env = {**os.environ, "VLCURATE_SCREENSHOTS": str(out), "VLCURATE_CHROMIUM": args.chromium}
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/e2e"], cwd=ROOT, env=env, check=True)
    names = sorted(t.name for t in all_workflows())
    missing = [n for n in names if not (out / f"{n}.png").exists()]
    for name in names:
        print(f"{name:<24} {'missing' if name in missing else out / (name + '.png')}")
    if missing:
        raise SystemExit(f"no screenshot of {', '.join(missing)}")


if __name__ == "__main__":
    main()
