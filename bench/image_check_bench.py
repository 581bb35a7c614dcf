"""The import's per-image cost outside the file system: reading a member of the pushed zip and
checking the image, for the client benchmark's PNGs (bench/client_bench.py), CPU µs an image.

    python bench/image_check_bench.py [--images 2000] [--pillow]

--pillow checks through Pillow's decode only (what every PNG went through before `_whole_png`)."""

from __future__ import annotations

import argparse
import io
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from client_bench import png  # noqa: E402

from app import images  # noqa: E402
from app.services.imports import import_sources  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--pillow", action="store_true")
    args = parser.parse_args()
    if args.pillow:
        images._whole_png = lambda data, max_pixels: None
    data = [png(i) for i in range(args.images)]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for i, d in enumerate(data):
            zf.writestr(f"img/{i}.png", d)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        infos = zf.infolist()
        for _ in range(3):
            start = time.process_time()
            for info in infos:
                if import_sources._plain_member(zf, info) is None:
                    with zf.open(info) as fh:
                        fh.read()
            read = time.process_time() - start
            start = time.process_time()
            for d in data:
                images.check_image(d, max_bytes=10**7, max_pixels=10**8)
            check = time.process_time() - start
            print(f"read a zip member {read / len(data) * 1e6:.1f} µs, check the image {check / len(data) * 1e6:.1f} µs (CPU, an image)")


if __name__ == "__main__":
    main()
