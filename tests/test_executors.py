"""Executors: order, worker death, bad configuration, and FEM through a real local Ray
instance giving the same rows as the process pool (one Ray start for the module)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from dpcore import cli
from dpcore.errors import OracleError
from dpcore.executors import ExecutorError, LocalProcessExecutor, SerialExecutor, executor_from_spec
from dpcore.mechanisms import fem
from dpcore.release import run_release
from dpcore.workload import Workload

from .conftest import planted_dataset


def _square(x):
    return x * x


def _die_in_worker(task):
    """Stands in for a worker killed by the OOM killer: the process exits at once."""
    os._exit(3)


def _raise_oracle_error(task):
    raise OracleError("SCIP found no record (status timelimit); raise the time limit.")


@pytest.fixture(scope="module")
def pool():
    """One process pool for the tests that do not break it (pool start-up is the slow part)."""
    with LocalProcessExecutor(2) as ex:
        yield ex


def test_serial_and_local_keep_task_order(pool):
    tasks = list(range(23))
    assert SerialExecutor().map(_square, tasks) == [t * t for t in tasks]
    assert pool.workers == 2
    assert pool.map(_square, tasks) == [t * t for t in tasks]


def test_worker_death_fails_cleanly_and_the_executor_recovers():
    with LocalProcessExecutor(2) as ex:
        with pytest.raises(ExecutorError, match="worker process died.*nothing was released"):
            ex.map(_die_in_worker, [1, 2, 3])
        assert ex.map(_square, [2, 3]) == [4, 9]  # a fresh pool replaces the broken one


def test_task_errors_keep_their_type_and_message(pool):
    with pytest.raises(OracleError, match="raise the time limit"):
        pool.map(_raise_oracle_error, [1, 2])


def test_worker_death_during_fem_writes_nothing(tmp_path, monkeypatch, capsys):
    """CLI release with a worker dying mid-run: exit code 2, the reason, no output files."""
    ds = planted_dataset(n=300)
    np.savetxt(
        tmp_path / "planted.csv", ds.codes, fmt="%d", delimiter=",", header=",".join(ds.domain.names), comments=""
    )
    (tmp_path / "planted-domain.json").write_text(json.dumps(dict(zip(ds.domain.names, ds.domain.shape))))
    monkeypatch.setattr(fem, "solve_batch", _die_in_worker)
    out, card = tmp_path / "synthetic.csv", tmp_path / "card.json"
    code = cli.main(
        [
            "release",
            "--data",
            str(tmp_path / "planted.csv"),
            "--k",
            "2",
            "--marginals",
            "all",
            "--mechanism",
            "fem",
            "--epsilon",
            "1",
            "--seed",
            "0",
            "--executor",
            "local",
            "--quiet",
            "--param",
            "rounds=3",
            "--param",
            "samples=4",
            "--out",
            str(out),
            "--card",
            str(card),
        ]
    )
    assert code == 2
    assert "worker process died" in capsys.readouterr().err
    assert not out.exists() and not card.exists()


def test_unknown_executor_is_refused():
    with pytest.raises(ExecutorError, match="'local', 'serial' or 'ray"):
        executor_from_spec("gpu")


def test_unreachable_ray_cluster_says_run_locally(monkeypatch):
    pytest.importorskip("ray")
    monkeypatch.setenv("DPCORE_RAY_ADDRESS", "127.0.0.1:1")  # nothing listens on port 1
    monkeypatch.delenv("DPCORE_EXECUTOR", raising=False)
    with pytest.raises(ExecutorError, match="unreachable.*Run locally"):
        executor_from_spec(None)  # the environment variable alone selects Ray
    with pytest.raises(ExecutorError, match="not HOST:PORT"):
        executor_from_spec("ray:nonsense")


@pytest.fixture(scope="module")
def ray_executor():
    pytest.importorskip("ray")
    from dpcore.executors.ray_cluster import RayExecutor

    ex = RayExecutor("local", num_cpus=2)
    yield ex
    ex.close()


def test_fem_on_ray_matches_the_process_pool(ray_executor, pool):
    ds = planted_dataset(n=300)
    wl = Workload.all_kway(ds.domain, 2)
    params = {"rounds": 3, "samples": 4}
    assert ray_executor.map(_square, [3, 1, 2]) == [9, 1, 4]
    on_ray = run_release(ds, wl, "fem", 1.0, None, params, seed=7, executor=ray_executor, ledger=None)[0].rows
    pooled = run_release(ds, wl, "fem", 1.0, None, params, seed=7, executor=pool, ledger=None)[0].rows
    assert on_ray.shape == (12, len(ds.domain))
    np.testing.assert_array_equal(on_ray, pooled)
    with pytest.raises(OracleError, match="raise the time limit"):
        ray_executor.map(_raise_oracle_error, [1, 2])
