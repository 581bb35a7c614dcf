"""Entity-based scores of a generated artwork explanation against its reference section text.

Pure functions over strings (ExpArt's metrics: Hayashi et al., "Towards Artwork Explanation
in Large-scale Vision Language Models", ACL 2024). The paper's appendix could not be read
here, so these are the exact definitions vlcurate uses (also in the README):

Text is lower-cased and split into word tokens (`tokens`); an entity is *mentioned* where its
tokens occur contiguously in a text (`mentions` counts non-overlapping occurrences). `E_R` are
the reference's entities (the record's hyperlinked entities, de-duplicated in order), `E_G` the
generation's (given by the caller, or by default the reference entities the generation
mentions). Sentences are split by pysbd (a rule-based segmenter, no model, no download).

* **Entity Coverage** EC = (1/|E_R|) · Σ_{e ∈ E_R} max_{s ∈ sentences(G)} LCS(tok(e), tok(s)) / |tok(e)|,
  where LCS is the length of the longest common token subsequence: an entity mentioned in full
  scores 1, "Leonardo da Vinci" against a sentence naming only "Leonardo ... Vinci" scores 2/3.
  `exact=True` counts full mentions only (1 or 0). Undefined (None) when E_R is empty.
* **Entity F1** with clipped counts: c_R(e) = max(1, mentions in R) for e ∈ E_R, else 0;
  c_G(e) = max(1, mentions in G) for e ∈ E_G. matched = Σ_{e ∈ E_G} min(c_G(e), c_R(e));
  P = matched / Σ_{E_G} c_G, Rec = matched / Σ_{E_R} c_R, F1 = 2·P·Rec / (P + Rec) (0 when
  matched = 0). A generation repeating an entity more often than the reference is clipped, as
  BLEU clips n-gram counts.
* **Entity Co-occurrence** ECooc = |P_R ∩ P_G| / |P_R| · LP, where P_T is the set of unordered
  pairs of distinct entities (of E_R for the reference, of E_R ∪ E_G for the generation)
  mentioned within `window` consecutive sentences of text T (window 1: the same sentence), and
  LP = exp(-max(0, |G| / |R| - 1)) with |·| the number of tokens, which penalises generations
  longer than the reference. Undefined (None) when P_R is empty.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

_WORD = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*", re.UNICODE)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens (inner apostrophes, hyphens and dots kept: "l'arte", "st.-denis")."""
    return [m.group().lower() for m in _WORD.finditer(text or "")]


@lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def sentences(text: str) -> list[str]:
    """The sentences of `text` (pysbd's English rules)."""
    if not (text or "").strip():
        return []
    return [s.strip() for s in _segmenter().segment(text) if s.strip()]


def unique(entities: Iterable[str]) -> list[str]:
    """Entities de-duplicated by their tokens, first spelling kept; entities without words dropped."""
    seen, out = set(), []
    for e in entities:
        key = tuple(tokens(e))
        if key and key not in seen:
            seen.add(key)
            out.append(e)
    return out


def mentions(entity: Sequence[str], text: Sequence[str]) -> int:
    """Non-overlapping contiguous occurrences of the entity's tokens in the text's tokens."""
    n, i, count = len(entity), 0, 0
    if not n:
        return 0
    while i + n <= len(text):
        if list(text[i : i + n]) == list(entity):
            count += 1
            i += n
        else:
            i += 1
    return count


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, 1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def entity_coverage(reference_entities: Iterable[str], generated: str, *, exact: bool = False) -> float | None:
    """EC: the mean over reference entities of how much of each the generation covers."""
    ents = [tokens(e) for e in unique(reference_entities)]
    if not ents:
        return None
    sents = [tokens(s) for s in sentences(generated)] or [[]]
    total = 0.0
    for e in ents:
        if exact:
            total += 1.0 if any(mentions(e, s) for s in sents) else 0.0
        else:
            total += max(lcs_length(e, s) for s in sents) / len(e)
    return total / len(ents)


@dataclass(frozen=True)
class EntityF1:
    precision: float
    recall: float
    f1: float
    matched: int


def generated_entities(reference_entities: Iterable[str], generated: str, given: Iterable[str] | None = None) -> list[str]:
    """E_G: the entities given for the generation, or the reference entities it mentions."""
    if given is not None:
        return unique(given)
    gen = tokens(generated)
    return [e for e in unique(reference_entities) if mentions(tokens(e), gen)]


