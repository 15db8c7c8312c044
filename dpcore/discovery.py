"""A private schema by default: category sets, bounds and roles released under differential privacy.

Whatever the schema takes from the data is released under DP from a share of the run's (ε, δ): the
``"dp"`` provenance of :mod:`dpcore.domain`.  What the user declares costs nothing and wins field by field.
Neighbouring tables differ by replacing one row (n public), as everywhere in dpcore.

**The budget.**  :func:`discovery_cost` is public: for a run of (ε, δ) that must discover at least one column
it is (ε_d, δ_d) = (s·ε, s·δ) with s the schema share (:data:`DEFAULT_SCHEMA_SHARE`), else (0, 0).  The lead
reserves the whole (ε, δ), gives the mechanism (ε - ε_d, δ - δ_d) and records ONE spend of (ε_d, δ_d).
Inside, δ_d is split in two: δ_t = δ_d/2 for the thresholds of partition selection and δ_c = δ_d/2 for the
zCDP conversion; ρ_d is the largest ρ whose [CKS20] conversion at δ_c is ε_d
(:func:`dpcore.privacy.eps_to_zcdp`).  Every step is ρ-zCDP or, for partition selection, δ-approximately
ρ-zCDP (Bun & Steinke 2016, Def. 8.1); ρ's and δ's add under (adaptive) composition (ibid., Lemma 8.3), and
δ_t-approximate ρ_d-zCDP implies (ε_CKS(ρ_d, δ_c), δ_c + δ_t) = (ε_d, δ_d)-DP (write M(x) as the mixture
(1-δ_t)·M₀(x) + δ_t·M₁(x) with M₀ ρ-zCDP, apply the conversion to M₀).  Of ρ_d:

* roles, when some column's role is not declared: ρ_r = :data:`ROLE_RHO_SHARE`·ρ_d
  (:func:`dpcore.ingest.private_roles` -- discrete Gaussian counts and exponential-mechanism date formats);
* the rest, ρ_v, split evenly over the p_v columns whose value set or bounds are discovered (p_v is a
  function of released roles and of the user's choices, so public): ρ_col = ρ_v / p_v each.

**Category sets: thresholded partition selection** (Korolova, Kenthapadi, Mishra & Ntoulas 2009 with Laplace
noise; with Gaussian noise as in Gopi et al. 2020 and Desfontaines, Voss, Gipson & Mandayam 2022).  For every
categorical attribute j and every value v that occurs in the data, release v iff c_{j,v} + Z_{j,v} ≥ τ, with
Z_{j,v} i.i.d. discrete Gaussian N_Z(0, σ²) [CKS20].  Derivation for replace-one neighbours x, x' and p_c
attributes: the changed row moves, in every attribute, one value a_j down by one and one value b_j up by
one.  Call a value *common* if it occurs in both x and x', *unique to x* otherwise.

1. Common values: their counts differ in at most two coordinates per attribute, by 1 each: L2 sensitivity
   sqrt(2·p_c).  Noise and threshold on the common values is Gaussian-mechanism post-processing: ρ_c-zCDP with
   ρ_c = 2·p_c/(2σ²) = p_c/σ².
2. Values unique to x: a value that disappears when one row is replaced was held by that row alone, so it has
   count exactly 1, and there is at most one per attribute (a_j).  Each is released with probability
   P[1 + Z ≥ τ] = P[Z ≥ τ - 1]; all of them stay out with probability ≥ 1 - p_c·P[Z ≥ τ - 1].  Values that are
   absent from x are never released from x.
3. Hence the mechanism is δ_t-approximately ρ_c-zCDP with δ_t = p_c·P[Z ≥ τ - 1]: on the event that no value
   unique to x is released (probability ≥ 1 - δ_t) its output is the common-value mechanism of step 1.

So we set σ² = 1/ρ_col (then ρ_c = p_c·ρ_col, the attributes' share) and τ the smallest integer with
P[Z ≥ τ - 1] ≤ δ_t / p_c (:func:`partition_threshold`, using the tail bound of
:func:`discrete_gaussian_tail_bound`).  In particular **a value held by a single row enters the schema with
probability at most δ_t / p_c ≤ δ**.  Values not released go to the attribute's "other" code; missing is
always a code of its own.  The released set is sorted (natural order), so its order tells nothing more.

**Bounds: exponential-mechanism quantiles over a public grid** (McSherry & Talwar 2007; Smith 2011 for
quantiles; here the discrete-grid variant).  The lower bound is a point c of a public grid G chosen with
P(c) ∝ exp(ε_q·u(c) / (2Δ)), u(c) = -max(0, #{x_i < c} - q·m, q·m - #{x_i ≤ c}) (m = non-missing cells; the
two counts make a point mass, e.g. a column of mostly zeros, a single best candidate); the upper bound
likewise with #{x_i > c} and #{x_i ≥ c}.  One changed row moves each count by at most 1 and q·m by at most q,
and a maximum of such terms moves by at most as much: Δ = 1 + q.  Each choice is ε_q-DP and ε_q²/8-zCDP
(Cesar & Rogers 2021); a column with k ∈ {1, 2} bounds to find uses
ε_q = sqrt(8·ρ_col/k).  The level q is public: q = clip(2.5·(ln|G| + 5) / (ε_q·n), 0.005, 0.25), so that the
grid points far outside the data (utility ≈ -q·m) carry little mass in total -- with a small budget or few
rows the bounds sit at inner quantiles and the tails are clipped (counted, never dropped).  Grids:
:func:`numeric_grid` (0 and ±m·10^e, m = 1.00, 1.01, ..., 9.99, 10^-3 ≤ |x| < 10^11: 25,201 points;
whole numbers only for an integer column) and :func:`date_grid` (every unit of the attribute's granularity from
1900-01-01 to 2099-12-31: 73,049 days).  Every grid point beyond the data has the same utility (-q·m), so the
grids are fine enough that some point falls among the q·m values at the target.  Values outside the
chosen bounds are clipped (and counted), never dropped.  Below a budget (:func:`bounds_locatable`, public: ε_q,
n, |G|) the far points together outweigh the target and bounds would land anywhere on the grid; then no bound
is searched: :func:`dpcore.tabular.prepare_table` keeps a privately typed whole-number column as categories
(partition selection above) and leaves other numeric and date columns out, with the reason -- post-processing
of released roles and public figures, at no cost.

The non-private alternative, ``schema_from_data=True`` in :func:`dpcore.tabular.prepare_table`, reads exact
value sets and min/max (:func:`exact_values`, :func:`exact_bounds`); every field it fills is ``"inferred"``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import erfc

from .domain import _canonical_text, _natural_key, parse_dates, parse_numbers, unit_index, unit_start_days
from .errors import BudgetError, DomainError
from .ingest import ROLES, _distinct_present
from .mechanisms.base import SpendRecord
from .privacy import eps_to_zcdp, zcdp_to_eps_cks

#: Share of the run's ε (and δ) spent on discovery when any field must be discovered.
DEFAULT_SCHEMA_SHARE = 0.2
#: Share of discovery's δ that goes to the partition-selection thresholds (the rest to the zCDP conversion).
THRESHOLD_DELTA_SHARE = 0.5
#: Share of discovery's ρ spent on roles when some column's role is not declared.
ROLE_RHO_SHARE = 1.0 / 3.0
#: Default number of bins of a discovered numeric or date attribute (a public setting).
DEFAULT_BINS = 10
#: Decades searched for numeric bounds: 10^lo ≤ |x| < 10^(hi+1), and 0.
NUMERIC_DECADES = (-3, 10)
#: Mantissas of the numeric grid (three significant digits).  Every grid point beyond the data's range has the
#: same utility, so the mechanism is only accurate if some grid point falls among the q·m values at the target:
#: a relative step of 0.1-1% keeps one there even for data that ends abruptly at a large magnitude.
GRID_MANTISSAS = tuple(np.round(np.arange(100, 1000) / 100.0, 2))
#: The public search range of date bounds.
DATE_SEARCH = ("1900-01-01", "2099-12-31")
#: Quantile levels of the bounds are kept within these.
QUANTILE_RANGE = (0.005, 0.25)
#: Nats of EM margin the quantile level buys over the grid size (see the module docstring).
QUANTILE_MARGIN = 5.0


# ---------------------------------------------------------------------------- the budget
def discovery_cost(
    epsilon: float, delta: float, n_columns: int, *, schema_share: float = DEFAULT_SCHEMA_SHARE
) -> tuple[float, float]:
    """The (ε, δ) schema discovery will spend for a run of (ε, δ) with ``n_columns`` columns to discover (a role,
    a value set or a bound taken from the data).  Public: the app and the CLI state it before the run."""
    if n_columns <= 0:
        return 0.0, 0.0
    if not 0.0 < schema_share < 1.0:
        raise BudgetError(f"The schema share must be between 0 and 1 (got {schema_share}).")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise BudgetError(f"ε must be a positive number (got {epsilon}).")
    if not 0.0 < delta < 1.0:
        raise BudgetError(
            "Discovering a schema privately needs δ > 0 (a value set read from the data cannot be released with "
            "δ = 0). Give δ > 0, or declare the schema (a schema JSON, or the roles and value sets) so nothing is "
            "discovered."
        )
    return schema_share * float(epsilon), schema_share * float(delta)


@dataclass(frozen=True)
class DiscoveryPlan:
    """How discovery's (ε, δ) is split; every figure is a function of public inputs."""

    epsilon: float
    delta: float
    rho: float
    delta_threshold: float
    delta_conversion: float
    n_role_columns: int
    rho_roles: float
    rho_values: float

    @classmethod
    def make(cls, epsilon: float, delta: float, n_role_columns: int) -> DiscoveryPlan:
        d_t = THRESHOLD_DELTA_SHARE * delta
        d_c = delta - d_t
        rho = eps_to_zcdp(epsilon, d_c)
        rho_r = ROLE_RHO_SHARE * rho if n_role_columns > 0 else 0.0
        return cls(float(epsilon), float(delta), rho, d_t, d_c, int(n_role_columns), rho_r, rho - rho_r)

    def epsilon_check(self) -> float:
        """ε of the plan recomputed from ρ and δ_c ([CKS20] conversion): equals ``epsilon`` up to rounding."""
        return zcdp_to_eps_cks(self.rho, self.delta_conversion)

    def spend(self) -> SpendRecord:
        """The one ledger entry discovery makes: (ε_d, δ_d).  ``rho`` is None because partition selection is only
        δ-approximately zCDP (a ρ-sum alone would drop its δ)."""
        return SpendRecord(
            self.epsilon,
            self.delta,
            None,
            f"schema discovery: δ_t-approximate ρ-zCDP with ρ = {self.rho:.6g} (roles {self.rho_roles:.6g}, "
            f"value sets and bounds {self.rho_values:.6g}), δ_t = {self.delta_threshold:.3g}, converted at "
            f"δ_c = {self.delta_conversion:.3g} [CKS20]",
        )

    def to_dict(self) -> dict:
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "rho": self.rho,
            "delta_threshold": self.delta_threshold,
            "delta_conversion": self.delta_conversion,
            "rho_roles": self.rho_roles,
            "rho_values": self.rho_values,
        }


