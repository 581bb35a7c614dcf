"""Finding duplicates without comparing every pair: perceptual image hashes bucketed by band
(multi-index hashing), normalised texts by exact key, near texts by MinHash LSH, near embeddings by
random-hyperplane LSH; groups by union-find.

Pure functions over plain data (no DB, no web). Perceptual hashes come from `imagehash`. What is
hand-written, and why:
- the banding of 64-bit hashes: no library has an index for Hamming distance. By the pigeonhole
  principle two hashes within distance t agree exactly on at least one of t + 1 disjoint bit bands,
  so candidates are only the pairs that share a band value, and each candidate is checked exactly;
- MinHash LSH in numpy instead of `datasketch`: the library costs one Python call per text and per
  shingle (a MinHash object, its update, an index insert and query), far too slow and large at
  hundreds of thousands of captions (README, leaks); one numpy pass over all texts' shingle hashes per permutation, and bands bucketed by
  sorting, do the same search in seconds and tens of MB (see `near_text_pairs`);
- SimHash bands for embeddings (MiniLM texts, CLIP images): the same bucketing, exact cosine after.
"""

from __future__ import annotations

import hashlib
import io
import itertools
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


# pHash looks at a 32 x 32 grey thumbnail: a JPEG is decoded straight at a reduced scale, at least
# this size (a no-op for other formats), several times faster than decoding every pixel.
PHASH_DRAFT = (128, 128)


def phash(data: bytes) -> int:
    """The 64-bit DCT perceptual hash of an image (robust to re-encoding, resizing and small crops),
    as a signed 64-bit integer (what a BIGINT column holds)."""
    import imagehash
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        image.draft("RGB", PHASH_DRAFT)
        bits = imagehash.phash(image if image.mode == "RGB" else image.convert("RGB")).hash.flatten()
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
# ASCII text (most captions) takes a faster path with the same result: NFKC leaves ASCII as it is,
# casefold() is lower() there, and one translate table does what the punctuation pattern does.
_ASCII_PUNCT = {c: " " for c in range(128) if not (chr(c).isalnum() or chr(c) == "_" or chr(c).isspace())}


def normalise_text(text: str) -> str:
    """Case, accents' composition, punctuation and spacing folded away: "A red cat." == "a red cat"."""
    if text.isascii():
        return " ".join(text.lower().translate(_ASCII_PUNCT).split())
    text = unicodedata.normalize("NFKC", text).casefold()
    return _SPACE.sub(" ", _PUNCT.sub(" ", text)).strip()


def shingles(text: str, n: int = 3) -> set[str]:
    """Word n-shingles of a text (one shingle, the text itself, when it has fewer than n words)."""
    words = text.split()
    if len(words) < n:
        return {" ".join(words)}
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


# -- MinHash LSH over all texts at once ------------------------------------------------------------

