"""PRSMA: Private Robust Subsampling Meta Algorithm -- [NRW19] §III.B (listing "PRSMA", Theorems 8-9).

Turns an oracle-dependent eps-DP algorithm A_O with a *certifiable* oracle (SCIP's "optimal" status)
into one that is (eps, delta)-DP whatever the oracle does.  Listing, run with (eps*, delta*):

    K  = (1/eps*) (1 + ln(2/delta*))        parts (rounded up; n mod K records discarded at random)
    for each part S_i: run A_O^{eps'}(S_i)  R = ln(K/delta*) / delta*  times (rounded up),
         eps' = 1 / sqrt(8 (n/K) ln(2K/delta*));   o_i = ⊥ if any run returned ⊥
    T~ = #{i : o_i != ⊥} + Lap(1/eps*);  if T~ <= (1/eps*)(1 + ln(1/delta*)) output ⊥
    else output a uniformly random a_it among the runs of the surviving parts.

Theorem 8: this is (eps, delta)-DP when eps* = eps/62 <= 1/2 and delta* = delta/11 <= 1/2; so a user's
target (eps, delta) is turned into (eps*, delta*) = (eps/62, delta/11) before the listing runs.

Runs of a part stop at its first ⊥: once o_i = ⊥ the part's remaining runs cannot influence the
output, so skipping them leaves the output distribution unchanged -- and each run's perturbation is
drawn just before the run, so a part never draws noise it cannot use.

Randomness (issue 12, finding 8): every draw comes from a :class:`~dpcore.privacy.samplers.Randomness`.
The partition, the count noise and the final pick are drawn by the caller's; each part's run noise by
a Randomness of its own, made in whichever process runs the part: cryptographic when the caller's is
(nothing to pass), or seeded from the caller's seeded generator before any part runs (a demo), so a
seeded result does not depend on the executor.  The perturbations are OpenDP's vetted Laplace samples.
The count noise z stays a continuous (OpenDP) Laplace: Thm 8's test is analysed with the continuous
Laplace's tail, which a discrete Laplace of the same scale can exceed by a factor up to
2/(1 + e^{-ε*}); the count itself is never released, only whether the test passed.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import BudgetError, Cancelled
from ..privacy.samplers import Randomness
from . import rspm as rspm_mod
from .model import LearnedModel

#: Refuse plans above this many oracle calls unless the caller raises it.
DEFAULT_MAX_CALLS = 20_000
EPS_FACTOR = 62.0  # [NRW19] Thm 8: eps* = eps / 62
DELTA_FACTOR = 11.0  # [NRW19] Thm 8: delta* = delta / 11


@dataclass
class PrsmaPlan:
    """Public pre-run figures (from n, eps, delta only)."""

    epsilon: float
    delta: float
    eps_star: float
    delta_star: float
    parts: int
    part_size: int
    repetitions: int
    eps_prime: float
    threshold: float
    oracle_calls: int

    def to_dict(self) -> dict:
        return asdict(self)


def _figures(n: int, epsilon: float, delta: float) -> PrsmaPlan:
    es, ds = epsilon / EPS_FACTOR, delta / DELTA_FACTOR
    K = math.ceil((1.0 / es) * (1.0 + math.log(2.0 / ds)))
    size = n // K
    R = math.ceil(math.log(K / ds) / ds)
    eps_prime = 1.0 / math.sqrt(8.0 * (n / K) * math.log(2.0 * K / ds))
    return PrsmaPlan(epsilon, delta, es, ds, K, size, R, eps_prime, (1.0 / es) * (1.0 + math.log(1.0 / ds)), K * R)


def plan(n: int, epsilon: float, delta: float, max_calls: int = DEFAULT_MAX_CALLS) -> PrsmaPlan:
    """[NRW19] Thm 8 parameters, refusing plans that cannot run (with the numbers and a suggestion)."""
    if epsilon <= 0 or not 0 < delta < 1:
        raise BudgetError(f"PRSMA needs ε > 0 and 0 < δ < 1 (got ε = {epsilon}, δ = {delta}).")
    if epsilon / EPS_FACTOR > 0.5:
        raise BudgetError(f"PRSMA's Theorem 8 needs ε/62 ≤ 1/2, i.e. ε ≤ 31 (got {epsilon:g}).")
    p = _figures(n, epsilon, delta)
    if p.part_size < 1:
        raise BudgetError(
            f"PRSMA would split the n = {n:,} training records into {p.parts:,} parts: fewer records "
            f"than parts. Use a larger ε or δ (parts = (62/ε)(1 + ln(22/δ)))."
        )
    if p.oracle_calls > max_calls:
        suggestion = suggest_delta(n, epsilon, max_calls)
        hint = (
            f" δ ≥ {suggestion:.3g} would fit"
            if suggestion is not None
            else " no δ < 1 fits at this ε; raise ε or the limit"
        )
        raise BudgetError(
            f"PRSMA at ε = {epsilon:g}, δ = {delta:.3g} needs {p.oracle_calls:,} oracle calls ({p.parts:,} parts × "
            f"{p.repetitions:,} runs; [NRW19] Thm 8), above the limit of {max_calls:,}.{hint}. The run count grows "
            "like ln(1/δ)/δ: PRSMA is only practical with large δ."
        )
    return p


def suggest_delta(n: int, epsilon: float, max_calls: int) -> float | None:
    """Smallest δ (to 3 digits) whose plan needs at most ``max_calls`` oracle calls, or None."""
    lo, hi = 1e-12, 0.999
    if _figures(n, epsilon, hi).oracle_calls > max_calls:
        return None
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        if _figures(n, epsilon, mid).oracle_calls > max_calls:
            lo = mid
        else:
            hi = mid
    # round *up* to 3 significant digits: a larger delta never needs more calls
    scale = 10.0 ** (math.floor(math.log10(hi)) - 2)
    rounded = math.ceil(hi / scale) * scale
    return float(f"{rounded:.3g}") if rounded < 1 else hi


def run_part(task: tuple) -> tuple[bool, list, list]:
    """Runs of the base algorithm on one part; stops at the first ⊥.  Returns (passed, outputs, statuses).

    ``seed`` None draws the runs' noise from the cryptographic source of the process running the part."""
    solve_fn, X, y, seed, repetitions, m, scale, kind, bound, norm_bound, time_limit = task
    source = Randomness(seed)
    outputs: list[np.ndarray] = []
    statuses: list[str] = []
    for _ in range(repetitions):
        eta = np.asarray(source.laplace(scale, m))  # RSPM's Lap(2m/ε') separator noise, drawn run by run
        res = solve_fn(X, y, eta, kind, bound, norm_bound, time_limit)
        statuses.append(res.status)
        if not res.certified:
            return False, outputs, statuses
        outputs.append(res.params)
    return True, outputs, statuses