# ---------------------------------------------------------------------------- partition selection
def discrete_gaussian_tail_bound(sigma: float, t: float) -> float:
    """An upper bound on P[Z ≥ t] for Z ~ N_Z(0, σ²) and t ≥ 0.

    Σ_{k≥t} e^{-k²/2σ²} ≤ e^{-t²/2σ²} + ∫_t^∞ e^{-x²/2σ²} dx (the summand decreases for k ≥ 0), and the
    normaliser Σ_k e^{-k²/2σ²} ≥ σ·sqrt(2π) (Poisson summation: it equals σ·sqrt(2π)·(1 + 2Σ_m e^{-2π²σ²m²})).
    """
    if t <= 0:
        return 1.0
    if sigma <= 0:
        return 0.0
    t = math.ceil(t)
    return min(
        1.0,
        math.exp(-(t**2) / (2 * sigma**2)) / (sigma * math.sqrt(2 * math.pi)) + 0.5 * erfc(t / (sigma * math.sqrt(2))),
    )


def discrete_gaussian_tail(sigma: float, t: int) -> float:
    """P[Z ≥ t] for Z ~ N_Z(0, σ²), by direct summation (for tests and moderate σ)."""
    radius = int(math.ceil(40 * sigma)) + 10
    ks = np.arange(-radius, radius + 1, dtype=float)
    logw = -(ks**2) / (2 * sigma**2)
    w = np.exp(logw - logw.max())
    return float(w[ks >= t].sum() / w.sum())


