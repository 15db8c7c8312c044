"""AppTest: Release, Results, Compare and teaching pages — runs, cancel, failures, ledger."""

import io
import json
import re

import pandas as pd
import pytest

from dpcore.errors import OracleError
from dpcore.report import INTERNAL_LABEL
from ui import apptest, runner, state


@pytest.fixture
def at(tmp_path, monkeypatch):
    monkeypatch.setenv("DPCORE_WORKSPACE", str(tmp_path / "ws"))  # each test its own workspace and ledger
    with apptest.navigation_only():
        app = apptest.new_app().run()
        app.switch_page("pages/release.py").run()
        assert not app.exception
        yield app
        job = app.session_state[state.JOB] if state.JOB in app.session_state else None
        if job is not None:
            job.cancel()


def plain(markdown: str) -> str:
    return re.sub(r"\\(.)", r"\1", markdown)


def errors(app) -> list[str]:
    return [plain(e.value) for e in app.error]


def run_button(app):
    return next(b for b in app.button if b.label == "Run")


def choose(app, mechanism: str, **params):
    app.selectbox(key=state.MECH).set_value(mechanism).run()
    for name, value in params.items():
        app.number_input(key=f"{state.KEEP}param:{mechanism}:{name}").set_value(value).run()
    return app


def start_and_wait(app, timeout=60.0):
    run_button(app).click().run()
    assert not app.exception
    return apptest.wait_for_job(app, state.JOB, timeout=timeout)


def ledger(app):
    return state.ledger().entries()


@pytest.mark.parametrize("epsilon", [0.0, -1.0])
def test_nonpositive_epsilon_is_refused_before_running(at, epsilon):
    at.number_input(key=state.EPSILON).set_value(epsilon).run()
    assert any("ε must be a positive finite number" in e for e in errors(at))
    assert run_button(at).disabled


def test_budget_too_small_for_one_round_is_explained(at):
    choose(at, "fem")  # automatic number of rounds
    at.number_input(key=state.EPSILON).set_value(1e-6).run()
    errs = errors(at)
    assert len(errs) == 1 and "too small for one useful round" in errs[0] and "Use ε ≥" in errs[0]
    assert run_button(at).disabled
    at.number_input(key=state.EPSILON).set_value(1.0).run()
    assert errors(at) == [] and not run_button(at).disabled


def test_gaussian_release_results_and_downloads(at):
    choose(at, "gaussian")
    job = start_and_wait(at)
    assert job.record is not None and errors(at) == []
    assert any("Run 1 finished" in s.value for s in at.success)
    assert len(ledger(at)) == 1 and ledger(at)[0]["epsilon"] == pytest.approx(1.0)

    at.switch_page("pages/results.py").run()
    assert not at.exception and errors(at) == []
    labels = {m.label: m.value for m in at.metric}
    rel = job.release
    assert labels["Max error"] == f"{job.internal.report['max_error']:.4f}"
    assert labels["Direct Gaussian (max)"] == "—"  # the run is the yardstick itself
    assert any(INTERNAL_LABEL in w.value for w in at.warning)
    record = at.session_state[state.RUNS][0]
    card = json.loads(record.downloads["card_json"])
    text = json.dumps(card)
    assert "seed" not in card["parameters"] and "max_error" not in text and "seconds" not in text
    assert card["privacy"]["epsilon"] == 1.0
    evaluation = json.loads(record.downloads["evaluation"])
    assert evaluation["label"] == INTERNAL_LABEL
    answers = pd.read_csv(io.BytesIO(record.downloads["synthetic"]))
    assert list(answers.columns) == ["marginal", "cell", "answer"] and len(answers) == rel.workload.n_queries
    assert len(ledger(at)) == 1  # viewing results charges nothing


