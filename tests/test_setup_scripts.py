"""The set-up path of the README's commands on a fresh machine: installing Chromium when it is missing, as root
and as a user with sudo, exercised with stand-in ``apt-get``, ``sudo`` and ``id`` programs that record what
they were asked to do (the real ones would need the network and root)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "setup_chromium.sh"


def _stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def fake_machine(tmp_path):
    """A PATH where apt-get, sudo and id are recorders; Chromium is 'missing' at a path of our choosing."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    _stub(bin_dir, "apt-get", f'echo "apt-get DEBIAN_FRONTEND=${{DEBIAN_FRONTEND:-unset}} $*" >> {log}\n')
    _stub(bin_dir, "sudo", f'echo "sudo $1" >> {log}\nexec "$@"\n')

    def run(uid: int, with_sudo: bool = True):
        _stub(bin_dir, "id", f'if [ "$1" = "-u" ]; then echo {uid}; else /usr/bin/id "$@"; fi\n')
        if not with_sudo:
            (bin_dir / "sudo").unlink(missing_ok=True)
        env = dict(os.environ, PATH=f"{bin_dir}:/usr/bin:/bin", DPCORE_CHROMIUM=str(tmp_path / "no-chromium"))
        out = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30)
        calls = log.read_text().splitlines() if log.exists() else []
        return out, calls

    return run


def test_as_root_apt_get_runs_directly_and_noninteractively(fake_machine):
    out, calls = fake_machine(uid=0)
    assert out.returncode == 0, out.stderr
    assert calls == [
        "apt-get DEBIAN_FRONTEND=noninteractive update -qq",
        "apt-get DEBIAN_FRONTEND=noninteractive install -y -qq chromium",
    ]


def test_as_a_user_with_sudo_apt_get_runs_through_sudo(fake_machine):
    out, calls = fake_machine(uid=1000)
    assert out.returncode == 0, out.stderr
    assert calls == [
        "sudo env",
        "apt-get DEBIAN_FRONTEND=noninteractive update -qq",
        "sudo env",
        "apt-get DEBIAN_FRONTEND=noninteractive install -y -qq chromium",
    ]


def test_a_user_without_sudo_gets_a_clear_message(fake_machine):
    out, calls = fake_machine(uid=1000, with_sudo=False)
    assert out.returncode == 1 and calls == []
    assert "apt-get install chromium" in out.stderr


def test_nothing_is_installed_when_chromium_is_there(tmp_path):
    browser = tmp_path / "chromium"
    browser.write_text("")
    browser.chmod(0o755)
    env = dict(os.environ, DPCORE_CHROMIUM=str(browser), PATH="/nonexistent")
    out = subprocess.run(["/bin/bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout == ""


def test_ci_sets_up_a_fresh_environment_and_runs_the_readme_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "mktemp -d" in ci and "DPCORE_VENV" in ci and "./test.sh" in ci
    readme = (ROOT / "README.md").read_text()
    assert "./test.sh" in readme and "./run.sh" in readme
