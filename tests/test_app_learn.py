"""The Learn page's main path under AppTest: choose, plan, run in the background, see results, download."""

from __future__ import annotations

import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "learn.py")


def _wait(at, timeout=90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        at.run()
        job = at.session_state["learn:job"] if "learn:job" in at.session_state else None
        if job is not None and job.done:
            at.run()
            return job
        time.sleep(0.3)
    raise TimeoutError("the learning run did not finish")


def test_learn_page_runs_methods_and_offers_the_model(tmp_path, monkeypatch):
    monkeypatch.setenv("DPCORE_WORKSPACE", str(tmp_path / "ws"))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception
    assert "Learn a private classifier" in at.title[0].value
    # small and fast: two methods, one ε, one run, 1,500 rows
    at.session_state["learn:methods"] = ["rspm", "dplr"]
    at.session_state["learn:epsilons"] = "1"
    at.session_state["learn:runs"] = 1
    at.session_state["learn:max_rows"] = 1500
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("oracle calls" in m.value for m in at.markdown)
    at.button[0].click().run()  # Run
    job = _wait(at)
    assert job.error is None and job.result is not None
    assert not at.exception
    summary = {r["method"]: r for r in job.result.summary()}
    assert set(summary) == {"rspm", "dplr"}
    assert all(0.5 < r["accuracy_mean"] <= 1.0 for r in summary.values())
    assert [h.value for h in at.subheader][:1] == ["Test accuracy over ε"]
    assert len(at.get("plotly_chart")) == 2
    assert at.get("download_button"), "the learned model can be downloaded"
    # both private runs were charged to the workspace ledger before they ran, once, at ε = 1 each (pure ε)
    from dpcore.privacy.ledger import Ledger

    entries = Ledger().entries()
    assert sorted(e["mechanism"] for e in entries) == ["learn:dplr", "learn:rspm"]
    assert all(e["epsilon"] == 1.0 and e["delta"] == 0.0 for e in entries)


def test_learn_page_never_fixes_the_seed_by_default():
    """A fixed seed makes every run draw the same noise, which can then be subtracted."""
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert at.session_state["learn:fix_seed"] is False


def test_learn_page_asks_for_the_positive_class_of_a_multivalued_label():
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    at.session_state["learn:label"] = "race"
    at.session_state["learn:features:race"] = "sex"
    at.run()
    assert not at.exception
    assert any("positive" in e.value for e in at.error)


def test_learn_page_refuses_a_too_large_mip_with_its_size():
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    at.session_state["learn:features:income-per-year"] = "\n".join(
        ["age", "education", "occupation", "native-country", "marital-status", "workclass"]
    )
    at.session_state["learn:balance"] = False
    at.run()
    assert not at.exception
    assert any("MIP" in e.value and "point binaries" in e.value for e in at.error)