def test_fem_release_has_rows_and_the_yardstick_is_not_charged(at):
    choose(at, "fem", rounds=6, samples=5)
    job = start_and_wait(at)
    assert job.record is not None, errors(at)
    at.switch_page("pages/results.py").run()
    assert not at.exception and errors(at) == []
    record = at.session_state[state.RUNS][0]
    rel = record.release
    assert "max_error" in record.yardstick  # the internal what-if was computed ...
    assert len(ledger(at)) == len(rel.spends)  # ... and not charged
    assert sum(e["epsilon"] for e in ledger(at)) <= 1.0 + 1e-9
    rows = pd.read_csv(io.BytesIO(record.downloads["synthetic"]))
    assert list(rows.columns) == rel.workload.domain.names
    assert len(rows) == rel.rows.shape[0] > 0
    assert [d.label for d in at.get("download_button")][0] == "Synthetic data (CSV)"
    headline = at.dataframe[0].value
    assert "direct Gaussian at the same ε, δ (internal what-if)" in list(headline["answers from"])


def test_cancel_stops_the_run_releases_nothing_and_stays_charged(at):
    choose(at, "fem", rounds=5000, samples=50)
    at.number_input(key=state.EPSILON).set_value(50.0).run()  # enough budget for 5000 rounds
    assert errors(at) == []
    run_button(at).click().run()
    job = at.session_state[state.JOB]
    assert not job.done
    live = {m.label: m for m in at.metric}
    assert {"Elapsed", "Oracle calls", "Round"} <= set(live)  # the live progress panel
    assert live["Oracle calls"].delta == f"of {5000 * 50:,} planned"  # FEM: T·s solves
    cancel = next(b for b in at.button if b.label == "Cancel run")
    assert run_button(at).disabled
    cancel.click().run()
    apptest.wait_for_job(at, state.JOB, timeout=30)
    assert job.cancelled and job.release is None
    assert any("cancelled" in i.value for i in at.info)
    assert at.session_state[state.RUNS] == []
    # charged before it touched the data, and it did touch it: the charge stays
    assert [(e["epsilon"], e["status"]) for e in ledger(at)] == [(50.0, "reserved")]
    at.switch_page("pages/results.py").run()
    assert any("No finished run yet" in i.value for i in at.info)


