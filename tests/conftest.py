"""Shared fixtures: tiny public domains and small private tables with known structure."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore.data import Dataset, bundled_adult
from dpcore.domain import Attribute, Domain

# Every test (and every CLI or app process a test starts) charges a throwaway workspace, never the user's; it goes
# when the test session ends (hundreds of them were left behind in /tmp).  A process a test spawns that imports this
# module again (multiprocessing's spawn imports the test's module) keeps the session's: it made one of its own that
# its exit never removed, nine empty folders a suite.
_SESSION = os.environ.get("DPCORE_TEST_SESSION_WORKSPACE", "")
if _SESSION and os.path.isdir(_SESSION):
    os.environ["DPCORE_WORKSPACE"] = _SESSION
else:
    os.environ["DPCORE_WORKSPACE"] = os.environ["DPCORE_TEST_SESSION_WORKSPACE"] = tempfile.mkdtemp(
        prefix="dpcore-test-workspace-"
    )
    atexit.register(shutil.rmtree, os.environ["DPCORE_WORKSPACE"], ignore_errors=True)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _keep_main_module():
    """Streamlit's AppTest leaves its script as ``__main__``; processes a later test spawns would import it."""
    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main


SHARED_DATA = ROOT.parent / "shared" / "data"


def tiny_domain(shape=(3, 2, 4, 3)) -> Domain:
    return Domain(
        tuple(Attribute(f"a{i}", "categorical", tuple(f"v{v}" for v in range(s))) for i, s in enumerate(shape))
    )


def planted_dataset(n: int = 400, shape=(3, 2, 4, 3), seed: int = 0, concentration: float = 0.8) -> Dataset:
    """A table where most rows copy one of two planted records: far from uniform, so a
    mechanism that learns anything beats the uniform baseline by a wide margin."""
    rng = np.random.default_rng(seed)
    dom = tiny_domain(shape)
    planted = np.array([[0] * len(shape), [s - 1 for s in shape]])
    which = rng.integers(0, 2, size=n)
    rows = planted[which].copy()
    noise = rng.random(n) > concentration
    rows[noise] = np.column_stack([rng.integers(0, s, size=int(noise.sum())) for s in shape])
    return Dataset(rows, dom, "planted")


def all_keys(obj):
    """Every key of a nested JSON-like object (to check a release card never names a field)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from all_keys(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from all_keys(v)


@pytest.fixture
def tiny_dom() -> Domain:
    return tiny_domain()


@pytest.fixture
def planted() -> Dataset:
    return planted_dataset()


@pytest.fixture(scope="session")
def adult() -> Dataset:
    return bundled_adult()


@pytest.fixture(scope="session")
def adult_small(adult) -> Dataset:
    """2,000 rows and 5 attributes of the bundled Adult sample (fast end-to-end runs)."""
    names = ["age", "workclass", "education", "sex", "income-per-year"]
    sub = adult.project(names)
    return Dataset(sub.codes[:2000], sub.domain, "adult_small")


@pytest.fixture
def random_table() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame(
        {
            "color": rng.choice(["red", "green", "blue"], 200),
            "size": rng.integers(0, 100, 200),
            "flag": rng.choice(["y", "n"], 200),
        }
    )


@pytest.fixture
def workspace(tmp_path):
    """A fresh, empty workspace folder."""
    from dpcore.workspace import Workspace

    return Workspace(tmp_path / "ws")