def partition_threshold(sigma: float, delta_per_value: float) -> int:
    """The smallest integer τ ≥ 1 such that a value held by one row clears it with probability at most
    ``delta_per_value``: P[1 + Z ≥ τ] = P[Z ≥ τ - 1] ≤ δ (by :func:`discrete_gaussian_tail_bound`)."""
    if not 0 < delta_per_value < 1:
        raise BudgetError("Partition selection needs 0 < δ < 1 per value.")
    lo, hi = 0, max(1, int(math.ceil(sigma)))
    while discrete_gaussian_tail_bound(sigma, hi) > delta_per_value:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:  # the bound decreases in t: find the first t with bound ≤ δ
        mid = (lo + hi) // 2
        if discrete_gaussian_tail_bound(sigma, mid) <= delta_per_value:
            hi = mid
        else:
            lo = mid
    t = hi if discrete_gaussian_tail_bound(sigma, lo) > delta_per_value else lo
    return int(t) + 1


def value_counts(column: pd.Series) -> tuple[list[str], np.ndarray]:
    """The column's distinct non-missing values as the schema's labels (canonical text) and their counts."""
    uniques, counts = _distinct_present(column)
    return [_canonical_text(u) for u in uniques], counts


def select_values(column: pd.Series, sigma: float, tau: int, noise) -> tuple[str, ...]:
    """Thresholded partition selection on one column: the values whose noisy count clears τ, in natural order."""
    return select_many([column], sigma, tau, noise)[0]


