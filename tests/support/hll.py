"""The distinct-key estimate's bias, measured as issue 37 (item 6) measured it: over many
independent key sets, the mean and the spread of the relative error at fills across the
HyperLogLog's ranges (linear counting, the switch at 2.5 * 2**14 = 40,960, the raw estimate)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable

from klogtool.log.read import stats

# keys: below the original estimator's switch, just past it (its raw estimate's bias peaks
# there), through 5 * 2**14 where that bias fades, and well past it
FILLS = (20_000, 35_000, 41_000, 45_000, 60_000, 80_000, 150_000)
SEEDS = 40  # key sets
# the mean's standard error is 0.81 % / sqrt(SEEDS) = 0.13 %: 0.5 % is ~4 of them
MAX_MEAN = 0.005
# a standard deviation measured on 40 samples is within ~11 % of the true one (1 sigma)
MAX_SPREAD = 1.25 * stats.HLL_STANDARD_ERROR


def assert_unbiased(estimates: Callable[[int], Iterable[float]]) -> None:
    """``estimates(seed)``: the estimates of one key set's first ``FILLS`` keys, in order."""
    errors: dict[int, list[float]] = {n: [] for n in FILLS}
    for seed in range(SEEDS):
        for n, estimate in zip(FILLS, estimates(seed), strict=True):
            errors[n].append(estimate / n - 1)
    found = {n: (statistics.fmean(e), statistics.stdev(e)) for n, e in errors.items()}
    report = ", ".join(f"{n}: {100 * m:+.2f} % ± {100 * s:.2f} %" for n, (m, s) in found.items())
    for mean, spread in found.values():
        assert abs(mean) < MAX_MEAN and spread < MAX_SPREAD, report
