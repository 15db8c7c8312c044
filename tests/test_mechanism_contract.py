"""The contract every registered mechanism keeps, tested over the whole registry: a new mechanism (one module
plus a registry line) gets these tests for free.

- it describes itself (name, title, paper by key, privacy, output, typed parameters with valid defaults);
- its plan is public and JSON-serialisable, or refuses with a message the user can act on;
- a run (its teaching preset, on a tiny planted table) spends within its budget and reports it, draws its
  privacy noise from ``ctx.noise`` (the samplers module), outputs what it declares, and is reproducible when
  seeded — the seeded run's card says its guarantee is "none";
- its card holds no seed, error figure, timing or solver statistic.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from dpcore import release as release_mod
from dpcore.errors import DPCoreError
from dpcore.mechanisms import registry
from dpcore.mechanisms.base import Budget
from dpcore.privacy.samplers import Randomness
from dpcore.workload import Workload

from .conftest import all_keys, planted_dataset

NAMES = registry.names()
EPSILON = 5.0
PRIVACY_DRAWS = (
    "discrete_gaussian", "discrete_laplace", "laplace", "gaussian", "bulk_laplace", "bulk_gaussian", "exponential",
    "gamma_integer_shape", "unit_vector", "exponential_mechanism", "exponential_mechanism_large",
    "sample_log_weights", "uniform", "integers", "permutation", "choice",
)  # fmt: skip
FORBIDDEN_CARD_KEYS = {"seed", "random_state", "max_error", "mean_error", "seconds", "oracle", "trace",
                       "per_marginal", "baselines", "statuses", "median_solve_seconds"}  # fmt: skip


class CountingRandomness(Randomness):
    """A Randomness that counts the privacy draws made through it."""

    calls: dict = {}

    def __getattribute__(self, name):
        attr = super().__getattribute__(name)
        if name in PRIVACY_DRAWS and callable(attr):
            counts = type(self).calls

            def counted(*args, **kwargs):
                counts[name] = counts.get(name, 0) + 1
                return attr(*args, **kwargs)

            return counted
        return attr


@pytest.fixture(scope="module")
def tiny():
    ds = planted_dataset(n=400)
    return ds, Workload.all_kway(ds.domain, 2)


@pytest.mark.parametrize("name", NAMES)
def test_describes_itself(name):
    m = registry.get(name)
    d = m.describe()
    assert d["name"] == name and d["title"] and d["summary"]
    assert m.privacy in ("robust", "oracle-dependent") and m.output in ("rows", "answers", "synopsis", "model")
    assert not re.search(r"seed \d{3}", f"{m.paper} {m.summary} {m.accounting}"), "cite papers by key, not seed numbers"
    params = m.validate_params({})
    assert set(params) == {p.name for p in m.parameters}
    for p in m.parameters:
        assert p.help, f"{name}.{p.name} needs help text"
    json.dumps(d, default=str)


@pytest.mark.parametrize("name", NAMES)
def test_plan_is_public_or_refuses_clearly(name, tiny):
    ds, wl = tiny
    m = registry.get(name)
    try:
        plan = m().plan(ds.n, wl, Budget(EPSILON, 1e-6), m.validate_params(dict(m.teaching_preset)))
    except DPCoreError as exc:
        assert len(str(exc)) > 20
        return
    json.dumps(plan, default=float)


@pytest.mark.parametrize("name", NAMES)
def test_a_seeded_run_keeps_the_contract(name, tiny, monkeypatch):
    ds, wl = tiny
    m = registry.get(name)
    params = dict(m.teaching_preset)
    try:
        m().plan(ds.n, wl, Budget(EPSILON, 1e-6), m.validate_params(params))
    except DPCoreError:
        pytest.skip(f"{name}'s plan refuses this tiny setting (tested above)")
    CountingRandomness.calls = {}
    monkeypatch.setattr(release_mod, "Randomness", CountingRandomness)
    rel, internal = release_mod.run_release(ds, wl, name, EPSILON, 1e-6, params, seed=7, ledger=None)
    # privacy noise came through the samplers module
    assert sum(CountingRandomness.calls.values()) > 0, f"{name} drew no privacy noise through ctx.noise"
    # it spent within its budget and says so on its card
    p = rel.card["privacy"]
    assert 0 < p["epsilon_spent"] <= EPSILON and p["delta_spent"] <= 1e-6
    assert sum(s.epsilon for s in rel.spends) <= EPSILON * (1 + 1e-9) + 1e-12
    assert p["guarantee"] == "none" and rel.demo  # seeded: a demo
    public_figures = {k: v for k, v in rel.card.items() if k != "parameters"}  # parameter names are the user's
    assert not set(all_keys(public_figures)) & FORBIDDEN_CARD_KEYS
    # it outputs what it declares
    if m.output == "rows":
        assert rel.rows is not None and rel.rows.shape[1] == len(ds.domain)
        assert (rel.rows >= 0).all() and (rel.rows < np.array(ds.domain.shape)).all()
    elif m.output == "answers":
        assert rel.answers is not None and rel.answers.shape == (wl.n_queries,)
    elif m.output == "synopsis":
        assert rel.synopsis_json() is not None
    assert internal.report["label"].startswith("INTERNAL")
    # a seeded run is reproducible
    again, _ = release_mod.run_release(ds, wl, name, EPSILON, 1e-6, params, seed=7, ledger=None)
    if rel.rows is not None:
        assert np.array_equal(rel.rows, again.rows)
    if rel.answers is not None:
        assert np.allclose(rel.answers, again.answers)