def entity_f1(reference_entities: Iterable[str], reference: str, generated: str, generation_entities: Iterable[str] | None = None) -> EntityF1:
    """Entity precision, recall and F1 with counts clipped by the reference's."""
    ref_ents = unique(reference_entities)
    gen_ents = generated_entities(ref_ents, generated, generation_entities)
    ref_tok, gen_tok = tokens(reference), tokens(generated)
    c_r = {tuple(tokens(e)): max(1, mentions(tokens(e), ref_tok)) for e in ref_ents}
    c_g = {tuple(tokens(e)): max(1, mentions(tokens(e), gen_tok)) for e in gen_ents}
    matched = sum(min(c, c_r.get(k, 0)) for k, c in c_g.items())
    p = matched / sum(c_g.values()) if c_g else 0.0
    r = matched / sum(c_r.values()) if c_r else 0.0
    f1 = 2 * p * r / (p + r) if matched else 0.0
    return EntityF1(precision=p, recall=r, f1=f1, matched=matched)


def length_penalty(reference: str, generated: str) -> float:
    """exp(-max(0, |G|/|R| - 1)) over token counts; 1 for a generation no longer than the reference."""
    r = len(tokens(reference))
    g = len(tokens(generated))
    if r == 0:
        return 1.0 if g == 0 else 0.0
    return math.exp(-max(0.0, g / r - 1.0))


def cooccurring_pairs(entities: Iterable[str], text: str, window: int = 1) -> set[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Unordered pairs of distinct entities mentioned within `window` consecutive sentences."""
    ents = [tuple(tokens(e)) for e in unique(entities)]
    present = [{e for e in ents if mentions(e, tokens(s))} for s in sentences(text)]
    pairs = set()
    for start in range(max(1, len(present) - window + 1)):
        seen = set().union(*present[start : start + window]) if present else set()
        pairs.update((a, b) if a < b else (b, a) for a in seen for b in seen if a != b)
    return pairs


def entity_cooccurrence(
    reference_entities: Iterable[str], reference: str, generated: str,
    generation_entities: Iterable[str] | None = None, *, window: int = 1,
) -> float | None:
    """ECooc: the share of the reference's co-occurring entity pairs the generation also has, times the length penalty."""
    ref_ents = unique(reference_entities)
    ref_pairs = cooccurring_pairs(ref_ents, reference, window)
    if not ref_pairs:
        return None
    gen_ents = unique([*ref_ents, *(generation_entities or [])])
    gen_pairs = cooccurring_pairs(gen_ents, generated, window)
    return len(ref_pairs & gen_pairs) / len(ref_pairs) * length_penalty(reference, generated)


def scores(reference_entities: Sequence[str], reference: str, generated: str, generation_entities: Sequence[str] | None = None, *, window: int = 1) -> dict[str, float | None]:
    """All of the metrics of one generation, by name."""
    f = entity_f1(reference_entities, reference, generated, generation_entities)
    return {
        "entity_coverage": entity_coverage(reference_entities, generated),
        "entity_coverage_exact": entity_coverage(reference_entities, generated, exact=True),
        "entity_precision": f.precision,
        "entity_recall": f.recall,
        "entity_f1": f.f1,
        "entity_cooccurrence": entity_cooccurrence(reference_entities, reference, generated, generation_entities, window=window),
        "length_penalty": length_penalty(reference, generated),
    }


@dataclass(frozen=True)
class RankCorrelation:
    rho: float | None
    low: float | None
    high: float | None
    n: int


def spearman_interval(x: Sequence[float], y: Sequence[float], *, samples: int = 1000, seed: int = 0, level: float = 0.95) -> RankCorrelation:
    """Spearman's rho of paired values (scipy) with a seeded percentile bootstrap over the pairs;
    None where it is undefined (fewer than three pairs, or a constant side)."""
    import numpy as np
    from scipy.stats import spearmanr

    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(a)

    def rho(u, v):
        if len(u) < 3 or np.all(u == u[0]) or np.all(v == v[0]):
            return None
        return float(spearmanr(u, v).statistic)

    estimate = rho(a, b)
    if estimate is None:
        return RankCorrelation(None, None, None, n)
    rng = np.random.default_rng(seed)
    draws = [rho(a[idx], b[idx]) for idx in rng.integers(0, n, size=(samples, n))]
    values = np.array([d for d in draws if d is not None])
    if not len(values):
        return RankCorrelation(estimate, None, None, n)
    tail = (1 - level) / 2 * 100
    return RankCorrelation(estimate, float(np.percentile(values, tail)), float(np.percentile(values, 100 - tail)), n)
