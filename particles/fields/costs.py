"""The reference costs of a drift evaluation: seconds on one core, by formula.

One place for the cost model the rest of the package reads: the spectral
summation's choice (``auto``, :func:`particles.fields.spectral.choose`) compares
:func:`direct` with :func:`series`; the plan's facts
(:attr:`particles.plan.Facts.evaluation_cost`, ``step_cost``) pick the
formula of a run (its model, summation, heads, Sinkhorn passes), and the
estimates, probes and sweeps read those facts.  Nothing here reads a
configuration: every function takes sizes.

Two direct models, measured by two benchmarks on the 2-core development
machines, stay as they were measured: :func:`pairs` (the estimate's, SA with
``edp`` at n = 1024 across d, heads and passes) and :func:`direct` (the
spectral benchmark's, d = 2 and 3 only), which sets where ``auto`` switches.
"""

from __future__ import annotations

import math

__all__ = ["CIRCLE", "CIRCLE_CALL", "DIRECT", "SECONDS_PER_PAIR", "SECONDS_PER_PAIR_DIM",
           "SECONDS_PER_TOKEN", "SPHERE_CALL", "SPHERE_L", "SPHERE_N", "direct", "pairs",
           "series", "tokens"]

#: one drift evaluation of a pairwise model costs, per token pair and head,
#: this much (the exp and the softmax) plus :data:`SECONDS_PER_PAIR_DIM` per
#: dimension (the products): measured on one core of the 2-core machines
#: (SA, edp, n = 1024: 2.9 ns at d = 2, 4.9 at d = 8, 6.6 at 16, 11 at 64).
SECONDS_PER_PAIR = 3e-9
SECONDS_PER_PAIR_DIM = 0.13e-9
#: one drift evaluation of a model that is O(n) (Kuramoto), per token:
#: 21-26 ns on the embedded circle (dopri5), 40 ns on the angles (RK4).
SECONDS_PER_TOKEN = 32e-9

#: seconds per drift evaluation, one thread: per-host approximations
#: (``benchmarks/bench_spectral.py``, measured on a Zen 4 AVX-512 host; other
#: hosts differ by their exp rate and vector width, and the crossover with
#: them): direct ``DIRECT[d] n^2`` (0.85 ns and 1.07 ns per pair); the
#: circle's series ``CIRCLE n (K + 2) + CIRCLE_CALL`` (its blocks' set-up);
#: S^2 ``SPHERE_N n + SPHERE_L (L + 1)^2 log2(L + 2) + SPHERE_CALL`` (one
#: adjoint transform, three syntheses and the Python call).  With them the
#: predicted crossover is near the measured one there (circle beta 1 and 10:
#: predicted n = 80 and 96, measured 32-64 and 64; S^2 beta 5: predicted 896,
#: measured 768).
DIRECT = {2: 0.85e-9, 3: 1.07e-9}
CIRCLE = 1.6e-9
CIRCLE_CALL = 2.0e-6
SPHERE_N = 6.0e-7
SPHERE_L = 4.5e-8
SPHERE_CALL = 1.7e-4


def pairs(n: int, d: int, heads: int = 1, passes: float = 1.0) -> float:
    """Seconds of one evaluation over every pair of ``n`` tokens in dimension
    ``d``, ``heads`` times, ``passes`` passes each (Sinkhorn's iterations)."""
    return float(n) * float(n) * heads * passes * (SECONDS_PER_PAIR + d * SECONDS_PER_PAIR_DIM)


def tokens(n: int) -> float:
    """Seconds of one evaluation of an O(n) model (Kuramoto) of ``n`` tokens."""
    return float(n) * SECONDS_PER_TOKEN


def direct(n: int, d: int) -> float:
    """Seconds of the direct sums of one head on S^1 (d = 2) or S^2 (d = 3),
    as the spectral benchmark measured them (the yardstick of ``auto``)."""
    return DIRECT[d] * n * n


def series(n: int, d: int, K: int) -> float:
    """Seconds of the spectral series of degree ``K`` on S^1 (d = 2) or S^2 (d = 3)."""
    if d == 2:
        return CIRCLE * n * (K + 2) + CIRCLE_CALL
    return SPHERE_N * n + SPHERE_L * (K + 1) ** 2 * math.log2(K + 2) + SPHERE_CALL
