"""Report Separator-Perturbed Min (RSPM) and Gaussian RSPM -- [NRW19] §III.A.

RSPM ([NRW19], listing "Report Separator-Perturbed Min"): with a separator set U = {e_1..e_m} of the
class (Def. 2: any two distinct hypotheses disagree on some e_i), draw eta_i ~ Lap(2m/eps) and return
the weighted oracle's minimiser on {(x_i, 1)} ∪ {(e_i, eta_i)}.

Privacy ([NRW19] Thm 6): eps-DP under replace-one neighbours **if the oracle is exact**.  The oracle
is SCIP; its status "optimal" is the certificate.  A call without the certificate voids the
guarantee: the returned model is marked ``certified=False`` and callers must not release it as private.

Separator sets for the 0/1 loss of each class ([NRW19] Appendix A, in the full version; the loss
class inherits the hypothesis class's separator by labelling every separator point 1):

* conjunctions over d binary features: e_j = 1 - (unit vector j); h_S(e_j) = [j not in S], so the
  loss on (e_j, 1) is [j in S]: the noise is a linear term on the membership bits (m = d);
* disjunctions: e_j = unit vector j; loss on (e_j, 1) is 1 - [j in S] (m = d);
* discrete halfspaces h_k(x) = 1[<k, x> >= 1/2] with integer k in {-B..B}^d (the grid W_tau of [NRVW20]
  §3.1 in units of tau): e_{j,t} = unit_j / (2t) for every half-integer t in (-B, B); then
  h_k(e_{j,t}) = [k_j > t] for t > 0 and [k_j < t] for t < 0, and these "thermometer" bits determine
  every k_j, so m = 2 B d ([NRVW20] §3.1 quotes size O(d/tau)).  Each loss term is linear in the
  one-hot value indicators [k_j = g] of the oracle's MIP.

Gaussian RSPM ([NRW19] Thm 7) replaces Lap(2m/eps) by N(0, sigma^2).  The theorem's calibration is in
the appendix of the full version, which is not among our sources; we use a calibration we can prove
here with [NRW19]'s own coupling (Lemmas 2-4): the map f(eta) = eta + v, v in {-2, +2}^m, keeps the
output when the data change, and the Gaussian density ratio p(eta)/p(eta + v) =
exp((2<eta, v> + 4m) / (2 sigma^2)) <= exp((4 ||eta||_1 + 4m) / (2 sigma^2)).  ||eta||_1 / sigma is a
sqrt(m)-Lipschitz function of a standard normal vector with mean m sqrt(2/pi), so with probability
>= 1 - delta it is at most A = m sqrt(2/pi) + sqrt(2 m ln(1/delta)), and the ratio is <= e^eps when
eps sigma^2 - 2 A sigma - 2m >= 0, i.e. sigma = (A + sqrt(A^2 + 2 m eps)) / eps.  This gives (eps, delta)-DP
(oracle-dependent, as RSPM) but not the sqrt(m) accuracy gain Thm 7 claims: see :func:`gaussian_sigma`.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import BudgetError, ParameterError
from ..oracles.learners import LearnerResult, conjunction_oracle, disjunction_oracle, halfspace_oracle, loss_weights
from ..privacy.samplers import Randomness
from .model import LearnedModel

CLASSES = ("halfspace", "conjunction", "disjunction")


# ------------------------------------------------------------------ separator sets
def separator_size(kind: str, d: int, bound: int = 2) -> int:
    if kind == "halfspace":
        return 2 * int(bound) * d
    if kind in ("conjunction", "disjunction"):
        return d
    raise ParameterError(f"Unknown hypothesis class {kind!r}; choose one of {CLASSES}.")


def halfspace_thresholds(bound: int) -> np.ndarray:
    """The half-integers t in (-B, B): one separator point per coordinate and t."""
    return np.arange(-bound, bound) + 0.5


def separator_points(kind: str, d: int, bound: int = 2) -> np.ndarray:
    """The separator set U as points of the universe (rows), in the order the noise vector uses."""
    if kind == "conjunction":
        return 1.0 - np.eye(d)
    if kind == "disjunction":
        return np.eye(d)
    ts = halfspace_thresholds(bound)
    pts = np.zeros((d * len(ts), d))
    for j in range(d):
        for a, t in enumerate(ts):
            pts[j * len(ts) + a, j] = 1.0 / (2.0 * t)
    return pts


def separator_terms(kind: str, eta: np.ndarray, d: int, bound: int = 2) -> dict:
    """The oracle terms equal to sum_i eta_i * loss_h(e_i, 1) (label 1 on every separator point)."""
    eta = np.asarray(eta, dtype=float)
    if kind == "conjunction":  # loss(e_j, 1) = [j in S]
        return {"linear": eta.copy(), "constant": 0.0}
    if kind == "disjunction":  # loss(e_j, 1) = 1 - [j in S]
        return {"linear": -eta, "constant": float(eta.sum())}
    ts = halfspace_thresholds(bound)
    grid = np.arange(-bound, bound + 1)
    E = eta.reshape(d, len(ts))
    costs = np.zeros((d, len(grid)))
    # loss(e_{j,t}, 1) = 1 - h(e_{j,t}); h = [k_j > t] (t > 0) or [k_j < t] (t < 0)
    for a, t in enumerate(ts):
        fires = (grid > t) if t > 0 else (grid < t)
        costs[:, fires] -= E[:, a : a + 1]
    return {"value_costs": costs, "constant": float(eta.sum())}


# ------------------------------------------------------------------ noise calibration
def laplace_scale(m: int, epsilon: float) -> float:
    """[NRW19] RSPM listing: eta_i ~ Lap(2m / eps)."""
    if epsilon <= 0:
        raise BudgetError(f"ε must be positive (got {epsilon}).")
    return 2.0 * m / epsilon


def gaussian_sigma(m: int, epsilon: float, delta: float) -> float:
    """sigma = (A + sqrt(A^2 + 2 m eps)) / eps, A = m sqrt(2/pi) + sqrt(2 m ln(1/delta)) (module docstring)."""
    if epsilon <= 0:
        raise BudgetError(f"ε must be positive (got {epsilon}).")
    if not 0 < delta < 1:
        raise BudgetError(f"Gaussian RSPM needs 0 < δ < 1 (got {delta}); use Laplace RSPM for δ = 0.")
    A = m * math.sqrt(2.0 / math.pi) + math.sqrt(2.0 * m * math.log(1.0 / delta))
    return (A + math.sqrt(A * A + 2.0 * m * epsilon)) / epsilon


def draw_noise(source: Randomness, m: int, epsilon: float, noise: str = "laplace", delta: float = 0.0) -> np.ndarray:
    """The separator weights η: m draws from OpenDP's vetted floating-point Laplace or Gaussian sampler
    (cryptographic source), or from the seeded generator of a demo."""
    if noise == "laplace":
        return np.asarray(source.laplace(laplace_scale(m, epsilon), m))
    if noise == "gaussian":
        return np.asarray(source.gaussian(gaussian_sigma(m, epsilon, delta), m))
    raise ParameterError(f"RSPM noise must be 'laplace' or 'gaussian', not {noise!r}.")


# ------------------------------------------------------------------ one run
def solve(
    X: np.ndarray,
    y: np.ndarray,
    eta: np.ndarray,
    kind: str = "halfspace",
    bound: int = 2,
    norm_bound: float | None = None,
    time_limit: float | None = 30.0,
) -> LearnerResult:
    """The weighted oracle on {(x_i, y_i), weight 1} ∪ {(e_i, 1), weight eta_i}: no randomness here."""
    d = X.shape[1]
    v, const = loss_weights(y)
    terms = separator_terms(kind, eta, d, bound)
    terms["constant"] = terms["constant"] + const
    if kind == "halfspace":
        return halfspace_oracle(X, v, bound=bound, norm_bound=norm_bound, time_limit=time_limit, **terms)
    oracle = conjunction_oracle if kind == "conjunction" else disjunction_oracle
    return oracle(X, v, time_limit=time_limit, **terms)


def rspm(
    X: np.ndarray,
    y: np.ndarray,
    epsilon: float,
    source: Randomness,
    *,
    kind: str = "halfspace",
    bound: int = 2,
    norm_bound: float | None = None,
    noise: str = "laplace",
    delta: float = 0.0,
    time_limit: float | None = 30.0,
    columns: list[str] | None = None,
) -> LearnedModel:
    """RSPM (noise='laplace': eps-DP) or Gaussian RSPM (noise='gaussian': (eps, delta)-DP), both only if
    the oracle certifies optimality ([NRW19] Thm 6); otherwise ``certified`` is False."""
    d = X.shape[1]
    m = separator_size(kind, d, bound)
    eta = draw_noise(source, m, epsilon, noise, delta)
    res = solve(X, y, eta, kind, bound, norm_bound, time_limit)
    return to_model(
        res,
        "rspm" if noise == "laplace" else "rspm-gauss",
        kind,
        epsilon,
        delta if noise == "gaussian" else 0.0,
        m,
        noise,
        columns or [f"x{j}" for j in range(d)],
        {"bound": bound, "norm_bound": norm_bound},
    )


def to_model(
    res: LearnerResult,
    method: str,
    kind: str,
    epsilon: float,
    delta: float,
    m: int,
    noise: str,
    columns: list[str],
    extra: dict,
) -> LearnedModel:
    scale = (
        ("laplace_scale", 2.0 * m / epsilon)
        if noise == "laplace"
        else ("gaussian_sigma", gaussian_sigma(m, epsilon, delta))
    )
    guarantee = (
        f"{'ε' if noise == 'laplace' else '(ε, δ)'}-DP ([NRW19] Thm 6) provided the oracle's solution is "
        "certified optimal"
    )
    params = res.params if res.params.size else np.zeros(len(columns), dtype=np.int64)
    return LearnedModel(
        method,
        kind,
        params,
        columns,
        epsilon,
        delta,
        guarantee,
        res.certified,
        {"class": kind, "separator_size": m, "noise": noise, scale[0]: scale[1], **extra},
        {"status": res.status, "seconds": res.seconds, "certified": res.certified},
    )
