"""The persistent FTPL oracle against brute force on tiny domains (real SCIP solves)."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.errors import OracleError
from dpcore.oracles import ftpl
from dpcore.oracles.ftpl import ClauseHistory, FTPLBatch, brute_force_sample, objective_values, solve_batch

SHAPE = (3, 2, 4, 3)
D = sum(SHAPE)


def random_clause(rng, shape=SHAPE):
    k = int(rng.integers(1, 4))
    attrs = tuple(sorted(rng.choice(len(shape), size=k, replace=False).tolist()))
    vals = tuple(int(rng.integers(0, shape[a])) for a in attrs)
    return attrs, vals, bool(rng.random() < 0.3)


def test_growing_model_matches_brute_force_every_round():
    """FEM-style use: one clause per round (repeats gain weight), fresh noise per sample;
    the cached, incrementally grown model must return the exact argmax every time."""
    rng = np.random.default_rng(7)
    h = ClauseHistory("test-grow", SHAPE)
    clauses = [random_clause(rng) for _ in range(6)]
    for _ in range(14):
        a, v, neg = clauses[int(rng.integers(0, len(clauses)))]  # repeats happen: weights > 1
        h = h.add(a, v, neg)
        for perturbation in ("exp", "lap"):
            noise = -rng.exponential(2.0, (3, D)) if perturbation == "exp" else rng.laplace(0, 1.0, (3, D))
            results = solve_batch(FTPLBatch(h, noise))
            for row, r in zip(noise, results):
                rec, val = brute_force_sample(h, row)
                assert r.optimal
                assert objective_values(h, row, r.record)[0] == pytest.approx(val, abs=1e-6)
                # Continuous noise: the optimum is unique, so the record itself must agree.
                np.testing.assert_array_equal(r.record, rec)
    assert max(h.weights) > 1  # the test did exercise merged (repeated) clauses
    ftpl.release_models("test-grow")


def test_diverged_history_rebuilds_the_model():
    """A task whose history is not an extension of the cached one (another run, or a
    worker that saw a different prefix) must not reuse stale clauses."""
    rng = np.random.default_rng(3)
    h1 = ClauseHistory("test-div", SHAPE).add((0, 1), (0, 0), False).add((2,), (3,), False)
    noise = -rng.exponential(0.3, (2, D))
    solve_batch(FTPLBatch(h1, noise))
    h2 = ClauseHistory("test-div", SHAPE).add((0, 1), (2, 1), False)  # different first clause
    for row, r in zip(noise, solve_batch(FTPLBatch(h2, noise))):
        rec, _ = brute_force_sample(h2, row)
        np.testing.assert_array_equal(r.record, rec)
    ftpl.release_models("test-div")


def test_empty_history_samples_are_uniform_per_attribute():
    """With no clause the FEM sample is argmin of i.i.d. Exp noise per attribute block,
    hence uniform over the block's values: counts must be Binomial(N, 1/|X_a|)."""
    rng = np.random.default_rng(11)
    N = 240
    h = ClauseHistory("test-uniform", SHAPE)
    recs = np.stack([r.record for r in solve_batch(FTPLBatch(h, -rng.exponential(2.0, (N, D))))])
    for a, size in enumerate(SHAPE):
        counts = np.bincount(recs[:, a], minlength=size)
        p = 1.0 / size
        sd = np.sqrt(N * p * (1 - p))
        assert np.all(np.abs(counts - N * p) < 4.5 * sd), (a, counts)
    ftpl.release_models("test-uniform")


def test_one_clause_distribution_matches_brute_force_frequency():
    """FTPL distribution sanity: the frequency with which samples satisfy a clause equals
    the brute-force frequency under the same noise draws (here exactly, draw by draw)."""
    rng = np.random.default_rng(5)
    h = ClauseHistory("test-freq", SHAPE).add((0, 2), (1, 3), False)
    noise = -rng.exponential(1.0, (60, D))
    sat_scip = [bool(r.record[0] == 1 and r.record[2] == 3) for r in solve_batch(FTPLBatch(h, noise))]
    sat_bf = [bool(rec[0] == 1 and rec[2] == 3) for rec in (brute_force_sample(h, row)[0] for row in noise)]
    assert sat_scip == sat_bf
    # The clause's weight 1 beats two Exp(1) penalties often but not always: both outcomes occur.
    assert 0 < sum(sat_scip) < len(sat_scip)
    ftpl.release_models("test-freq")


def test_bad_noise_shape_is_refused():
    h = ClauseHistory("test-bad", SHAPE)
    with pytest.raises(OracleError, match="D = 12"):
        solve_batch(FTPLBatch(h, np.zeros((2, 5))))


def test_warm_started_and_untuned_solves_return_the_same_records(monkeypatch):
    """Speed options never change the answer: warm starts, the full (unreduced) model and
    the untuned SCIP settings agree with brute force sample by sample."""
    rng = np.random.default_rng(13)
    steps = [random_clause(rng) for _ in range(8)]
    noise = -rng.exponential(1.5, (8, 4, D))
    for tuned, warm, reduced in ((True, True, True), (True, True, False), (False, False, False)):
        monkeypatch.setattr(ftpl, "TUNED", tuned)
        monkeypatch.setattr(ftpl, "WARM", warm)
        monkeypatch.setattr(ftpl, "REDUCED", reduced)
        key = f"test-opts-{tuned}-{warm}-{reduced}"
        h, prev = ClauseHistory(key, SHAPE), None
        for step, lin in zip(steps, noise):
            h = h.add(*step)
            res = solve_batch(FTPLBatch(h, lin, warm=prev))
            for row, r in zip(lin, res):
                np.testing.assert_array_equal(r.record, brute_force_sample(h, row)[0])
            prev = np.stack([r.record for r in res])
        ftpl.release_models(key)


def test_reduced_model_when_every_value_of_an_attribute_is_mentioned():
    """Attribute 1 (2 values) and attribute 0 (3 values) fully mentioned: the stand-in for
    'an unmentioned value' must be switched off, and the answer still exact."""
    rng = np.random.default_rng(17)
    h = ClauseHistory("test-full-attr", SHAPE)
    for v in range(3):
        h = h.add((0, 1), (v, v % 2), v == 1)
    h = h.add((1, 3), (1, 2), False)
    for row in np.concatenate([-rng.exponential(1.0, (10, D)), rng.laplace(0, 1.0, (10, D))]):
        r = solve_batch(FTPLBatch(h, row[None]))[0]
        rec, val = brute_force_sample(h, row)
        np.testing.assert_array_equal(r.record, rec)
        assert r.objective == pytest.approx(val, abs=1e-6)
    ftpl.release_models("test-full-attr")
