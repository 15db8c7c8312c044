"""Accountants, noise calibration and budget checks (every draw lives in :mod:`.samplers`).

Neighbouring datasets differ by *replacing* one record (bounded DP, ``n`` public), as
in [NRW19] and [VTBSW20].  Under that relation a normalised counting query has
sensitivity 1/n and one marginal's histogram of counts has L1 sensitivity 2 and
L2 sensitivity sqrt(2).

Three accountants, as in ALGORITHMS.md "Common ground":

* pure ε (basic composition: ε's add);
* (ε, δ) by advanced composition: [GGHRW14] Lemma 2.4 (Dwork, Rothblum, Vadhan) and
  [VTBSW20] Theorem 3;
* ρ-zCDP (Bun & Steinke 2016): ρ's add; Gaussian noise std σ on L2 sensitivity Δ is
  Δ²/(2σ²)-zCDP; an ε-DP mechanism is ε²/2-zCDP; the exponential mechanism with
  parameter ε is ε²/8-zCDP (bounded range, Cesar & Rogers 2021).  Conversion to
  (ε, δ): the standard ``ρ + 2 sqrt(ρ ln 1/δ)`` or the tighter Canonne–Kamath–Steinke
  bound (CKS 2020, Prop. 12 / Cor. 13).
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field

from scipy.optimize import brentq, minimize_scalar

from ..errors import BudgetError

NEIGHBOURS = "replace-one (bounded DP): neighbouring tables have the same n and differ in one record"


# ------------------------------------------------------------------ validation
def check_budget(epsilon: float, delta: float, n: int | None = None) -> list[str]:
    """Validate (ε, δ); raise :class:`BudgetError` if unusable, return warnings."""
    try:
        epsilon = float(epsilon)
        delta = float(delta)
    except (TypeError, ValueError):
        raise BudgetError("ε and δ must be numbers.") from None
    if not math.isfinite(epsilon) or epsilon <= 0:
        raise BudgetError(f"ε must be a positive finite number (got {epsilon}); typical values are 0.1 to 10.")
    if not math.isfinite(delta) or not 0 <= delta < 1:
        raise BudgetError(f"δ must be in [0, 1) (got {delta}); the usual choice is 1/n² or smaller.")
    if n is not None:
        check_delta(delta, n)
    warnings = []
    if epsilon > 10:
        warnings.append(
            f"ε = {epsilon:g} is very large: the guarantee is weak (e^ε ≈ {math.exp(min(epsilon, 700)):.3g})."
        )
    return warnings


def check_delta(delta: float, n: int) -> None:
    """Refuse δ ≥ 1/n: with such a δ a mechanism may publish a whole record with non-negligible probability.

    ``n`` is the table's row count (public under replace-one neighbours), never a count after filtering."""
    n = int(n)
    if n < 1:
        raise BudgetError("The table has no rows.")
    if delta >= 1.0 / n:
        raise BudgetError(
            f"δ = {delta:.3g} is too large for a table of n = {n:,} rows: δ must be below 1/n = {1.0 / n:.3g} "
            f"(a mechanism could otherwise publish a whole record). The default, 1/n² = {1.0 / n**2:.3g}, is the "
            "usual choice."
        )


def default_delta(n: int) -> float:
    """1/n², the literature's default ([VTBSW20] §6, [GGHRW14] §7)."""
    return 1.0 / float(n) ** 2


# ------------------------------------------------------------------ noise calibration
def gaussian_sigma_for_rho(rho: float, l2_sensitivity: float) -> float:
    """σ making the Gaussian mechanism ρ-zCDP: Δ²/(2σ²) = ρ."""
    if rho <= 0:
        raise BudgetError("ρ must be positive.")
    return l2_sensitivity / math.sqrt(2.0 * rho)


def gaussian_rho(sigma: float, l2_sensitivity: float) -> float:
    return l2_sensitivity**2 / (2.0 * sigma**2)


def advanced_composition(eps0: float, k: int, delta: float) -> float:
    """[GGHRW14] Lemma 2.4: k-fold composition of ε0-DP mechanisms is (ε, δ)-DP for
    ε = sqrt(2 k ln(1/δ)) ε0 + k ε0 (e^{ε0} - 1)."""
    if k <= 0:
        return 0.0
    if not 0 < delta < 1:
        raise BudgetError("Advanced composition needs 0 < δ < 1.")
    return math.sqrt(2.0 * k * math.log(1.0 / delta)) * eps0 + k * eps0 * math.expm1(eps0)


