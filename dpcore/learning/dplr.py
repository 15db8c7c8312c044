"""DP logistic regression by objective perturbation -- the convex-surrogate baseline of [NRVW20] §5.

Chaudhuri, Monteleoni & Sarwate (JMLR 2011), Algorithm 2 ("objective perturbation"), for the logistic
loss l(z) = ln(1 + e^{-z}) (|l'| <= 1, l'' <= c = 1/4), features scaled so ||x|| <= 1, labels in {-1, +1}:

    eps' = eps - ln(1 + 2c/(n Lambda) + c^2/(n^2 Lambda^2))
    if eps' > 0:  Delta = 0
    else:         Delta = c / (n (e^{eps/4} - 1)) - Lambda,   eps' = eps / 2
    b ~ density proportional to exp(-(eps'/2) ||b||)     (||b|| ~ Gamma(d, 2/eps'), direction uniform)
    f = argmin_f (1/n) sum_i l(y_i f.x_i) + (Lambda/2)||f||^2 + (1/n) b.f + (Delta/2)||f||^2

Privacy: eps-DP (pure) under replace-one neighbours (their Theorem 9), for the exact minimiser of this
strongly convex objective (solved to tight tolerance by L-BFGS).  [NRVW20] used DP-SGD with a moments
accountant instead; objective perturbation is the other baseline the issue allows and needs no
library beyond scipy.  Features are the same binary columns as the other learners (bias included),
divided by sqrt(d) -- a public constant -- so every ||x|| <= 1 exactly.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize

from ..errors import BudgetError, ParameterError
from ..privacy.samplers import Randomness
from .model import LearnedModel

LOGISTIC_C = 0.25


def perturbation_parameters(epsilon: float, n: int, lam: float, c: float = LOGISTIC_C) -> tuple[float, float]:
    """(eps', Delta) of Chaudhuri et al. 2011 Algorithm 2."""
    if epsilon <= 0:
        raise BudgetError(f"ε must be positive (got {epsilon}).")
    if lam <= 0 or n < 1:
        raise ParameterError("Objective perturbation needs a positive regulariser Λ and n ≥ 1.")
    eps_p = epsilon - math.log(1.0 + 2.0 * c / (n * lam) + c**2 / (n**2 * lam**2))
    if eps_p > 0:
        return eps_p, 0.0
    return epsilon / 2.0, c / (n * math.expm1(epsilon / 4.0)) - lam


def draw_perturbation(source: Randomness, d: int, eps_p: float) -> np.ndarray:
    """b with density ∝ exp(-(eps'/2)||b||): a Gamma(d, 2/eps') norm times a uniform direction.

    d is a whole number, so the Gamma norm is a sum of d exponentials (exact in distribution); no vetted
    floating-point sampler exists for either factor, so both come from the samplers module's cryptographic
    uniforms (docs/privacy.md)."""
    return source.gamma_integer_shape(d, 2.0 / eps_p) * source.unit_vector(d)


def dplr(
    X: np.ndarray,
    y: np.ndarray,
    epsilon: float,
    source: Randomness,
    *,
    lam: float = 1e-3,
    columns: list[str] | None = None,
) -> LearnedModel:
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    Z = X / math.sqrt(d)  # ||z|| <= 1 for binary x
    s = 2.0 * np.asarray(y, dtype=float) - 1.0
    eps_p, Delta = perturbation_parameters(epsilon, n, lam)
    b = draw_perturbation(source, d, eps_p)
    reg = lam + Delta

    def objective(f):
        margin = s * (Z @ f)
        loss = np.logaddexp(0.0, -margin).mean()
        grad_l = -(s * _sigmoid(-margin)) @ Z / n
        return loss + 0.5 * reg * f @ f + b @ f / n, grad_l + reg * f + b / n

    res = minimize(objective, np.zeros(d), jac=True, method="L-BFGS-B", options={"gtol": 1e-10, "maxiter": 5000})
    f = res.x / math.sqrt(d)  # so that predict uses the raw binary x: f.x/sqrt(d) = (f/sqrt(d)).x
    return LearnedModel(
        "dplr",
        "logistic",
        f,
        columns or [f"x{j}" for j in range(d)],
        epsilon,
        0.0,
        "ε-DP (Chaudhuri et al. 2011, objective perturbation, Thm 9)",
        True,
        {"lambda": lam, "epsilon_prime": eps_p, "Delta": Delta, "c": LOGISTIC_C},
        {"converged": bool(res.success)},
    )


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))