def prsma(
    X: np.ndarray,
    y: np.ndarray,
    epsilon: float,
    delta: float,
    source: Randomness,
    *,
    kind: str = "halfspace",
    bound: int = 2,
    norm_bound: float | None = None,
    time_limit: float | None = 30.0,
    max_calls: int = DEFAULT_MAX_CALLS,
    executor=None,
    solve_fn=None,
    columns: list[str] | None = None,
    progress=None,
    cancel=None,
) -> tuple[LearnedModel | None, dict]:
    """PRSMA around Laplace RSPM.  Returns (model, info); model is None when PRSMA outputs ⊥.

    (ε, δ)-DP under replace-one neighbours whatever the oracle does ([NRW19] Thm 8).
    """
    n, d = X.shape
    p = plan(n, epsilon, delta, max_calls)
    solve_fn = solve_fn or rspm_mod.solve
    m = rspm_mod.separator_size(kind, d, bound)
    scale = rspm_mod.laplace_scale(m, p.eps_prime)
    perm = source.permutation(n)[: p.parts * p.part_size].reshape(p.parts, p.part_size)
    # a demo's parts get seeds drawn here, before any part runs; a private run's parts use their own OS source
    seeds = [int(source.integers(2**63 - 1)) if source.seeded else None for _ in range(p.parts)]
    tasks = [
        (solve_fn, X[idx], y[idx], seeds[i], p.repetitions, m, scale, kind, bound, norm_bound, time_limit)
        for i, idx in enumerate(perm)
    ]
    if cancel is not None and cancel.is_set():
        raise Cancelled("PRSMA was cancelled before its oracle calls; nothing was released.")
    results = executor.map(run_part, tasks) if executor is not None else [run_part(t) for t in tasks]
    passed = [i for i, r in enumerate(results) if r[0]]
    statuses: dict[str, int] = {}
    for r in results:
        for s in r[2]:
            statuses[s] = statuses.get(s, 0) + 1
    info = {
        "plan": p.to_dict(),
        "parts_passed": len(passed),
        "oracle_calls_made": sum(len(r[2]) for r in results),
        "statuses": statuses,
        "failed_parts": p.parts - len(passed),
    }
    noisy = len(passed) + float(source.laplace(1.0 / p.eps_star))  # continuous: see the module docstring
    info["passed_test"] = bool(noisy > p.threshold)
    if not info["passed_test"]:
        return None, info  # ⊥: a robust (private) outcome, never an unaccounted one
    pool = [out for i in passed for out in results[i][1]]
    chosen = pool[int(source.integers(len(pool)))]
    model = LearnedModel(
        "prsma",
        kind,
        np.asarray(chosen),
        columns or [f"x{j}" for j in range(d)],
        epsilon,
        delta,
        "(ε, δ)-DP whatever the oracle does ([NRW19] Thm 8)",
        True,
        {
            "class": kind,
            "bound": bound,
            "norm_bound": norm_bound,
            **{k: v for k, v in p.to_dict().items() if k not in ("epsilon", "delta")},
        },
        {"statuses": statuses},
    )
    return model, info
