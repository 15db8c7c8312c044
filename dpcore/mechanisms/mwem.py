"""MWEM over the explicit domain (Hardt, Ligett, McSherry 2012; the baseline of [VTBSW20] and [GGHRW14]).

The data player's side of the game that DualQuery ([GGHRW14]) turns around: keep a
distribution A over *every* possible record, and each round

1. select a badly answered query with the exponential mechanism
   (score |q(D) - q(A)|, sensitivity 1/n, parameter ε_t/2),
2. measure it with Laplace noise (sensitivity 1/n, parameter ε_t/2),
3. multiplicative-weights update, A(x) ∝ A(x) exp(q(x) (m - q(A)) / 2), replayed over
   every measurement so far;

then sample the requested number of rows from the final distribution.  Only
possible when the domain is small: A has one weight per record, so the mechanism
refuses domains above ``max_domain`` records ([GGHRW14] §7: "for low dimensional
datasets for which it is possible to maintain a distribution over records, MWEM
likely remains the state of the art").

Privacy guarantee: pure ε-DP (δ = 0) by basic composition of T rounds, each an
(ε/2T)-DP exponential mechanism plus an (ε/2T)-DP measurement; the MW updates and the
sampling are post-processing.  Replace-one neighbours.  No oracle.  Both draws come from
``ctx.noise``: the selection is OpenDP's exponential mechanism (report-noisy-max with Gumbel
noise), the measurement is exact: the selected cell's integer count plus discrete Laplace noise
of scale 2T/ε in count units (the geometric mechanism, (ε/2T)-DP for a count of sensitivity 1),
divided by n.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import DomainError
from ..privacy import check_budget
from .base import Budget, Mechanism, MechanismResult, Param, RunContext, SpendRecord
from .direct import integer_counts

#: Default refusal threshold: 10^7 records is 80 MB of float64 weights.
DEFAULT_MAX_DOMAIN = 10_000_000


def marginal_of_distribution(A: np.ndarray, attrs: tuple[int, ...]) -> np.ndarray:
    """Marginal of a distribution array over ``attrs``, flattened in the workload's cell order
    (row-major, the first attribute of the marginal most significant)."""
    others = tuple(a for a in range(A.ndim) if a not in attrs)
    m = A.sum(axis=others)  # axes now in increasing attribute order
    order = sorted(attrs)
    return np.transpose(m, [order.index(a) for a in attrs]).ravel()


def distribution_answers(workload, A: np.ndarray) -> np.ndarray:
    return np.concatenate([marginal_of_distribution(A, m) for m in workload.marginals])


def cell_slice(workload, qid: int, ndim: int) -> tuple:
    idx: list = [slice(None)] * ndim
    for a, v in workload.literals(qid):
        idx[a] = v
    return tuple(idx)


class MWEM(Mechanism):
    name = "mwem"
    title = "MWEM (multiplicative weights over the explicit domain)"
    paper = "baseline: Hardt, Ligett & McSherry 2012 (compared in [GGHRW14] §7 and [VTBSW20])"
    privacy = "robust"
    output = "rows"
    uses_oracle = False
    summary = (
        "Keeps a weight on every possible record. Each round it privately picks the query the current "
        "weights answer worst, measures it with noise, and reweights the records to agree with the "
        "measurement. Excellent on small domains; impossible on large ones (it needs one number per "
        "possible record), which is why DualQuery and DQRS exist."
    )
    accounting = (
        "pure ε, basic composition: T rounds × (exponential mechanism at ε/2T + Laplace measurement "
        "at ε/2T), sensitivity 1/n each."
    )
    parameters = (
        Param("rounds", "int", 30, "Number of rounds T (queries selected and measured).", low=1, high=10_000),
        Param(
            "rows",
            "int",
            None,
            "Synthetic rows sampled from the final distribution (empty = n).",
            low=1,
            high=10_000_000,
            optional=True,
        ),
        Param(
            "max_domain",
            "int",
            DEFAULT_MAX_DOMAIN,
            "Refuse domains with more possible records than this (memory: 8 bytes per record).",
            low=1,
            high=200_000_000,
            log=True,
            advanced=True,
        ),
    )

    def plan(self, n: int, workload, budget: Budget, params: dict) -> dict:
        check_budget(budget.epsilon, budget.delta)
        size = workload.domain.size
        limit = int(params["max_domain"])
        if size > limit:
            raise DomainError(
                f"MWEM keeps one weight per possible record, and this schema has {size:,} possible records "
                f"(above the limit of {limit:,}). Keep fewer attributes or coarser bins, or use DualQuery/DQRS, "
                f"which never enumerate the domain."
            )
        T = int(params["rounds"])
        return {
            "rounds": T,
            "epsilon_per_round": budget.epsilon / T,
            "laplace_scale": 2.0 * T / (budget.epsilon * n),
            "domain_size": size,
            "synthetic_rows": params.get("rows") or n,
        }

    def run(self, dataset, workload, budget: Budget, params: dict, ctx: RunContext) -> MechanismResult:
        plan = self.plan(dataset.n, workload, budget, params)
        n, T = dataset.n, plan["rounds"]
        eps_half = budget.epsilon / (2.0 * T)
        true = workload.answers(dataset.codes)
        counts = integer_counts(true, n)
        shape = workload.domain.shape
        A = np.full(shape, 1.0 / math.prod(shape))
        measured: list[tuple[int, float]] = []
        trace = []
        for t in range(1, T + 1):
            ctx.check_cancel()
            est = distribution_answers(workload, A)
            err = np.abs(true - est)
            q = ctx.noise.exponential_mechanism_large(err, eps_half, 1.0 / n)  # ε/2T, sensitivity 1/n
            m = (counts[q] + int(ctx.noise.discrete_laplace(1.0 / eps_half, 1)[0])) / n  # ε/2T on the count
            measured.append((int(q), float(m)))
            for qid, val in measured:  # replay every measurement (Hardt et al. §3)
                sl = cell_slice(workload, qid, A.ndim)
                current = float(A[sl].sum())
                A[sl] *= math.exp(0.5 * (val - current))
                A /= A.sum()
            trace.append(
                {
                    "round": t,
                    "selected_query": workload.query_label(int(q)),
                    "selected_qid": int(q),
                    "measurement": float(m),  # the noisy answer (released by MWEM's analysis: DP)
                    "max_error_before": float(err.max()),
                    "mean_error_before": float(err.mean()),
                }
            )
            ctx.report(t, T, f"round {t} of {T}", max_error=float(err.max()))
        n_rows = int(params.get("rows") or n)
        flat = ctx.rng.choice(A.size, size=n_rows, p=A.ravel() / A.sum())
        rows = np.stack(np.unravel_index(flat, shape), axis=1).astype(np.int64)
        return MechanismResult(
            spends=[SpendRecord(budget.epsilon, 0.0, None, f"mwem: {T} rounds")],
            epsilon_spent=budget.epsilon,
            delta_spent=0.0,
            accountant="pure ε (basic composition)",
            rows=rows,
            public={
                "rounds": T,
                "epsilon_per_round": plan["epsilon_per_round"],
                "laplace_scale": plan["laplace_scale"],
                "synthetic_rows": n_rows,
            },
            trace=trace,
        )