def select_many(columns: list[pd.Series], sigma: float, tau: int, noise) -> list[tuple[str, ...]]:
    """:func:`select_values` for several columns with one draw of noise (cryptographic draws cost per call)."""
    found = [_distinct_present(c) for c in columns]
    sizes = [len(counts) for _, counts in found]
    noise_all = noise.discrete_gaussian(sigma, sum(sizes)) if sum(sizes) else np.zeros(0, np.int64)
    out, start = [], 0
    for (uniques, counts), size in zip(found, sizes):
        noisy = counts + noise_all[start : start + size]
        start += size
        kept = [_canonical_text(u) for u in np.asarray(uniques, dtype=object)[noisy >= tau]]
        out.append(tuple(sorted(kept, key=_natural_key)))
    return out


def exact_values(column: pd.Series) -> tuple[str, ...]:
    """Every distinct value, read off the data (NOT private: ``schema_from_data`` only)."""
    labels, _ = value_counts(column)
    return tuple(sorted(labels, key=_natural_key))


# ---------------------------------------------------------------------------- quantiles
def numeric_grid(integer: bool = False) -> np.ndarray:
    """The public search grid of numeric bounds: 0 and ±m·10^e, m in GRID_MANTISSAS, e in NUMERIC_DECADES."""
    mant = np.asarray(GRID_MANTISSAS)
    pos = np.concatenate([mant * 10.0**e for e in range(NUMERIC_DECADES[0], NUMERIC_DECADES[1] + 1)])
    grid = np.unique(np.concatenate([-pos, [0.0], pos]))
    if integer:
        grid = np.unique(np.round(grid))
    return grid


def date_grid(granularity: str) -> np.ndarray:
    """The public search grid of date bounds: every unit of ``granularity`` in DATE_SEARCH, as
    :func:`dpcore.domain.unit_index` numbers them (days are dense data: a coarser grid would leave no point among
    the q·m values at the target)."""
    lo, hi = (unit_index(parse_dates(pd.Series([d]), "%Y-%m-%d"), granularity)[0] for d in DATE_SEARCH)
    return np.arange(lo, hi + 1, dtype=np.int64)


def quantile_level(epsilon_q: float, n: int, grid_size: int) -> float:
    """The public quantile level of a bound (see the module docstring)."""
    return float(np.clip(_raw_quantile_level(epsilon_q, n, grid_size), *QUANTILE_RANGE))


def _raw_quantile_level(epsilon_q: float, n: int, grid_size: int) -> float:
    return 2.5 * (math.log(grid_size) + QUANTILE_MARGIN) / (epsilon_q * max(1, n))


#: Bounds are only searched when the grid's points beyond the data weigh at most e^-FAR_MASS_NATS of one point
#: at the target (:func:`bounds_locatable`).
FAR_MASS_NATS = 3.0


def bounds_locatable(kind: str, integer: bool, granularity: str | None, rho_column: float, k: int, n: int) -> bool:
    """Whether ``k`` bounds of a column can be located at ρ_column on n rows (public: no data is read).

    At the capped quantile level q = QUANTILE_RANGE[1] a grid point beyond the data has utility -q·n, so the
    |G| of them together weigh at most |G|·exp(-ε_q·q·n / (2(1 + q))) against one point at the target.  When
    that exceeds e^-FAR_MASS_NATS (about 5%), those far points win a real share of the draws and a bound lands
    anywhere on the grid -- an age bounded by ±10^8.  The caller then keeps the column another way (whole
    numbers as categories) or leaves it out, rather than release such bounds."""
    if k < 1:
        return True
    if rho_column <= 0:
        return False
    eps_q = math.sqrt(8.0 * rho_column / k)
    q = QUANTILE_RANGE[1]
    return math.log(_grid_size(kind, integer, granularity)) + FAR_MASS_NATS <= eps_q * q * n / (2.0 * (1.0 + q))


