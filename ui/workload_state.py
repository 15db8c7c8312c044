"""The workload the user chose, built once per (dataset, choice) and kept in the session."""

from __future__ import annotations

import itertools
import math

import streamlit as st

from dpcore.errors import WorkloadError
from dpcore.workload import BYTES_PER_QUERY, Workload

from . import state

#: Refuse to enumerate more candidate marginals than this (the count is shown).
MAX_CANDIDATES = 200_000
#: Hand-picking lists every candidate in a widget: keep that list usable.
MAX_PICKABLE = 5_000


def choice() -> dict:
    return {
        "k": int(state.get(state.WL_K)),
        "mode": state.get(state.WL_MODE),
        "m": int(state.get(state.WL_M)),
        "seed": int(state.get(state.WL_SEED)),
        "cap": bool(state.get(state.WL_CAP)),
        "picked": list(state.get(state.WL_PICKED) or []),
    }


def marginal_label(names: list[str], combo: tuple[int, ...]) -> str:
    return " × ".join(names[a] for a in combo)


def candidates(domain, k: int, cap: int | None) -> list[tuple[int, ...]]:
    count = math.comb(len(domain), k)
    if count > MAX_CANDIDATES:
        raise WorkloadError(
            f"There are {count:,} {k}-way marginals over {len(domain)} attributes, more than the "
            f"{MAX_CANDIDATES:,} this page enumerates; choose a smaller k or fewer attributes."
        )
    shape = domain.shape
    return [
        c for c in itertools.combinations(range(len(domain)), k) if cap is None or math.prod(shape[a] for a in c) <= cap
    ]


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


def build(dataset, cfg: dict) -> Workload:
    dom = dataset.domain
    cap = dataset.n if cfg["cap"] else None
    if cfg["k"] < 1 or cfg["k"] > 5:
        raise WorkloadError(f"k must be between 1 and 5 (got {cfg['k']}).")
    if cfg["k"] > len(dom):
        raise WorkloadError(
            f"k = {cfg['k']} is larger than the number of attributes ({len(dom)}); choose k ≤ {len(dom)}."
        )
    if cfg["mode"] == "picked":
        if not cfg["picked"]:
            raise WorkloadError("No marginal picked: choose at least one from the list.")
        names = dom.names
        by_label = (
            {marginal_label(names, c): c for c in itertools.combinations(range(len(dom)), cfg["k"])}
            if math.comb(len(dom), cfg["k"]) <= MAX_CANDIDATES
            else {}
        )
        combos = [by_label[p] for p in cfg["picked"] if p in by_label]
        if not combos:
            raise WorkloadError("None of the picked marginals exists for this schema and k; pick again.")
        return Workload(dom, tuple(combos))
    cands = candidates(dom, cfg["k"], cap)
    if not cands:
        raise WorkloadError(
            f"No {cfg['k']}-way marginal has at most n = {dataset.n:,} cells; untick the cap or lower k."
        )
    if cfg["mode"] == "all":
        return Workload(dom, tuple(cands))
    if cfg["m"] > len(cands):
        capped = f" with at most n = {dataset.n:,} cells" if cap else ""
        raise WorkloadError(f"Only {len(cands):,} {cfg['k']}-way marginals{capped} exist; ask for at most that many.")
    return Workload.random_kway(dom, cfg["k"], cfg["m"], seed=cfg["seed"], max_cells=cap)


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
