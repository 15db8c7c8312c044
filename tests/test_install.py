"""`pip install .` of a copy of the repository into a fresh virtual environment, used from outside the
repository: the console script, a release, the README's library snippet, and `dpcore app`.

The new environment gets the test environment's third-party packages through a .pth file (so the test needs no
network and no minutes of downloads); dpcore itself, its metadata, its console script and the app files come
only from the wheel."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import pytest

from .conftest import ROOT
from .tables import kitchen_sink_csv

pytestmark = pytest.mark.slow


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    base = tmp_path_factory.mktemp("install")
    copy = base / "repo"
    tracked = _run(["git", "ls-files", "-z"], cwd=ROOT).stdout.split("\0")
    for rel in filter(None, tracked):
        src = ROOT / rel
        if src.is_file():
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, copy / rel)
    wheel_dir = base / "dist"
    built = _run([sys.executable, "-m", "pip", "wheel", str(copy), "--no-deps", "--no-build-isolation", "-q",
                  "-w", str(wheel_dir)])  # fmt: skip
    assert built.returncode == 0, built.stderr
    [wheel] = wheel_dir.glob("dpcore-*.whl")
    venv = base / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)]).returncode == 0
    py = venv / "bin" / "python"
    site = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    (Path(site) / "deps-from-test-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    inst = _run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)])
    assert inst.returncode == 0, inst.stderr
    work = base / "work"  # outside the repository: nothing can be imported from a checkout
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DPCORE_SHARED_PASSWORD")}
    env.update(DPCORE_WORKSPACE=str(base / "ws"), PATH=f"{venv / 'bin'}:{env.get('PATH', '')}")
    return {"py": py, "bin": venv / "bin", "site": Path(site), "work": work, "env": env}


def test_the_wheel_installs_the_engine_and_the_app_but_no_generic_top_level_packages(installed):
    site = installed["site"]
    assert (site / "dpcore" / "__init__.py").exists() and (site / "dpcore" / "_app" / "app.py").exists()
    assert (site / "dpcore" / "_app" / "ui").is_dir() and (site / "dpcore" / "_app" / "pages").is_dir()
    assert (site / "dpcore" / "datasets" / "adult_census.csv").exists()
    assert not (site / "ui").exists() and not (site / "pages").exists()


def test_the_console_script_and_a_release(installed):
    dpcore, work, env = str(installed["bin"] / "dpcore"), installed["work"], installed["env"]
    helped = _run([dpcore, "--help"], cwd=work, env=env)
    assert helped.returncode == 0 and "release" in helped.stdout and "app" in helped.stdout
    (work / "people.csv").write_bytes(kitchen_sink_csv(3000))
    out = _run([dpcore, "release", "--data", "people.csv", "--mechanism", "gaussian", "--epsilon", "1",
                "--out", "answers.csv", "--card", "card.json"], cwd=work, env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert (work / "card.json").exists() and (work / "answers.csv").exists()
    where = _run([str(installed["py"]), "-c", "import dpcore; print(dpcore.__file__)"], cwd=work, env=env)
    assert str(installed["site"]) in where.stdout  # the installed copy, not the checkout


def test_the_readme_snippet_runs_from_the_installed_package(installed):
    readme = (ROOT / "README.md").read_text()
    snippet = re.search(r"## As a library\s+```python\n(.*?)```", readme, re.S).group(1)
    assert "dpcore.Synthesizer" in snippet and "synth.sample()" in snippet
    work, env = installed["work"], installed["env"]
    (work / "people.csv").write_bytes(kitchen_sink_csv(3000))
    script = snippet + "\nassert len(df) == 3000 and synth.card['privacy']['guarantee'] == 'differential privacy'\n"
    out = _run([str(installed["py"]), "-c", script], cwd=work, env=env)
    assert out.returncode == 0, out.stderr


def test_dpcore_app_serves_from_the_installed_package(installed):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [str(installed["bin"] / "dpcore"), "app", "--port", str(port)],
        cwd=installed["work"],
        env=installed["env"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.2)
        else:
            pytest.fail("dpcore app did not answer its health check within 90 s")
    finally:
        proc.terminate()
        proc.wait(10)
