"""The vectorised searches of `app.leakage` against brute force: normalisation's fast path, shingle
hashes and exact Jaccard against Python sets, MinHash LSH recall, and the embedding (SimHash) search."""

from __future__ import annotations

import random
import re
import unicodedata

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from app import leakage

_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
_SPACE = re.compile(r"\s+")


def reference_normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return _SPACE.sub(" ", _PUNCT.sub(" ", text)).strip()


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0x7F)) | st.text())
def test_the_ascii_fast_path_normalises_as_the_reference(text):
    assert leakage.normalise_text(text) == reference_normalise(text)


def corpus(seed: int, n: int) -> list[str]:
    r = random.Random(seed)
    words = [f"w{i}" for i in range(200)]
    texts = []
    for _ in range(n):
        t = r.choices(words, k=r.randint(0, 16))
        texts.append(" ".join(t))
        u = list(t)
        for _ in range(r.randint(0, 2)):
            if u:
                u[r.randrange(len(u))] = r.choice(words)
        texts.append(" ".join(u + (["tail"] if r.random() < 0.5 else [])))
    return list(dict.fromkeys(texts + ["", "a", "a b", "b a", "a b c"]))


def test_shingle_hashes_and_jaccard_match_python_sets():
    texts = corpus(1, 400)
    hashes, offsets = leakage.shingle_hashes(texts)
    sets = [leakage.shingles(t) for t in texts]
    assert [int(offsets[i + 1] - offsets[i]) for i in range(len(texts))] == [len(s) for s in sets]
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, len(texts), 3000), rng.integers(0, len(texts), 3000)
    a[:len(texts) - 1], b[:len(texts) - 1] = np.arange(len(texts) - 1), np.arange(1, len(texts))  # neighbours: near pairs
    expected = [len(sets[x] & sets[y]) / len(sets[x] | sets[y]) for x, y in zip(a, b)]
    assert np.allclose(leakage.jaccard(hashes, offsets, a, b), expected)
    # The hashes are the same in every process (no per-process string hash seed).
    assert leakage.shingle_hashes(["a red tram in lisbon"])[0].tolist() == leakage.shingle_hashes(["a red tram in lisbon"])[0].tolist()
    assert leakage._word_hash("tram") == int.from_bytes(__import__("hashlib").blake2b(b"tram", digest_size=8).digest(), "little")


def test_minhash_lsh_finds_the_near_pairs_and_only_them():
    texts = corpus(2, 1500)
    sets = [leakage.shingles(t) for t in texts]
    brute = {(i, j) for i in range(len(texts)) for j in range(i + 1, len(texts))
             if len(sets[i] & sets[j]) / len(sets[i] | sets[j]) >= 0.8}
    found = set(leakage.near_text_pairs(list(range(len(texts))), texts, 0.8))
    assert found <= brute  # every pair is checked exactly
    assert len(brute) >= 100 and len(found) >= 0.97 * len(brute)  # a pair at the threshold: 0.985


def test_lsh_bands_are_datasketchs_choice():
    # What datasketch's MinHashLSH picks for 32 permutations (its weights 0.5 / 0.5).
    assert [leakage.lsh_bands(t, 32) for t in (0.3, 0.4, 0.5, 0.6, 0.7)] == [(12, 2), (10, 3), (8, 4), (6, 5), (5, 6)]


def test_embedding_search_finds_the_close_vectors():
    rng = np.random.default_rng(5)
    base = rng.standard_normal((2000, 64)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    close = base[:50] + 0.25 * rng.standard_normal((50, 64)).astype(np.float32) / 8  # cosine ~0.97
    vectors = np.vstack([base, close])
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    sims = unit @ unit.T
    brute = {(int(i), int(j)) for i, j in zip(*np.nonzero(np.triu(sims >= 0.9, 1)))}
    found = set(leakage.near_vector_pairs(list(range(len(vectors))), vectors, 0.9))
    assert found == brute and len(found) == 50
    bands, rows = leakage.simhash_bands(0.9)
    assert bands * rows <= leakage.SIMHASH_BITS and rows >= 8
