"""Leakage benchmark: perceptual-hash time per stored image, and the report's search over 100K images
and 384K captions with its time and peak RSS. Targets: report under 60 s and 1 GB. No database.

Hashing is timed on `--hash-sample` real JPEGs (decoded, hashed: as the leaks job does for an image
stored without a hash; the import hashes in the decode that checks the image, see
`bench/import_bench.py --images`) and extrapolated to `--images`, unless `--hash-all`. The search runs on `--images` 64-bit
hashes (random, as distinct photos' are, with `--planted` near-duplicate pairs) and `--captions`
captions (random words, with planted copies differing in case and punctuation, and planted near
copies one word longer): the banded Hamming search, normalised exact texts, MinHash LSH and
union-find, exactly as `app.services.leaks.leaks` calls them. The optional MiniLM / CLIP matchers are
not timed here (they cost what embedding the texts and images costs on the worker's device).

    nice -n -10 python bench/leaks_bench.py [--images 100000] [--captions 384000] [--hash-sample 2000] [--hash-all]

Measured on the 2-core development machine shared with other work (load average 6.2):
100,000 images and 384,000 captions in 9.3 s (near images 0.8 s, normalising 1.5 s, MinHash LSH
6.9 s), peak RSS 517 MB (125 MB before the search); 10,000 images and 38,400 captions in 0.6 s,
165 MB; hashing 100,000 stored images once ~150 s on one core. Through `datasketch` (one MinHash
update and one LSH insert and query per text) the same report took 354 s and 2,004 MB.
"""

from __future__ import annotations

import argparse
import io
import random
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app import leakage  # noqa: E402

WORDS = [f"w{i}" for i in range(5000)]


def jpeg(rng: np.random.Generator) -> bytes:
    from PIL import Image

    small = Image.fromarray(rng.integers(0, 256, (6, 8, 3), dtype=np.uint8), "RGB")
    out = io.BytesIO()
    small.resize((640, 480), Image.BICUBIC).save(out, "JPEG", quality=85)
    return out.getvalue()


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=100_000)
    parser.add_argument("--captions", type=int, default=384_000)
    parser.add_argument("--hash-sample", type=int, default=2000)
    parser.add_argument("--hash-all", action="store_true")
    parser.add_argument("--planted", type=int, default=300)
    parser.add_argument("--distance", type=int, default=6)
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    n_hash = args.images if args.hash_all else min(args.hash_sample, args.images)
    images = [jpeg(rng) for _ in range(min(n_hash, 200))]  # distinct bytes enough to defeat caches
    t = time.perf_counter()
    for k in range(n_hash):
        leakage.phash(images[k % len(images)])
    per = (time.perf_counter() - t) / n_hash
    note = "" if args.hash_all else f" (extrapolated from {n_hash:,} 640x480 JPEGs)"
    print(f"hash {args.images:,} stored images once: {per * args.images:.1f} s{note}, {per * 1000:.2f} ms per image, 1 core")

    hashes = [int(v) for v in rng.integers(-(2**63), 2**63 - 1, args.images, dtype=np.int64)]
    for k in range(min(args.planted, args.images // 2)):
        flipped = np.int64(hashes[k]).view(np.uint64) ^ np.uint64(1 << int(rng.integers(64)))
        hashes[-1 - k] = int(np.uint64(flipped).view(np.int64))
    r = random.Random(0)
    captions = [" ".join(r.choices(WORDS, k=r.randint(8, 20))) for _ in range(args.captions)]
    planted = min(args.planted, args.captions // 4)
    for k in range(planted):
        captions[-1 - k] = captions[k].upper() + "!"  # the same once normalised
        captions[-1 - planted - k] = captions[planted + k] + " extra"  # one shingle more: Jaccard >= 0.85
    base_rss = rss_mb()

    started = time.perf_counter()
    groups = leakage.UnionFind()
    t = time.perf_counter()
    near = 0
    for a, b in leakage.near_hash_pairs(list(range(len(hashes))), hashes, args.distance):
        groups.union(("i", a), ("i", b))
        near += 1
    t_images = time.perf_counter() - t
    t = time.perf_counter()
    by_text: dict[str, list[int]] = defaultdict(list)
    for n, c in enumerate(captions):
        by_text[leakage.normalise_text(c)].append(n)
    t_normalise = time.perf_counter() - t
    same = 0
    for ids in by_text.values():
        for a, b in zip(ids, ids[1:]):
            groups.union(("t", a), ("t", b))
            same += 1
    t_exact = time.perf_counter() - t
    t = time.perf_counter()
    keys = list(by_text)
    near_texts = 0
    for x, y in leakage.near_text_pairs(keys, keys, 0.8):
        groups.union(("t", by_text[x][0]), ("t", by_text[y][0]))
        near_texts += 1
    t_minhash = time.perf_counter() - t
    found = len(groups.groups())
    total = time.perf_counter() - started
    print(f"near images: {near:,} pairs within {args.distance} bits among {args.images:,} hashes in {t_images:.1f} s")
    print(f"texts: normalised in {t_normalise:.1f} s, {same:,} normalised duplicates in {t_exact:.1f} s in all; "
          f"MinHash LSH near pairs {near_texts:,} (of {planted:,} planted) in {t_minhash:.1f} s")
    print(f"report over {args.images:,} images and {args.captions:,} captions: {found:,} groups in {total:.1f} s "
          f"(target < 60 s); peak RSS {rss_mb():.0f} MB (target < 1024 MB; {base_rss:.0f} MB before the search)")


if __name__ == "__main__":
    main()
