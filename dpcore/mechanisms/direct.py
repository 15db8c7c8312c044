"""Direct measurement baselines: noise on every workload marginal (answers only).

The yardstick every synthetic-data mechanism is compared against (ALGORITHMS.md,
"Direct measurement baselines").  Replace-one neighbours: one marginal's count
histogram has L1 sensitivity 2 and L2 sensitivity sqrt(2), so the whole workload of
|W| marginals has L1 sensitivity 2|W| and L2 sensitivity sqrt(2|W|).
Post-processing (clip at 0, renormalise each marginal to sum 1) costs nothing.

The noise is exact and integer: the marginals are measured as integer counts (n · answer),
perturbed with the discrete Gaussian or discrete Laplace of [CKS20] drawn by ``ctx.noise``
(OpenDP's samplers from a cryptographic source; never floating-point noise, which is open to
Mironov's 2012 attack), and divided by n.  The accounting is the continuous mechanisms': the
discrete Gaussian with scale σ on integer counts of L2 sensitivity Δ is Δ²/(2σ²)-zCDP ([CKS20]
§2, and Rényi divergences add over independent coordinates), the discrete Laplace with scale b on
counts of L1 sensitivity Δ₁ is Δ₁/b-DP.
"""

from __future__ import annotations

import math

import numpy as np

from ..privacy import check_budget, eps_to_zcdp, gaussian_sigma_for_rho
from .base import Budget, Mechanism, MechanismResult, Param, RunContext, SpendRecord


def integer_counts(answers: np.ndarray, n: int) -> np.ndarray:
    """The counts n · answer of normalised counting-query answers, as exact integers.

    Exact noise needs exact counts: a value that is not (to rounding) a whole number means the
    answers were not counts over n rows, and adding integer noise to it would misstate the mechanism."""
    scaled = np.asarray(answers, dtype=np.float64) * n
    counts = np.rint(scaled)
    if scaled.size and np.max(np.abs(scaled - counts)) > 1e-5:
        raise ValueError("integer_counts: the answers are not counts over n rows")
    return counts.astype(np.int64)


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of v onto the probability simplex (sort-based, Held et al. 1974)."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.arange(1, len(v) + 1)
    rho = np.nonzero(u - css / k > 0)[0][-1]
    theta = css[rho] / (rho + 1.0)
    return np.maximum(v - theta, 0.0)


def project_marginals(workload, noisy: np.ndarray) -> np.ndarray:
    """Each noisy marginal replaced by its nearest (L2) probability table.

    Post-processing, so free; it never increases a marginal's L2 error (the simplex
    is convex and contains the true table) and zeroes most noise on empty cells.
    (Clipping at 0 and rescaling does not have this property: on a 42,500-cell
    marginal the clipped noise alone sums to many times the true mass.)
    """
    return np.concatenate([project_simplex(part) for part in workload.split(noisy)])


class DirectGaussian(Mechanism):
    name = "gaussian"
    zcdp_native = True  # ρ = eps_to_zcdp(ε, δ) of its budget is all it spends (plan)
    title = "Direct Gaussian answers (yardstick)"
    paper = "baseline (Gaussian mechanism; zCDP of Bun & Steinke 2016)"
    privacy = "robust"
    output = "answers"
    uses_oracle = False
    summary = (
        "Adds Gaussian noise to every count of every chosen marginal and publishes the noisy tables. "
        "No synthetic rows: it is the yardstick synthetic data is measured against."
    )
    accounting = (
        "ρ-zCDP: L2 sensitivity sqrt(2|W|) on counts, σ = sqrt(|W|/ρ); ρ is the largest value whose "
        "Canonne–Kamath–Steinke conversion meets (ε, δ)."
    )
    parameters = (
        Param(
            "postprocess",
            "bool",
            True,
            "Replace each noisy marginal by the nearest table of non-negative "
            "proportions summing to 1 (free: post-processing never costs privacy, and it lowers the error).",
        ),
    )

    def plan(self, n, workload, budget: Budget, params) -> dict:
        check_budget(budget.epsilon, budget.delta)
        from ..errors import BudgetError

        if budget.delta <= 0:
            raise BudgetError("The Gaussian mechanism needs δ > 0; use the Laplace baseline for δ = 0.")
        rho = eps_to_zcdp(budget.epsilon, budget.delta)
        sigma = gaussian_sigma_for_rho(rho, math.sqrt(2.0 * workload.n_marginals))
        return {"rho": rho, "sigma_counts": sigma, "sigma_answers": sigma / n}

    def run(self, dataset, workload, budget, params, ctx: RunContext) -> MechanismResult:
        plan = self.plan(dataset.n, workload, budget, params)
        ctx.report(0, 1, "measuring every marginal")
        counts = integer_counts(workload.answers(dataset.codes), dataset.n)
        # [CKS20]: discrete Gaussian noise in count units, σ_counts = σ_answers · n
        noisy = (counts + ctx.noise.discrete_gaussian(plan["sigma_counts"], counts.size)) / dataset.n
        answers = project_marginals(workload, noisy) if params.get("postprocess", True) else noisy
        ctx.report(1, 1, "done")
        return MechanismResult(
            spends=[SpendRecord(budget.epsilon, budget.delta, plan["rho"], "Gaussian measurement of every marginal")],
            epsilon_spent=budget.epsilon,
            delta_spent=budget.delta,
            accountant="zCDP (CKS conversion)",
            answers=answers,
            public={"rho": plan["rho"], "sigma_counts": plan["sigma_counts"]},
        )


class DirectLaplace(Mechanism):
    name = "laplace"
    title = "Direct Laplace answers (pure ε)"
    paper = "baseline (Laplace mechanism; Dwork et al. 2006)"
    privacy = "robust"
    output = "answers"
    uses_oracle = False
    summary = (
        "Adds Laplace noise to every count of every chosen marginal: pure ε-DP (δ = 0), "
        "noisier than the Gaussian yardstick when there are many marginals."
    )
    accounting = "pure ε: L1 sensitivity 2|W| on counts, Laplace scale 2|W|/ε."
    parameters = DirectGaussian.parameters

    def plan(self, n, workload, budget: Budget, params) -> dict:
        check_budget(budget.epsilon, budget.delta)
        scale = 2.0 * workload.n_marginals / budget.epsilon
        return {"laplace_scale_counts": scale}

    def run(self, dataset, workload, budget, params, ctx: RunContext) -> MechanismResult:
        plan = self.plan(dataset.n, workload, budget, params)
        counts = integer_counts(workload.answers(dataset.codes), dataset.n)
        # the geometric mechanism: discrete Laplace noise in count units, ε = 2|W| / scale
        noisy = (counts + ctx.noise.discrete_laplace(plan["laplace_scale_counts"], counts.size)) / dataset.n
        answers = project_marginals(workload, noisy) if params.get("postprocess", True) else noisy
        return MechanismResult(
            spends=[SpendRecord(budget.epsilon, 0.0, None, "Laplace measurement of every marginal")],
            epsilon_spent=budget.epsilon,
            delta_spent=0.0,
            accountant="pure ε (basic composition)",
            answers=answers,
            public=plan,
        )