@functools.lru_cache(maxsize=16)
def _grid_size(kind: str, integer: bool, granularity: str | None) -> int:
    """Points of a search grid (built once per kind: a 400-column table asks for it per column)."""
    return len(numeric_grid(integer) if kind == "numeric" else date_grid(granularity or "day"))


def dp_quantile(sorted_values: np.ndarray, grid: np.ndarray, q: float, side: str, epsilon: float, noise) -> float:
    """One grid point by the exponential mechanism (sensitivity 1 + q).

    ``side="lower"``: u(c) = -max(0, #{x < c} - q·m, q·m - #{x ≤ c}), best where the q-quantile lies at or just
    above c (so a column that is mostly zeros gets lower bound 0, not any point of the empty plateau below it);
    ``"upper"`` mirrors it with #{x > c} and #{x ≥ c}."""
    m = len(sorted_values)
    below = np.searchsorted(sorted_values, grid, side="left")  # #{x < c}
    at_or_below = np.searchsorted(sorted_values, grid, side="right")  # #{x ≤ c}
    if side == "lower":
        strict, loose = below, at_or_below
    else:
        strict, loose = m - at_or_below, m - below  # #{x > c}, #{x ≥ c}
    target = q * m
    scores = -np.maximum(0.0, np.maximum(strict - target, target - loose))
    # Grid points between the same two data points have the same utility: draw a run of them with weight
    # (its length)·exp(ε·u/(2Δ)), then a point of the run uniformly -- exactly the exponential mechanism over the
    # whole grid, with one candidate per run (the long runs beyond the data collapse to one).
    change = np.flatnonzero((np.diff(strict) != 0) | (np.diff(loose) != 0)) + 1
    starts = np.concatenate([[0], change])
    lengths = np.diff(np.concatenate([starts, [len(grid)]]))
    sensitivity = 1.0 + q
    run_scores = scores[starts] + (2.0 * sensitivity / epsilon) * np.log(lengths)
    run = noise.exponential_mechanism(run_scores, epsilon, sensitivity)
    return float(grid[starts[run] + int(noise.integers(int(lengths[run])))])


def sorted_present(column: pd.Series, kind: str, granularity: str | None = None, fmt: str | None = None) -> np.ndarray:
    """The column's parseable values, sorted: numbers, or (dates) unit indices of ``granularity``."""
    if kind == "numeric":
        vals = parse_numbers(column).to_numpy(dtype=float)
    else:
        days = parse_dates(column, fmt)
        vals = np.where(np.isfinite(days), unit_index(days, granularity or "day"), np.nan)
    return np.sort(vals[np.isfinite(vals)])


def dp_bounds(
    values: np.ndarray, grids: tuple[np.ndarray, np.ndarray], n: int, epsilon_q: float, need: tuple[bool, bool], noise
) -> tuple[float | None, float | None, float]:
    """(lower, upper, q): the needed bounds of sorted ``values`` by :func:`dp_quantile` on the (lower, upper)
    grids, each ε_q-DP."""
    q = quantile_level(epsilon_q, n, max(len(g) for g in grids))
    lower = dp_quantile(values, grids[0], q, "lower", epsilon_q, noise) if need[0] else None
    upper = dp_quantile(values, grids[1], q, "upper", epsilon_q, noise) if need[1] else None
    return lower, upper, q


# ---------------------------------------------------------------------------- one table
@dataclass
class ValueTask:
    """What one kept column needs from the data: its value set, or one or both bounds."""

    name: str
    kind: str  # categorical | numeric | datetime
    integer: bool = False
    granularity: str | None = None
    format: str | None = None
    need_values: bool = False
    need_lower: bool = False
    need_upper: bool = False
    declared_lower: float | None = None
    declared_upper: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in ROLES or self.kind == "excluded":
            raise BudgetError(f"Column {self.name!r}: nothing to discover for role {self.kind!r}.")

    @property
    def needed(self) -> bool:
        return self.need_values or self.need_lower or self.need_upper


