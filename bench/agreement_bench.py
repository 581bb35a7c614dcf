"""Agreement benchmark: 10,000 items x 3 raters, every categorical metric plus a 1,000-sample bootstrap.

Also times Jaccard of premise sets (exact, and soft-matched over given embeddings: the text
model's own time is the worker's and is not counted here), deleted-token Jaccard and box IoU with
Hungarian matching over the same items, with their bootstraps. Target: all of it under 5 s
(printed). No database.

    python bench/agreement_bench.py [--items 10000] [--samples 1000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.agreement import boxes, categorical, sets  # noqa: E402
from app.agreement.bootstrap import bootstrap, mean_from, mean_stats, resample_weights  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=1000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, args.items)
    ratings = np.where(rng.random((args.items, 3)) < 0.8, truth[:, None], rng.integers(0, 3, (args.items, 3)))
    ratings[rng.random(ratings.shape) < 0.02] = -1  # a few missing ratings
    premise_sets = [[f"p{j}" for j in rng.choice(8, 3, replace=False)] for _ in range(args.items * 2)]
    vocabulary = [f"p{j}" for j in range(8)]
    vectors = rng.normal(size=(8, 384))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = {t: n for n, t in enumerate(vocabulary)}

    def similarity(a, b):
        return vectors[[index[t] for t in a]] @ vectors[[index[t] for t in b]].T

    spans = [[(int(s), int(s) + int(n)) for s, n in zip(rng.integers(0, 20, 2), rng.integers(1, 4, 2))] for _ in range(args.items * 2)]
    box_sets = [[{"startX": float(x), "startY": float(y), "w": 20.0, "h": 20.0} for x, y in rng.integers(0, 200, (3, 2))]
                for _ in range(args.items * 2)]

    started = time.perf_counter()
    weights = resample_weights(args.items, args.samples, seed=0)  # shared by every metric
    results = {
        "percent agreement": bootstrap(categorical.percent_agreement_stats(ratings), categorical.percent_agreement_from, weights=weights),
        "Fleiss' kappa": bootstrap(categorical.fleiss_stats(ratings), categorical.fleiss_from, weights=weights),
        "Krippendorff's alpha": bootstrap(categorical.alpha_stats(ratings), categorical.alpha_from, weights=weights),
    }
    k = int(ratings.max()) + 1
    for a, b in ((0, 1), (0, 2), (1, 2)):
        stats = categorical.cohen_stats(ratings[:, a], ratings[:, b], k)
        results[f"Cohen's kappa {a}-{b}"] = bootstrap(stats, lambda s: categorical.cohen_from(s, k), weights=weights)
    jaccards = np.array([sets.jaccard(premise_sets[2 * i], premise_sets[2 * i + 1]) for i in range(args.items)])
    results["premise-set Jaccard"] = bootstrap(mean_stats(jaccards), mean_from, weights=weights)
    soft = np.array([sets.soft_jaccard(premise_sets[2 * i], premise_sets[2 * i + 1], similarity, 0.8) for i in range(args.items)])
    results["premise-set soft Jaccard"] = bootstrap(mean_stats(soft), mean_from, weights=weights)
    deleted = np.array([sets.token_set_jaccard(spans[2 * i], spans[2 * i + 1]) for i in range(args.items)])
    results["deleted-token Jaccard"] = bootstrap(mean_stats(deleted), mean_from, weights=weights)
    ious = np.array([boxes.mean_iou(box_sets[2 * i], box_sets[2 * i + 1]) for i in range(args.items)])
    results["box IoU (Hungarian)"] = bootstrap(mean_stats(ious), mean_from, weights=weights)
    elapsed = time.perf_counter() - started

    for name, ci in results.items():
        print(f"{name}: {ci.estimate:.4f} [{ci.low:.4f}, {ci.high:.4f}]")
    print(f"all metrics with a {args.samples}-sample bootstrap over {args.items:,} items x 3 raters: {elapsed:.2f} s "
          f"(target < 5 s: {'met' if elapsed < 5 else 'NOT met'})")


if __name__ == "__main__":
    main()
