"""The teaching page's fixed setting: bundled data, a small public workload, a fixed seed."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dpcore.workload import Workload

from . import datasource, state
from .mechanisms import for_workloads

K = 2
N_MARGINALS = 8
WORKLOAD_SEED = 0
DEMO_SEED = 0
TIME_LIMIT = 5.0


#: The game-playing mechanisms come first: they show the data/query player game best.
PREFERRED = ("dualquery", "fem")


def preset_mechanisms() -> list:
    """Registered mechanisms that declare a teaching preset (and work on a workload)."""
    found = [m for m in for_workloads()[0] if m.teaching_preset]
    rank = {name: i for i, name in enumerate(PREFERRED)}
    return sorted(found, key=lambda m: rank.get(m.name, len(PREFERRED)))


@st.cache_resource(show_spinner=False)
def teaching_workload() -> Workload:
    """Public: 8 random 2-way marginals of the bundled sample (selection seed 0, at most n cells)."""
    ds = datasource.bundled_dataset()
    return Workload.random_kway(ds.domain, K, N_MARGINALS, seed=WORKLOAD_SEED, max_cells=ds.n)


def teaching_dataset():
    ds = datasource.bundled_dataset()
    st.session_state[state.DATASET_NAMES][ds.fingerprint] = datasource.BUNDLED_NAME
    return ds


def preset_params(mech_cls) -> dict:
    return mech_cls.validate_params(dict(mech_cls.teaching_preset))


def ledger_steps(release) -> pd.DataFrame:
    """The run's privacy spends in order, with the running total (basic composition)."""
    rows, total = [], 0.0
    for i, s in enumerate(release.spends, 1):
        total += s.epsilon
        rows.append(
            {
                "step": i,
                "what": s.note,
                "ε": s.epsilon,
                "δ": s.delta,
                "ρ (zCDP)": s.rho if s.rho is not None else float("nan"),
                "ε so far (basic)": total,
            }
        )
    return pd.DataFrame(rows)


def latest_teaching_run(mechanism: str):
    for r in reversed(state.runs()):
        if r.kind == "teaching" and r.release.mechanism == mechanism:
            return r
    return None
