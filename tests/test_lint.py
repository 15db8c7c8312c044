"""The house's gates, inside the README's test command: ruff (lint), ruff format, and mypy on the engine, with
the configuration in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import ROOT


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_check_is_clean():
    out = _run("ruff", "check", ".")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_ruff_format_is_clean():
    out = _run("ruff", "format", "--check", ".")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


@pytest.mark.slow
def test_mypy_is_clean_on_the_engine():
    out = _run("mypy")
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
