"""The workload the user chose, built once per (dataset, choice) and kept in the session.

Four ways to choose, all from public quantities (the schema and n, never the rows):

* ``recommended`` (the default): :func:`dpcore.workload.default_workload` -- every attribute alone, then pairs
  whose cells hold at least 5 rows on average, 64 marginals at most.  It fits any table (50 rows or 400
  columns), so the page never opens on an error.
* ``all``: every k-way marginal (optionally only those with at most n cells).
* ``random``: m of them, drawn with a public seed.
* ``picked``: attributes picked by hand; the workload is each of them alone and every combination of up to k
  of them (again optionally capped at n cells).

Values come straight from the widgets' session keys and are checked here (the Release page builds the workload
without showing the controls), so a bad value gives a message, never a crash or a silently different workload.
"""

from __future__ import annotations

import itertools
import math

import streamlit as st

from dpcore.errors import WorkloadError
from dpcore.workload import BYTES_PER_QUERY, Workload, default_workload

from . import state

MODES = ("recommended", "all", "random", "picked")
#: The mode's session key (its own, so that the default is "recommended" whatever an older session saved under
#: ``state.WL_MODE``); the other choices keep their ``state.WL_*`` keys.
MODE = state.KEEP + "wl_choice"
MODE_TEXT = {
    "recommended": "recommended for this table",
    "all": "all k-way marginals",
    "random": "m random k-way marginals",
    "picked": "pick attributes by hand",
}
#: Refuse to enumerate more candidate marginals than this (the count is shown).
MAX_CANDIDATES = 200_000
#: Largest k the page offers.
MAX_K = 5
#: Attributes pre-selected when "pick by hand" is first opened (so it opens on a working workload).
FIRST_PICK = 3


def choice() -> dict:
    mode = state.get(MODE)
    return {
        "mode": mode if mode in MODES else "recommended",
        "k": state.get(state.WL_K),
        "m": state.get(state.WL_M),
        "seed": state.get(state.WL_SEED),
        "cap": bool(state.get(state.WL_CAP)),
        "picked": [str(a) for a in (state.get(state.WL_PICKED) or [])],
    }


def _whole(value, what: str, low: int, high: int | None = None) -> int:
    try:
        num = float(value)
    except (TypeError, ValueError):
        raise WorkloadError(f"{what} must be a whole number (it is empty or not a number).") from None
    if not math.isfinite(num) or not num.is_integer() or num < low or (high is not None and num > high):
        bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise WorkloadError(f"{what} must be a whole number {bounds} (got {value}).")
    return int(num)


def candidates(domain, k: int, cap: int | None, among: list[int] | None = None) -> list[tuple[int, ...]]:
    """Every k-way marginal (over ``among``, default all attributes) with at most ``cap`` cells."""
    attrs = list(range(len(domain))) if among is None else list(among)
    count = math.comb(len(attrs), k)
    if count > MAX_CANDIDATES:
        raise WorkloadError(
            f"There are {count:,} {k}-way marginals over {len(attrs)} attributes, more than the "
            f"{MAX_CANDIDATES:,} this page enumerates; choose a smaller k or fewer attributes."
        )
    shape = domain.shape
    return [c for c in itertools.combinations(attrs, k) if cap is None or math.prod(shape[a] for a in c) <= cap]


def estimate(domain, combos) -> dict:
    """Marginals, queries and memory of a list of marginals, before building anything."""
    shape = domain.shape
    cells = [math.prod(shape[a] for a in c) for c in combos]
    total = sum(cells)
    return {
        "n_marginals": len(combos),
        "n_queries": total,
        "largest": max(cells, default=0),
        "memory_bytes": total * BYTES_PER_QUERY,
    }


def picked_marginals(domain, picked: list[str], k: int, cap: int | None) -> list[tuple[int, ...]]:
    """Each picked attribute alone and every combination of up to ``k`` of them (cells ≤ cap)."""
    index = {name: i for i, name in enumerate(domain.names)}
    attrs = sorted({index[a] for a in picked if a in index})
    if not attrs:
        raise WorkloadError("Pick at least one attribute of this table.")
    combos: list[tuple[int, ...]] = []
    for width in range(1, min(k, len(attrs)) + 1):
        combos += candidates(domain, width, cap, attrs)
    if not combos:
        raise WorkloadError(
            f"Every combination of the picked attributes has more cells than the table has rows (n = {cap:,}); "
            "untick the cap or pick attributes with fewer values."
        )
    return combos