@dataclass
class Discovered:
    """What discovery released for the columns: field -> value per column, and how (public figures only)."""

    fields: dict[str, dict] = field(default_factory=dict)
    report: dict = field(default_factory=dict)


def _column_values(df: pd.DataFrame, task: ValueTask) -> np.ndarray:
    return sorted_present(df[task.name], task.kind, task.granularity, task.format)


def _days(task: ValueTask, value: float) -> float:
    """A date bound as the attribute stores it (days since 1970-01-01 at the unit's start)."""
    if task.kind != "datetime":
        return value
    return float(unit_start_days(np.array([int(value)]), task.granularity or "day")[0])


def _unit(task: ValueTask, days: float | None) -> float | None:
    if days is None or task.kind != "datetime":
        return days
    return float(unit_index(np.array([days]), task.granularity or "day")[0])


def _finish_bounds(task: ValueTask, lower, upper, grid: np.ndarray) -> tuple[float, float]:
    """Post-processing: whole numbers for an integer column, and lower < upper (dates: lower ≤ upper)."""
    lo = _unit(task, task.declared_lower) if lower is None else lower
    hi = _unit(task, task.declared_upper) if upper is None else upper
    if lo is None or hi is None:  # _needs asks discovery for every bound the schema does not declare
        raise DomainError(f"Column {task.name!r}: a bound is neither declared nor discovered; declare it.")
    if task.kind == "numeric":
        if task.integer:
            lo, hi = math.floor(lo), math.ceil(hi)
        if hi <= lo:
            if upper is not None or lower is None:  # move what was discovered, never a declared bound
                above = grid[grid > lo]
                hi = float(above[0]) if above.size else lo + 1.0
                hi = math.ceil(hi) if task.integer else hi
            else:
                below = grid[grid < hi]
                lo = float(below[-1]) if below.size else hi - 1.0
                lo = math.floor(lo) if task.integer else lo
    elif hi < lo:
        if upper is not None or lower is None:
            hi = lo
        else:
            lo = hi
    return float(lo), float(hi)


def discover_values(df: pd.DataFrame, tasks: list[ValueTask], rho_values: float, delta_threshold: float, noise):
    """Release value sets and bounds of ``tasks`` at ρ_values-zCDP (plus δ_threshold for the value sets), as the
    module docstring derives.  Returns :class:`Discovered` with, per column, the released fields."""
    todo = [t for t in tasks if t.needed]
    out = Discovered()
    if not todo:
        return out
    n = len(df)
    rho_col = rho_values / len(todo)
    cats = [t for t in todo if t.need_values]
    report: dict = {"rho_per_column": rho_col, "columns": len(todo)}
    if cats:
        sigma = 1.0 / math.sqrt(rho_col)
        tau = partition_threshold(sigma, delta_threshold / len(cats))
        report["categories"] = {"sigma": sigma, "threshold": tau, "attributes": len(cats)}
        for t, values in zip(cats, select_many([df[t.name] for t in cats], sigma, tau, noise)):
            out.fields[t.name] = {"values": values}
    for t in todo:
        if t.kind == "categorical":
            continue
        k = int(t.need_lower) + int(t.need_upper)
        eps_q = math.sqrt(8.0 * rho_col / k)
        if t.kind == "numeric":
            grids = (numeric_grid(t.integer),) * 2
        else:
            grids = (date_grid(t.granularity or "day"),) * 2
        present = _column_values(df, t)
        lower, upper, q = dp_bounds(present, grids, n, eps_q, (t.need_lower, t.need_upper), noise)
        lo, hi = _finish_bounds(t, lower, upper, grids[1])
        fields = {}
        if t.need_lower:
            fields["lower"] = _days(t, lo)
        if t.need_upper:
            fields["upper"] = _days(t, hi)
        out.fields.setdefault(t.name, {}).update(fields)
        report.setdefault("bounds", {})[t.name] = {"epsilon_per_bound": eps_q, "quantile_level": q}
    out.report = report
    return out


def exact_bounds(df: pd.DataFrame, task: ValueTask) -> tuple[float | None, float | None]:
    """Min and max read off the data (NOT private: ``schema_from_data`` only); None when the column is empty."""
    values = _column_values(df, task)
    if not values.size:
        return None, None
    lo, hi = float(values[0]), float(values[-1])
    if task.kind == "numeric" and task.integer:
        lo, hi = float(math.floor(lo)), float(math.ceil(hi))
    if task.kind == "numeric" and hi <= lo:
        hi = lo + 1.0
    return _days(task, lo), _days(task, hi)
