"""Finding duplicates without comparing every pair: perceptual image hashes bucketed by band
(multi-index hashing), normalised texts by exact key, near texts by MinHash LSH; groups by union-find.

Pure functions over plain data (no DB, no web). Perceptual hashes come from `imagehash` and MinHash
/ LSH from `datasketch`; what is hand-written is the banding of 64-bit hashes, because neither
library has an index for Hamming distance: by the pigeonhole principle two hashes within distance t
agree exactly on at least one of t + 1 disjoint bit bands, so candidates are only the pairs that
share a band value, and each candidate is then checked exactly.
"""

from __future__ import annotations

import io
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

PHASH_BITS = 64
_BYTE_BITS = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def popcount(values: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 (numpy >= 2 has it built in; older numpy counts byte by byte)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(values)
    return _BYTE_BITS[values.view(np.uint8).reshape(-1, 8)].sum(axis=1)


def phash(data: bytes) -> int:
    """The 64-bit DCT perceptual hash of an image (robust to re-encoding, resizing and small crops),
    as a signed 64-bit integer (what a BIGINT column holds)."""
    import imagehash
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        # pHash looks at a 32 x 32 grey thumbnail: a JPEG is decoded straight at a reduced scale
        # (a no-op for other formats), several times faster than decoding every pixel.
        image.draft("RGB", (128, 128))
        bits = imagehash.phash(image.convert("RGB")).hash.flatten()
    value = int("".join("1" if b else "0" for b in bits), 2)
    return value - (1 << 64) if value >= 1 << 63 else value


class UnionFind:
    def __init__(self):
        self.parent: dict = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def groups(self) -> list[list]:
        out = defaultdict(list)
        for x in self.parent:
            out[self.find(x)].append(x)
        return [sorted(g) for g in out.values() if len(g) > 1]


def near_hash_pairs(keys: Sequence, hashes: Sequence[int], max_distance: int) -> Iterable[tuple]:
    """Pairs of keys whose 64-bit hashes differ in at most `max_distance` bits, found through
    max_distance + 1 bands: only pairs that share a band value are compared."""
    if len(hashes) < 2:
        return
    values = np.asarray(hashes, dtype=np.int64).view(np.uint64)
    bands = max_distance + 1
    edges = np.linspace(0, PHASH_BITS, bands + 1).astype(int)
    seen: set[tuple[int, int]] = set()
    for lo, hi in zip(edges[:-1], edges[1:]):
        if hi <= lo:
            continue
        mask = np.uint64((1 << (hi - lo)) - 1)
        band = (values >> np.uint64(lo)) & mask
        order = np.argsort(band, kind="stable")
        sorted_band = band[order]
        starts = np.flatnonzero(np.r_[True, sorted_band[1:] != sorted_band[:-1]])
        ends = np.r_[starts[1:], len(order)]
        for s, e in zip(starts, ends):
            if e - s < 2:
                continue
            members = order[s:e]
            i, j = np.triu_indices(len(members), 1)
            a, b = members[i], members[j]
            close = popcount(values[a] ^ values[b]) <= max_distance
            for x, y in zip(a[close].tolist(), b[close].tolist()):
                pair = (x, y) if x < y else (y, x)
                if pair not in seen:
                    seen.add(pair)
                    yield keys[pair[0]], keys[pair[1]]


_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
_SPACE = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """Case, accents' composition, punctuation and spacing folded away: "A red cat." == "a red cat"."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return _SPACE.sub(" ", _PUNCT.sub(" ", text)).strip()


def shingles(text: str, n: int = 3) -> set[str]:
    words = text.split()
    if len(words) < n:
        return {" ".join(words)}
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


def _hash32(value: str) -> int:
    return hash(value) & 0xFFFFFFFF


def near_text_pairs(keys: Sequence, texts: Sequence[str], threshold: float = 0.8, num_perm: int = 32) -> Iterable[tuple]:
    """Pairs of keys whose normalised texts have word 3-shingle Jaccard `threshold` or more, through
    datasketch's MinHash LSH: candidates share an LSH band, each is then checked exactly. The index
    is tuned 0.3 below `threshold` (8 bands of 4 at 0.8), so a pair at the threshold is a candidate
    with probability 0.985 rather than the 0.29 of an index tuned at the threshold itself."""
    from datasketch import MinHash, MinHashLSH

    sets = [shingles(t) for t in texts]
    lsh = MinHashLSH(threshold=max(0.3, threshold - 0.3), num_perm=num_perm)
    # One MinHash refilled per text: the LSH index keeps each text's band keys, not the object, and
    # building a MinHash per text (its permutations parsed each time) is most of the cost. Python's
    # own string hash is fast and consistent within the one process a report runs in.
    m = MinHash(num_perm=num_perm, hashfunc=_hash32)
    for n, items in enumerate(sets):
        m.hashvalues = m._init_hashvalues(num_perm)
        m.update_batch(items)
        for other in lsh.query(m):
            a, b = sets[n], sets[other]
            if len(a & b) / len(a | b) >= threshold:
                yield keys[other], keys[n]
        lsh.insert(n, m, check_duplication=False)
