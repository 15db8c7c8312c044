"""Shared SCIP plumbing for every oracle: one model set-up, one one-hot warm start.

Every oracle solves quietly, single-threaded unless told otherwise, with SCIP's random
seed shift fixed so that the same model gives the same answer (results must not
depend on where an oracle call runs: the executors' determinism tests rely on it).
"""

from __future__ import annotations

import numpy as np


def new_model(name: str, *, time_limit: float | None = None, gap: float | None = 0.0, threads: int = 1):
    """A quiet, deterministic pyscipopt Model with the usual limits set."""
    from pyscipopt import Model

    model = Model(name)
    model.hideOutput()
    model.setParam("parallel/maxnthreads", max(1, int(threads)))
    model.setParam("randomization/randomseedshift", 0)
    if time_limit is not None:
        model.setParam("limits/time", float(time_limit))
    if gap is not None:
        model.setParam("limits/gap", float(gap))
    return model


def set_one_hot(model, sol, x, record) -> np.ndarray:
    """Write a record (one code per attribute) into ``sol`` for one-hot variables ``x[a][v]``."""
    record = np.asarray(record, dtype=np.int64)
    for a, v in enumerate(record):
        for u, var in enumerate(x[a]):
            model.setSolVal(sol, var, 1.0 if u == v else 0.0)
    return record