def advanced_composition_fem(eps0: float, T: int, delta: float) -> float:
    """[VTBSW20] Theorem 3 in the form the FEM analysis uses:
    ε = T ε0²/2 + ε0 sqrt(2 T ln(1/δ))."""
    if not 0 < delta < 1:
        raise BudgetError("Advanced composition needs 0 < δ < 1.")
    return T * eps0**2 / 2.0 + eps0 * math.sqrt(2.0 * T * math.log(1.0 / delta))


def zcdp_to_eps(rho: float, delta: float) -> float:
    """Bun–Steinke conversion: ρ-zCDP ⇒ (ρ + 2 sqrt(ρ ln 1/δ), δ)-DP."""
    if rho <= 0:
        return 0.0
    if delta <= 0:
        return math.inf
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def zcdp_to_eps_cks(rho: float, delta: float) -> float:
    """Canonne–Kamath–Steinke (2020) conversion, tighter than :func:`zcdp_to_eps`:
    ε = inf_{α>1} αρ + (ln(1/δ) + (α-1) ln(1-1/α) - ln α) / (α-1)."""
    if rho <= 0:
        return 0.0
    if delta <= 0:
        return math.inf

    def eps_at(log_am1: float) -> float:
        am1 = math.exp(log_am1)  # α - 1 > 0, searched on a log scale
        a = 1.0 + am1
        return a * rho + (math.log(1.0 / delta) + am1 * math.log1p(-1.0 / a) - math.log(a)) / am1

    res = minimize_scalar(eps_at, bounds=(-20.0, 20.0), method="bounded", options={"xatol": 1e-10})
    return float(min(res.fun, zcdp_to_eps(rho, delta)))


def eps_to_zcdp(epsilon: float, delta: float, conversion: str = "cks") -> float:
    """Largest ρ whose (ε, δ) conversion is at most ``epsilon``."""
    if epsilon <= 0:
        raise BudgetError("ε must be positive.")
    if not 0 < delta < 1:
        raise BudgetError("zCDP accounting needs 0 < δ < 1; use pure-ε accounting for δ = 0.")
    conv = zcdp_to_eps_cks if conversion == "cks" else zcdp_to_eps
    # The standard conversion has a closed-form inverse; CKS is tighter, so ρ ≥ that.
    L = math.log(1.0 / delta)
    lo = (math.sqrt(L + epsilon) - math.sqrt(L)) ** 2
    if conversion != "cks":
        return lo
    hi = max(2 * lo, epsilon)
    while conv(hi, delta) <= epsilon:
        hi *= 2
    return brentq(lambda r: conv(r, delta) - epsilon, lo, hi, xtol=1e-14, rtol=1e-12)


# ------------------------------------------------------------------ ledger
@dataclass
class Spend:
    """One privacy expenditure on one dataset."""

    dataset: str
    mechanism: str
    epsilon: float
    delta: float
    rho: float | None = None  # set when the mechanism is accounted in zCDP
    note: str = ""
    time: float = field(default_factory=time.time)
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    def to_dict(self) -> dict:
        return asdict(self)


class PrivacyLedger:
    """Every spend of a session, totalled per dataset.

    Two totals per dataset: basic composition (ε's and δ's add, always valid) and
    zCDP (ρ's add; pure-ε entries count as ε²/2; entries without a ρ make the
    zCDP total unavailable), converted at the sum of the entries' δ's.
    """

    def __init__(self) -> None:
        self._entries: list[Spend] = []
        self._lock = threading.Lock()

    def record(self, spend: Spend) -> Spend:
        with self._lock:
            self._entries.append(spend)
        return spend

    def entries(self, dataset: str | None = None) -> list[Spend]:
        with self._lock:
            return [e for e in self._entries if dataset is None or e.dataset == dataset]

    def datasets(self) -> list[str]:
        return sorted({e.dataset for e in self.entries()})

    def total(self, dataset: str) -> dict:
        es = self.entries(dataset)
        eps = sum(e.epsilon for e in es)
        delta = sum(e.delta for e in es)
        rho = 0.0
        zcdp_ok = True
        for e in es:
            if e.rho is not None:
                rho += e.rho
            elif e.delta == 0:
                rho += e.epsilon**2 / 2.0
            else:
                zcdp_ok = False
        out = {
            "runs": len(es),
            "epsilon_basic": eps,
            "delta_basic": delta,
            "rho": rho if zcdp_ok else None,
            "epsilon_zcdp": None,
        }
        if zcdp_ok and es and delta > 0:
            out["epsilon_zcdp"] = zcdp_to_eps_cks(rho, delta)
        return out

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