_PRIME = np.uint64(4294967291)  # the largest prime below 2**32: (a * x + b) stays below 2**64
_PAD = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F], dtype=np.uint64)  # the missing words of a short text
_CHUNK = 50_000  # texts tokenised at a time: the Python strings of one chunk are all that is held


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a fixed, well-spread 64-bit hash of 64-bit values (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = z ^ (z >> np.uint64(30))
        z = z * np.uint64(0xBF58476D1CE4E5B9)
        z = z ^ (z >> np.uint64(27))
        z = z * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _shingle(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The hash of three words in this order (wrapping 64-bit arithmetic)."""
    with np.errstate(over="ignore"):
        return _mix(_mix(_mix(a) + b) + c)


def _word_hash(word: str) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def shingle_hashes(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The word 3-shingles of every text as 64-bit hashes, without one Python object per shingle:
    (hashes, offsets), text n's shingles being hashes[offsets[n]:offsets[n + 1]], sorted and unique.
    A word's hash is a fixed blake2b digest (the same in every process); a shingle's mixes its
    three words' in order. A text of fewer than three words is one shingle, as in `shingles`."""
    vocab: dict[str, int] = {}
    word_hashes: list[int] = []
    parts: list[np.ndarray] = []
    counts = np.zeros(len(texts), dtype=np.int64)
    for start in range(0, len(texts), _CHUNK):
        split = [t.split() for t in texts[start:start + _CHUNK]]
        new = {w for words in split for w in words}.difference(vocab)
        for w in sorted(new):
            vocab[w] = len(word_hashes)
            word_hashes.append(_word_hash(w))
        lengths = np.fromiter(map(len, split), dtype=np.int64, count=len(split))
        ids = np.fromiter(map(vocab.__getitem__, itertools.chain.from_iterable(split)), dtype=np.int64, count=int(lengths.sum()))
        table = np.array(word_hashes, dtype=np.uint64)
        words = table[ids]
        ends = np.cumsum(lengths)
        owner = np.repeat(np.arange(len(split)), lengths)
        # Shingle at word k of its text: words k, k + 1, k + 2, all in that text.
        k = np.arange(max(len(words) - 2, 0))
        full = k[ends[owner[k]] - k >= 3]
        hashes = _shingle(words[full], words[full + 1], words[full + 2])
        owners = owner[full]
        short = np.flatnonzero(lengths < 3)
        if len(short):  # fewer than three words: one shingle of what there is, padded
            first, count = ends[short] - lengths[short], lengths[short]
            padded = []
            for i in range(3):
                column = np.full(len(short), _PAD[min(i, 1)], dtype=np.uint64)
                column[count > i] = words[first[count > i] + i]
                padded.append(column)
            hashes = np.concatenate([hashes, _shingle(*padded)])
            owners = np.concatenate([owners, short])
        order = np.lexsort((hashes, owners))
        owners, hashes = owners[order], hashes[order]
        keep = np.r_[True, (owners[1:] != owners[:-1]) | (hashes[1:] != hashes[:-1])] if len(hashes) else np.zeros(0, bool)
        owners, hashes = owners[keep], hashes[keep]
        counts[start:start + len(split)] = np.bincount(owners, minlength=len(split))
        parts.append(hashes)
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return (np.concatenate(parts) if parts else np.zeros(0, np.uint64)), offsets


def minhash_signatures(hashes: np.ndarray, offsets: np.ndarray, num_perm: int, seed: int = 1) -> np.ndarray:
    """The MinHash signature of every text (n x num_perm, uint32): for each of num_perm universal
    hash functions (a * x + b) mod p over the shingles' 32-bit hashes, the minimum within each text,
    one numpy pass over all shingles per function (`np.minimum.reduceat` over the texts' offsets)."""
    n = len(offsets) - 1
    rng = np.random.default_rng(seed)
    a = rng.integers(1, int(_PRIME), num_perm, dtype=np.uint64)
    b = rng.integers(0, int(_PRIME), num_perm, dtype=np.uint64)
    x = hashes >> np.uint64(32)
    out = np.empty((n, num_perm), dtype=np.uint32)
    starts = offsets[:-1]
    if not len(x):
        out[:] = np.iinfo(np.uint32).max
        return out
    for k in range(num_perm):
        out[:, k] = np.minimum.reduceat((a[k] * x + b[k]) % _PRIME, np.minimum(starts, len(x) - 1))
    return out


def _integral(f, lo: float, hi: float, steps: int = 2001) -> float:
    s = np.linspace(lo, hi, steps)
    y = f(s)
    return float(((y[1:] + y[:-1]) / 2 * np.diff(s)).sum())


def lsh_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows) minimising the false positive plus false negative probability of an LSH index
    tuned at `threshold` (datasketch's choice: 8 bands of 4 rows for 32 permutations at 0.5)."""
    best, opt = float("inf"), (1, num_perm)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp = _integral(lambda s: 1 - (1 - s ** r) ** b, 0.0, threshold)
            fn = _integral(lambda s: (1 - s ** r) ** b, threshold, 1.0)
            if fp + fn < best:
                best, opt = fp + fn, (b, r)
    return opt


def bucket_pairs(band_keys: np.ndarray) -> np.ndarray:
    """Every pair (i < j) of rows that share a value in at least one column of `band_keys`
    (n x bands), as a sorted array of codes i * n + j: a sort per band, pairs only within runs."""
    n = band_keys.shape[0]
    found = []
    for column in band_keys.T:
        order = np.argsort(column, kind="stable")
        ordered = column[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        sizes = np.diff(np.r_[starts, n])
        for size in np.unique(sizes[sizes > 1]):
            first = starts[sizes == size][:, None]
            i, j = np.triu_indices(int(size), 1)
            a, b = order[first + i].ravel(), order[first + j].ravel()
            found.append(np.minimum(a, b).astype(np.int64) * n + np.maximum(a, b))
    return np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)


def _gather(offsets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices of the elements of `rows` (offsets as in `shingle_hashes`), and which row each is."""
    counts = offsets[rows + 1] - offsets[rows]
    which = np.repeat(np.arange(len(rows)), counts)
    within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return offsets[rows][which] + within, which


def jaccard(hashes: np.ndarray, offsets: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact Jaccard of the shingle sets of texts a[k] and b[k], for every k at once: each text's
    hashes are unique, so the intersection is what appears twice among the pair's hashes."""
    ia, wa = _gather(offsets, a)
    ib, wb = _gather(offsets, b)
    pair = np.concatenate([wa, wb])
    value = np.concatenate([hashes[ia], hashes[ib]])
    order = np.lexsort((value, pair))
    pair, value = pair[order], value[order]
    twice = (pair[1:] == pair[:-1]) & (value[1:] == value[:-1])
    inter = np.bincount(pair[1:][twice], minlength=len(a))
    sizes = (offsets[a + 1] - offsets[a]) + (offsets[b + 1] - offsets[b])
    return inter / np.maximum(sizes - inter, 1)


def near_text_pairs(keys: Sequence, texts: Sequence[str], threshold: float = 0.8, num_perm: int = 32,
                    check: int = 500_000) -> Iterable[tuple]:
    """Pairs of keys (in key order) whose texts have word 3-shingle Jaccard `threshold` or more.

    MinHash LSH, written with numpy rather than called through datasketch: datasketch takes one
    Python call per text (a MinHash object updated shingle by shingle, an index insert and query),
    and holds Python sets and band dicts (its cost: README, leaks); here the shingles are
    hashed once into one array, the signatures of all texts come from num_perm vectorised passes,
    and bands are bucketed by sorting, so the same search is vectorised and compact. The index is
    tuned 0.3 below `threshold` (8 bands of 4 at 0.8, as datasketch chooses), so that a pair at the
    threshold is a candidate with probability 0.985 rather than the 0.29 of an index tuned at the
    threshold itself; every candidate is then checked with the exact Jaccard of its shingle sets
    (64-bit shingle hashes: a collision that could change an answer is ~1e-19 per pair)."""
    n = len(texts)
    if n < 2:
        return
    hashes, offsets = shingle_hashes(texts)
    signatures = minhash_signatures(hashes, offsets, num_perm)
    bands, rows = lsh_bands(max(0.3, threshold - 0.3), num_perm)
    keyed = np.empty((n, bands), dtype=np.uint64)
    for band in range(bands):
        key = np.zeros(n, dtype=np.uint64)
        for col in signatures[:, band * rows:(band + 1) * rows].T:
            key = _mix(key + col.astype(np.uint64))
        keyed[:, band] = key
    del signatures
    codes = bucket_pairs(keyed)
    for start in range(0, len(codes), check):
        chunk = codes[start:start + check]
        a, b = chunk // n, chunk % n
        close = jaccard(hashes, offsets, a, b) >= threshold
        for x, y in zip(a[close].tolist(), b[close].tolist()):
            yield keys[x], keys[y]


# -- embeddings: random-hyperplane LSH, exact cosine on candidates ------------------------------------

# Hyperplanes in all, shared out among the bands. Enough for long bands: at MiniLM's 0.85 the
# choice is 73 bands of 14 bits, where a pair at the threshold is a candidate with probability
# 0.99 and two unrelated captions (cosine ~0.1) with 1 %; at CLIP's 0.95, 46 bands of 22 bits
# (0.05 % at cosine 0.3). Candidates grow with n^2 times that share, so the embedding matchers
# suit the sizes a worker can embed in one job, where the hash matchers go to millions.
SIMHASH_BITS = 1024


def simhash_bands(threshold: float, bits: int = SIMHASH_BITS, recall: float = 0.99) -> tuple[int, int]:
    """(bands, rows) of a random-hyperplane index: two unit vectors at cosine c agree on one
    hyperplane's side with probability 1 - arccos(c) / pi. The most rows per band (fewest chance
    candidates) whose bands still make a pair at `threshold` a candidate with probability `recall`."""
    agree = 1 - np.arccos(np.clip(threshold, -1, 1)) / np.pi
    for rows in range(min(64, bits), 0, -1):
        bands = bits // rows
        if 1 - (1 - agree ** rows) ** bands >= recall:
            return bands, rows
    return bits, 1


def near_vector_pairs(keys: Sequence, vectors: np.ndarray, threshold: float, *, seed: int = 0,
                      check: int = 200_000) -> Iterable[tuple]:
    """Pairs of keys (in key order) whose embeddings have cosine `threshold` or more. The sign of
    each vector against random hyperplanes gives its bits (SimHash); bands of those bits are
    bucketed like the perceptual hashes' and MinHash's, and only pairs sharing a band are compared,
    with the exact cosine."""
    n = len(vectors)
    if n < 2:
        return
    unit = np.asarray(vectors, dtype=np.float32)
    unit = unit / np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
    bands, rows = simhash_bands(threshold)
    planes = np.random.default_rng(seed).standard_normal((unit.shape[1], bands * rows)).astype(np.float32)
    weights = np.uint64(1) << np.arange(rows, dtype=np.uint64)
    keyed = np.empty((n, bands), dtype=np.uint64)
    for band in range(bands):
        side = (unit @ planes[:, band * rows:(band + 1) * rows]) > 0
        keyed[:, band] = (side.astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)
    codes = bucket_pairs(keyed)
    for start in range(0, len(codes), check):
        chunk = codes[start:start + check]
        a, b = chunk // n, chunk % n
        close = np.einsum("ij,ij->i", unit[a], unit[b]) >= threshold
        for x, y in zip(a[close].tolist(), b[close].tolist()):
            yield keys[x], keys[y]