def test_failed_runs_show_an_error_and_keep_earlier_results(at, monkeypatch):
    choose(at, "gaussian")
    start_and_wait(at)
    assert len(at.session_state[state.RUNS]) == 1

    def solver_fails(*args, **kwargs):
        raise OracleError("SCIP could not solve the best-response problem (status 'infeasible'); raise the time limit.")

    monkeypatch.setattr(runner, "run_release", solver_fails)
    start_and_wait(at)
    assert any("SCIP could not solve" in e for e in errors(at))

    def bug(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(runner, "run_release", bug)
    start_and_wait(at)
    errs = errors(at)
    assert any("failed unexpectedly (ZeroDivisionError" in e and "nothing was released" in e for e in errs)
    assert not at.exception and all("Traceback" not in e for e in errs)
    assert len(at.session_state[state.RUNS]) == 1 and len(ledger(at)) == 1  # the first run is intact


def test_compare_reset_and_session_isolation(at):
    choose(at, "gaussian")
    start_and_wait(at)
    choose(at, "laplace")
    start_and_wait(at)
    at.switch_page("pages/compare.py").run()
    assert not at.exception and errors(at) == []
    table = at.dataframe[0].value
    assert list(table["mechanism"]) == ["gaussian", "laplace"]
    sidebar = at.sidebar.dataframe[0].value
    assert sidebar.loc["basic", "ε"] == "2"  # 1 + 1 under basic composition
    assert any(c.value == "2 charged run(s)" for c in at.sidebar.caption)
    # zCDP: the Gaussian run's ρ plus the Laplace run's ε²/2, converted at the fixed δ = 1/n².
    from dpcore.privacy import eps_to_zcdp, zcdp_to_eps_cks

    delta = 1 / 32561**2
    rho = eps_to_zcdp(1.0, delta) + 0.5
    assert sidebar.loc["zCDP", "ε"] == f"{zcdp_to_eps_cks(rho, delta):.4g}"
    with apptest.navigation_only():
        other = apptest.new_app().run()
        other.switch_page("pages/compare.py").run()
        assert any("No finished run yet" in i.value for i in other.info)
        # the ledger is the workspace's, not the session's: another session sees the same total
        assert other.sidebar.dataframe[0].value.loc["basic", "ε"] == "2"
    next(b for b in at.sidebar.button if b.label == "Reset session").click().run()
    assert not at.exception
    at.switch_page("pages/compare.py").run()
    assert any("No finished run yet" in i.value for i in at.info)


def test_teaching_preset_shows_the_game_and_the_ledger(at):
    from ui import teaching

    at.switch_page("pages/how_it_works.py").run()
    assert not at.exception
    presets = [m.name for m in teaching.preset_mechanisms()]
    assert presets, "no mechanism declares a teaching preset"
    # A game-playing mechanism (DualQuery, else FEM) is the default demo when registered.
    game = [n for n in teaching.PREFERRED if n in presets]
    assert at.radio(key=state.TEACH_MECH).value == (game[0] if game else presets[0])
    next(b for b in at.button if b.label == "Run the demo").click().run()
    job = apptest.wait_for_job(at, state.TEACH_JOB, timeout=60)
    assert job.record is not None, [e.value for e in at.error]
    assert job.spec["seed_fixed"] and job.kind == "teaching"
    trace = job.internal.report["trace"]
    assert len(trace) > 0
    frames = [d.value for d in at.dataframe]
    assert any(len(f) == len(trace) for f in frames)  # the round-by-round table
    steps = next(f for f in frames if "ε so far (basic)" in f.columns)
    assert steps["ε so far (basic)"].iloc[-1] == pytest.approx(sum(s.epsilon for s in job.release.spends))
    assert steps["ε so far (basic)"].iloc[-1] <= 1.0 + 1e-9
    # The demo is a real run on the bundled data: it is charged to the session's ledger.
    assert sum(e["epsilon"] for e in ledger(at)) == pytest.approx(steps["ε so far (basic)"].iloc[-1])


def test_every_registered_mechanism_gets_its_widgets_from_its_parameter_list(at):
    from ui.mechanisms import for_workloads
    from ui.widgets import param_key

    mechanisms, broken = for_workloads()
    assert mechanisms and at.selectbox(key=state.MECH).options  # listed by title
    assert len(at.selectbox(key=state.MECH).options) == len(mechanisms)
    for mech in mechanisms:
        at.selectbox(key=state.MECH).set_value(mech.name).run()
        assert not at.exception, mech.name
        for p in mech.parameters:
            assert at.get_by_key(param_key(mech.name, p)), f"{mech.name}: no widget for parameter {p.name}"
        # Defaults either plan fine (Run enabled) or are refused with the engine's message (Run disabled).
        assert run_button(at).disabled == bool(errors(at)), (mech.name, errors(at))
        assert not at.exception


def test_implicit_class_workload_runs_privlearn_and_shows_the_class_error(at):
    at.switch_page("pages/workload.py").run()
    at.number_input(key=state.WL_CLASS).set_value(2).run()
    assert not at.exception and errors(at) == []
    assert any("conjunctions of width ≤ 2" in plain(c.value) and "queries" in plain(c.value) for c in at.caption)
    at.switch_page("pages/release.py").run()
    choose(at, "privlearn")
    assert at.number_input(key=f"{state.KEEP}param:privlearn:k").value == 2  # starts at the class width
    at.number_input(key=state.EPSILON).set_value(5.0).run()
    job = start_and_wait(at)
    assert job.record is not None, errors(at)
    at.switch_page("pages/results.py").run()
    assert not at.exception and errors(at) == []
    labels = {m.label: m.value for m in at.metric}
    ce = job.internal.report["class_error"]
    assert ce["class"] == "all conjunctions of width ≤ 2"
    assert labels["Max error on sampled class queries"] == f"{ce['max_error']:.4f}"
    record = at.session_state[state.RUNS][0]
    assert json.loads(record.downloads["synopsis"])["format"]
    assert "class_error" not in record.downloads["card_json"].decode()