def build(dataset, cfg: dict) -> Workload:
    dom = dataset.domain
    cap = dataset.n if cfg["cap"] else None
    mode = cfg["mode"]
    if mode == "recommended":
        return default_workload(dom, dataset.n)
    k = _whole(cfg["k"], "k (attributes per marginal)", 1, MAX_K)
    if mode == "picked":
        picked = cfg["picked"]
        if picked and not set(picked) & set(dom.names):
            # picked for another table (or schema): start from this one's first attributes, as the page does
            picked = dom.names[:FIRST_PICK]
        return Workload(dom, tuple(picked_marginals(dom, picked, k, cap)))
    if k > len(dom):
        raise WorkloadError(f"k = {k} is larger than the number of attributes ({len(dom)}); choose k ≤ {len(dom)}.")
    cands = candidates(dom, k, cap)
    if not cands:
        raise WorkloadError(f"No {k}-way marginal has at most n = {dataset.n:,} cells; untick the cap or lower k.")
    if mode == "all":
        return Workload(dom, tuple(cands))
    m = _whole(cfg["m"], "m (number of marginals)", 1)
    seed = _whole(cfg["seed"], "The selection seed", 0, 2**32 - 1)
    if m > len(cands):
        capped = f" with at most n = {dataset.n:,} cells" if cap else ""
        raise WorkloadError(f"Only {len(cands):,} {k}-way marginals{capped} exist; ask for at most that many.")
    return Workload.random_kway(dom, k, m, seed=seed, max_cells=cap)


def describe_choice(dataset, cfg: dict) -> str:
    """One line saying what the chosen workload is, in plain words."""
    mode = cfg["mode"]
    if mode == "recommended":
        return (
            "Every attribute on its own, plus pairs of attributes whose cells hold at least 5 rows on average "
            "(64 marginals at most, chosen with a fixed public seed). It suits any table. The Release page fits the "
            "pairs to the run's noise: at a small ε, pairs whose cells would hold less than the noise are swapped "
            "for smaller ones."
        )
    if mode == "picked":
        return "Each picked attribute on its own and every combination of up to k of them."
    if mode == "all":
        return "Every combination of k attributes."
    return "m combinations of k attributes, drawn at random with a public seed (the workload is public)."


def fitted_to_run(dataset, workload: Workload, mech_cls, epsilon: float, delta: float, params: dict) -> Workload:
    """The recommended workload as this run will use it: fitted to the run's public noise
    (:func:`dpcore.release.fitted_default_workload`: pairs whose cells would hold less than the expected noise are
    chosen again among smaller ones), as the command line and the library do.  Any other mode: as chosen."""
    from dpcore.mechanisms.base import Budget
    from dpcore.release import fitted_default_workload

    if choice()["mode"] != "recommended" or workload.domain != dataset.domain:
        return workload
    return fitted_default_workload(dataset.domain, dataset.n, mech_cls, Budget(epsilon, delta), dict(params))


def default_for_run(dataset, epsilon: float, delta: float, outcome: str | None = None):
    """The default ("auto") as this run resolves it with the recommended workload: ``(mechanism class, its
    parameters, workload, why)`` from :func:`dpcore.release.default_release_plan` (public: n, the attribute sizes,
    ε, δ and the ``outcome`` column chosen, if any), as the command line and the library do.  Offered only where
    :func:`offers_default` says so."""
    from dpcore.mechanisms.base import Budget
    from dpcore.release import OUTCOME, default_release_plan

    given = {OUTCOME: outcome} if outcome and outcome in dataset.domain.names else {}
    return default_release_plan(dataset.domain, dataset.n, Budget(epsilon, delta), given)


def offers_default(dataset, workload: Workload | None) -> bool:
    """The default mechanism chooses its own marginals: offered with the recommended workload only."""
    return workload is not None and choice()["mode"] == "recommended" and workload.domain == dataset.domain


def current_workload(dataset) -> tuple[Workload | None, str | None]:
    """(workload, None) or (None, the reason it cannot be built); cached per (dataset, choice)."""
    if dataset is None:
        return None, "Load a dataset on the Data page first."
    cfg = choice()
    key = (dataset.fingerprint, repr(sorted(cfg.items())))
    cached = state.get(state.WORKLOAD)
    if cached is not None and cached[0] == key:
        return cached[1], cached[2]
    try:
        wl, err = build(dataset, cfg), None
    except WorkloadError as exc:
        wl, err = None, str(exc)
    st.session_state[state.WORKLOAD] = (key, wl, err)
    return wl, err
