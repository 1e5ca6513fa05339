"""Is method B better than baseline A on these queries, or is the gap luck? A paired test.

Two eval results on the same queries give two numbers per query (say F1). Under the null
hypothesis that the methods are interchangeable, each query's difference B - A is as
likely to have had the other sign, so the observed mean difference is compared with the
mean differences of every sign flip (the paired randomization test of Fisher, the one
Smucker, Allan and Carterette (CIKM 2007) recommend for IR). Two-sided: a p-value is the
share of sign flips whose mean difference lies at least as far from zero as the
observed one in either direction.

With n queries there are 2^n sign flips; when 2^n <= `resamples` all of them are
enumerated (an exact p-value, never below 2 / 2^n), else `resamples` random flips drawn
with `seed` are used and the observed one is counted in each tail, so p is never 0
(p >= 2 / (resamples + 1)). The two-sided p is twice the smaller one-sided p, capped at 1:
the sign-flip distribution is symmetric, so this equals counting |mean| >= |observed|.
The computation is `scipy.stats.permutation_test(permutation_type="samples")`, which
swaps A and B within each query, the same thing as flipping the difference's sign.
(ranx has the same test but pulls numba, llvmlite and ir_datasets; scipy comes with the
`report` extra.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cogr_search.errors import CogrError, InputError
import numpy as np

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0
TEST_NAME = "two-sided paired randomization test"
_BATCH_VALUES = 1_000_000  # sign flips x queries held in memory at once


@dataclass(frozen=True)
class PairedTest:
    """One method against the baseline on one metric, over the queries both scored."""

    metric: str
    baseline: str
    method: str
    queries: int
    baseline_mean: float
    method_mean: float
    p_value: float
    resamples: int
    seed: int
    exact: bool  # every one of the 2^queries sign flips, not a random sample of them

    @property
    def difference(self) -> float:
        return self.method_mean - self.baseline_mean

    def how(self) -> str:
        """The test, its resamples and seed, as a report states them."""
        flips = (f"all {2 ** self.queries:,} sign flips (exact)" if self.exact
                 else f"{self.resamples:,} random sign flips, seed {self.seed}")
        return f"{TEST_NAME} over the {self.queries} queries both score, {flips}"

    def line(self) -> str:
        """One line a person can act on: the gap, its p-value, and how it was tested."""
        return (f"{self.method} vs {self.baseline}: {self.metric} {self.method_mean:.4f} vs {self.baseline_mean:.4f} "
                f"({self.difference:+.4f}), p = {format_p(self.p_value)} ({self.how()})")


def format_p(p: float) -> str:
    """Three significant figures; small values in scientific notation."""
    return f"{p:.3g}" if p >= 0.001 else f"{p:.1e}"


def randomization_p_value(baseline: Mapping[str, float], method: Mapping[str, float],
                          resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> tuple[float, bool]:
    """Two-sided p-value of the mean paired difference `method - baseline` over their
    queries (the same keys in both), and whether it is exact (all 2^n sign flips)."""
    try:
        from scipy.stats import permutation_test  # heavy: scipy, off the CLI's start
    except ImportError as err:
        raise CogrError("paired tests need scipy: pip install 'cogr-search[report]'") from err
    if baseline.keys() != method.keys() or not baseline:
        raise ValueError("a paired test needs scores for the same, non-empty set of queries")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, not {resamples}")
    ids = sorted(baseline)
    a = np.array([baseline[q] for q in ids], dtype=float)
    b = np.array([method[q] for q in ids], dtype=float)

    def mean_difference(x, y, axis):
        return np.mean(x - y, axis=axis)

    result = permutation_test((b, a), mean_difference, permutation_type="samples", vectorized=True,
                              n_resamples=resamples, batch=max(1, _BATCH_VALUES // len(ids)),
                              alternative="two-sided", rng=np.random.default_rng(seed))
    exact = len(result.null_distribution) == 2 ** len(ids)
    return float(result.pvalue), exact


def per_query(report: dict, metric: str) -> dict[str, float] | None:
    """A saved eval result's per-query values of `metric` (None: the file predates them)."""
    values = report.get("per_query", {}).get(metric)
    return {str(q): float(v) for q, v in values.items()} if isinstance(values, dict) else None


def check_same_queries(baseline_name: str, baseline: dict, name: str, report: dict) -> None:
    """Refuse, in one line naming both, two results that did not score the same queries."""
    a, b = per_query(baseline, "F1"), per_query(report, "F1")
    if a is None or b is None or a.keys() == b.keys():
        return
    shared = a.keys() & b.keys()
    if not shared:
        raise InputError(f"{name} and {baseline_name} share no query ({len(b)} and {len(a)} queries scored): "
                         "a paired comparison needs both evaluated on the same queries")
    only_b, only_a = sorted(b.keys() - a.keys()), sorted(a.keys() - b.keys())
    example = f"{only_b[0]!r} only in {name}" if only_b else f"{only_a[0]!r} only in {baseline_name}"
    raise InputError(f"{name} and {baseline_name} score different queries ({len(b)} and {len(a)}, {len(shared)} shared; "
                     f"e.g. {example}): evaluate both on the same split (the same --run or --split/--seed)")


def paired_test(baseline: dict, report: dict, metric: str = "F1", resamples: int = DEFAULT_RESAMPLES,
                seed: int = DEFAULT_SEED, baseline_name: str | None = None, name: str | None = None) -> PairedTest | None:
    """`report` against `baseline` on `metric`; None when either has no per-query values
    of it (an older eval file, or an @k beyond the ranking depth)."""
    baseline_name = baseline_name or str(baseline.get("method"))
    name = name or str(report.get("method"))
    check_same_queries(baseline_name, baseline, name, report)
    a, b = per_query(baseline, metric), per_query(report, metric)
    if a is None or b is None or not a:
        return None
    p_value, exact = randomization_p_value(a, b, resamples, seed)
    return PairedTest(metric, baseline_name, name, len(a), sum(a.values()) / len(a), sum(b.values()) / len(b),
                      p_value, resamples, seed, exact)
