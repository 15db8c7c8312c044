"""AppTest: Release, Results and Compare on the workspace — server-owned runs, cost before spend, one click one
run, reload and restart, CLI runs, demo runs, cancel, failures, delete; and the teaching page."""

import json
import socket
import time

import pandas as pd
import pytest

from dpcore.errors import OracleError
from dpcore.report import INTERNAL_LABEL
from ui import apptest, jobs, state
from ui.apptest import errors, plain


@pytest.fixture
def ws_path(tmp_path, monkeypatch):
    path = tmp_path / "ws"
    monkeypatch.setenv("DPCORE_WORKSPACE", str(path))  # each test its own workspace, ledger and runs
    return path


@pytest.fixture
def at(ws_path):
    with apptest.session("pages/release.py") as app:
        yield app


def run_button(app):
    return next(b for b in app.button if b.label == "Run")


def choose(app, mechanism: str, **params):
    app.selectbox(key=state.MECH).set_value(mechanism).run()
    for name, value in params.items():
        app.number_input(key=f"{state.KEEP}param:{mechanism}:{name}").set_value(value).run()
    return app


def start(app) -> str:
    run_button(app).click().run()
    assert not app.exception
    return app.session_state[state.LAST_RUN]


def start_and_wait(app, timeout=60.0) -> dict:
    run_id = start(app)
    apptest.wait_for_run(app, run_id, timeout)
    return state.runs_store().get(run_id)


def ledger():
    return state.ledger().entries()


def metrics(app) -> dict:
    return {m.label: m for m in app.metric}


def new_session():
    """Another browser session on the same server and workspace (a reload, another tab)."""
    return apptest.new_app().run()


# ---------------------------------------------------------------------------------------------- before running
@pytest.mark.parametrize("epsilon", [0.0, -1.0])
def test_nonpositive_epsilon_is_refused_before_running(at, epsilon):
    at.number_input(key=state.EPSILON).set_value(epsilon).run()
    assert any("is outside the allowed range: above 0" in e for e in errors(at))
    assert any("Nothing runs until this input is fixed: ε (epsilon)" in plain(c.value) for c in at.caption)
    assert run_button(at).disabled


def test_budget_too_small_for_one_round_is_explained(at):
    choose(at, "fem")  # automatic number of rounds
    at.number_input(key=state.EPSILON).set_value(1e-6).run()
    errs = errors(at)
    assert len(errs) == 1 and "too small for one useful round" in errs[0] and "Use ε ≥" in errs[0]
    assert run_button(at).disabled
    at.number_input(key=state.EPSILON).set_value(1.0).run()
    assert errors(at) == [] and not run_button(at).disabled


def test_a_workload_left_mostly_noise_is_warned_before_running(at):
    choose(at, "gaussian")
    at.number_input(key=state.EPSILON).set_value(0.001).run()
    assert any("mostly noise" in plain(w.value) for w in at.warning)
    assert not run_button(at).disabled  # a warning, not a refusal: the user decides
    at.number_input(key=state.EPSILON).set_value(5.0).run()
    assert not any("mostly noise" in plain(w.value) for w in at.warning)


def test_cost_before_spend_and_a_recorded_cap(at):
    choose(at, "gaussian")
    at.number_input(key=state.EPSILON).set_value(0.8).run()
    m = metrics(at)
    assert m["This run charges at most"].value == "ε = 0.8"
    assert m["Spent on this dataset so far"].value == "ε = 0"
    assert m["Dataset total after this run"].value == "ε = 0.8"
    assert m["Cap on this dataset"].value == "none"
    start_and_wait(at)
    m = metrics(at)
    assert m["Spent on this dataset so far"].value == "ε = 0.8" and "1 run" in m["Spent on this dataset so far"].delta
    assert m["Dataset total after this run"].value == "ε = 1.6"
    # Setting a cap is an explicit act, recorded with its note.
    cap_input = next(n for n in at.number_input if n.label == "Cap on the total ε")
    cap_input.set_value(1.0).run()
    next(t for t in at.text_input if t.label == "Why (recorded with the cap)").input("agreed with the DPO").run()
    next(b for b in at.button if b.label == "Set the cap").click().run()
    assert metrics(at)["Cap on this dataset"].value == "ε = 1"
    history = state.ledger().cap_history(at.session_state["dataset"][1].ledger_key)
    assert [(h["epsilon"], h["note"]) for h in history] == [(1.0, "agreed with the DPO")]
    # Over the cap: the one-line reason, and Run is disabled.
    refused = [e for e in errors(at) if e.startswith("Refused:")]
    assert len(refused) == 1 and "spent ε = 0.8 of the cap ε = 1" in refused[0] and "asks ε = 0.8" in refused[0]
    assert run_button(at).disabled
    at.number_input(key=state.EPSILON).set_value(0.2).run()
    assert not [e for e in errors(at) if e.startswith("Refused:")] and not run_button(at).disabled


# ---------------------------------------------------------------------------------------------- runs
def test_gaussian_release_lands_with_results_and_downloads(at):
    choose(at, "gaussian")
    at.text_input(key=state.RUN_LABEL).input("first try").run()
    run = start_and_wait(at)
    assert run["status"] == "done" and errors(at) == []
    assert any("Run “first try” finished in" in plain(s.value) for s in at.success)  # lands visibly
    assert any(b.label == "See the results" for b in at.button)
    assert len(ledger()) == 1 and ledger()[0]["epsilon"] == pytest.approx(1.0)

    at.switch_page("pages/results.py").run()
    assert not at.exception and errors(at) == []
    assert at.selectbox(key=state.RESULT_RUN).value == run["id"]
    assert any("first try" in plain(md.value) for md in at.markdown)  # the label as plain text
    assert any("Whoever sees this output learns almost nothing" in plain(i.value) for i in at.info)
    assert metrics(at)["Max error"].value == f"{run['evaluation']['max_error']:.4f}"
    assert any(INTERNAL_LABEL in w.value for w in at.warning)
    from ui import results

    files = {f["label"]: f for f in results.downloads(run)}
    assert list(files) == [
        "Released answers (CSV)",
        "Release card (JSON)",
        "Release card (text)",
        "Internal evaluation (NOT for publication)",
    ]
    assert not any(f["file_name"].startswith("DEMO_") for f in files.values())
    card = json.loads(files["Release card (JSON)"]["path"].read_text())
    text = json.dumps(card)
    assert "seed" not in card["parameters"] and "max_error" not in text and "seconds" not in text
    assert card["privacy"]["guarantee"] == "differential privacy"
    assert json.loads(files["Internal evaluation (NOT for publication)"]["path"].read_text())["label"]
    answers = pd.read_csv(files["Released answers (CSV)"]["path"])
    assert list(answers.columns) == ["marginal", "cell", "answer"] and len(answers) == card["workload"]["n_queries"]
    assert len(ledger()) == 1  # viewing results charges nothing


def test_fem_rows_preview_and_the_uncharged_yardstick(at):
    choose(at, "fem", rounds=6, samples=5)
    run = start_and_wait(at)
    assert run["status"] == "done", run["error"]
    at.switch_page("pages/results.py").run()
    assert not at.exception and errors(at) == []
    preview = next(d.value for d in at.dataframe if "age" in d.value.columns)
    assert len(preview) == 20 and list(preview.columns) == [a["name"] for a in run["card"]["data"]["schema"]]
    charged = len(ledger())
    next(b for b in at.button if b.label == "Direct-Gaussian what-if").click().run()
    assert metrics(at)["Direct Gaussian (max)"].value != "—"
    assert len(ledger()) == charged  # the internal what-if is not charged
    headline = next(d.value for d in at.dataframe if "answers from" in d.value.columns)
    assert "direct Gaussian at the same ε, δ (internal what-if)" in list(headline["answers from"])
    assert len(at.get("vega_lite_chart")) >= 3  # histogram, per-marginal bars, real vs released
    # The fidelity view (internal): beyond the workload, against the private table, saved beside the run.
    charts_before = len(at.get("vega_lite_chart"))
    next(b for b in at.button if b.label == "Compute the fidelity report").click().run()
    assert not at.exception and errors(at) == []
    m = metrics(at)
    assert 0 < float(m["Mean 1-way TVD"].value) <= 1 and 0 < float(m["Worst 2-way TVD"].value) <= 1
    assert m["Rows outside the real values"].value.endswith("%")
    assert len(at.get("vega_lite_chart")) >= charts_before + 3  # distributions, pair heatmap, associations
    numbers = next(d.value for d in at.dataframe if "mean off by (real SDs)" in d.value.columns)
    assert "age" in list(numbers["column"]) and all(" → " in v for v in numbers["mean"])
    from ui import results

    saved = json.loads(results.artifact(run, results.FIDELITY_FILE).read_text())
    assert saved["label"].startswith("INTERNAL") and saved["n_synthetic"] == 30
    assert len(ledger()) == charged  # evaluating charges nothing


def test_a_large_release_downloads_gzip_compressed(at, monkeypatch):
    import gzip

    from ui import results

    choose(at, "fem", rounds=4, samples=4)
    run = start_and_wait(at)
    small = results.downloads(run)[0]
    assert small["file_name"].endswith(".csv") and small["read"]().read() == small["path"].read_bytes()
    monkeypatch.setattr(results, "LARGE_DOWNLOAD", 100)  # this CSV counts as large now
    large = results.downloads(run)[0]
    assert large["file_name"].endswith(".csv.gz") and large["mime"] == "application/gzip"
    with large["read"]() as fh:
        assert gzip.decompress(fh.read()) == large["path"].read_bytes()


def test_one_click_is_one_run_even_when_clicked_twice(at):
    choose(at, "gaussian")
    button = run_button(at)
    button.click().run()  # the first click starts the run, which ends at once (a 0.1 s run) ...
    run_id = at.session_state[state.LAST_RUN]
    jobs.wait(run_id)
    button.click().run()  # ... the double click's second click, on the same rendering of the button, starts nothing
    assert not run_button(at).disabled
    apptest.wait_for_run(at, run_id)
    assert [r["id"] for r in state.runs_store().list()] == [run_id]
    assert len(ledger()) == 1
    # The same request key twice (two reruns of one click) is one run, in the job registry too.
    ds = at.session_state["dataset"][1]
    wl = at.session_state["workload"][1]
    kw = dict(dataset=ds, workload=wl, mechanism="gaussian", epsilon=0.5, delta=None, params=None, seed=None)
    first = jobs.start_release(**kw, label="x", request_key="click-7")
    assert jobs.start_release(**kw, label="x", request_key="click-7") == first
    jobs.wait(first)
    assert len(ledger()) == 2
    # A new click (a new rendering of the button) is a new run.
    second = start(at)
    assert second != run_id


def test_progress_is_labelled_internal_and_a_reload_sees_the_run_and_can_cancel_it(at):
    choose(at, "fem", rounds=5000, samples=50)
    at.number_input(key=state.EPSILON).set_value(50.0).run()  # enough budget for 5000 rounds
    run_id = start(at)
    deadline = time.monotonic() + 30
    while jobs.snapshot(run_id)["t"] < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    at.run()
    assert {"Elapsed", "Round"} <= set(metrics(at)) and run_button(at).disabled
    assert any("Internal — computed on the private data" in plain(c.value) for c in at.caption)
    assert any(c.value.startswith("Running: ") and "round" in c.value for c in at.sidebar.caption)
    # A reload is a new session: the run is still there, with its progress and a Cancel button.
    other = new_session()
    other.switch_page("pages/release.py").run()
    assert not other.exception
    assert run_button(other).disabled
    assert "Round" in metrics(other)
    next(b for b in other.button if b.label == "Cancel run").click().run()
    snap = jobs.wait(run_id, 30)
    assert snap["status"] == "cancelled"
    at.run()
    assert any("cancelled" in plain(i.value) for i in at.info)
    # charged before it touched the data, and it did touch it: the charge stays
    assert [(e["epsilon"], e["status"]) for e in ledger()] == [(50.0, "reserved")]
    at.switch_page("pages/results.py").run()
    assert any("Cancelled:" in e for e in errors(at))


def test_failed_runs_show_an_error_stay_charged_and_keep_earlier_results(at, monkeypatch):
    from dpcore.mechanisms import registry

    choose(at, "gaussian")
    first = start_and_wait(at)
    gaussian = registry.get("gaussian")

    def solver_fails(self, *args, **kwargs):
        raise OracleError("SCIP could not solve the best-response problem (status 'infeasible'); raise the time limit.")

    monkeypatch.setattr(gaussian, "run", solver_fails)
    failed = start_and_wait(at)
    assert failed["status"] == "failed" and any("SCIP could not solve" in e for e in errors(at))

    def bug(self, *args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(gaussian, "run", bug)
    broken = start_and_wait(at)
    errs = errors(at)
    assert broken["status"] == "failed"
    assert any("failed unexpectedly (ZeroDivisionError" in e and "nothing was released" in e for e in errs)
    assert not at.exception and all("Traceback" not in e for e in errs)
    assert len(ledger()) == 3  # every run read the data: all charged
    assert state.runs_store().get(first["id"])["status"] == "done"  # the first run is intact


def test_demo_run_is_unmistakable(at):
    choose(at, "gaussian")
    at.checkbox(key=state.FIX_SEED).check().run()
    assert any("Demo run" in plain(w.value) for w in at.warning)
    run = start_and_wait(at)
    assert run["demo"] == 1 and run["card"]["privacy"]["guarantee"] == "none"
    at.switch_page("pages/results.py").run()
    assert any("DEMO RUN — not a private release" in plain(e.value) for e in at.error)
    assert any("This is a DEMO, not a private release" in plain(w.value) for w in at.warning)
    from ui import results

    assert all(f["file_name"].startswith("DEMO_") for f in results.downloads(run))
    # A new session never restores a fixed seed (a demo must be chosen on purpose).
    other = new_session()
    assert other.session_state[state.FIX_SEED] is False


def test_compare_groups_by_dataset_and_hides_demo_runs(at):
    choose(at, "gaussian")
    start_and_wait(at)
    choose(at, "laplace")
    start_and_wait(at)
    at.checkbox(key=state.FIX_SEED).check().run()
    start_and_wait(at)
    at.switch_page("pages/compare.py").run()
    assert not at.exception and errors(at) == []
    table = at.dataframe[0].value
    assert sorted(table["mechanism"]) == ["gaussian", "laplace"]  # the demo run is hidden
    assert at.selectbox(key=state.COMPARE_DATASET).options == ["adult_census (2 runs)"]
    at.checkbox(key=state.SHOW_DEMO).check().run()
    assert len(at.dataframe[0].value) == 3
    sidebar = at.sidebar.dataframe[0].value
    assert sidebar.loc["basic", "ε"] == "3"  # 1 + 1 + 1 under basic composition
    assert any(c.value == "3 charged runs · total ε = 3" for c in at.sidebar.caption)


def test_reload_and_restart_keep_runs_choices_and_the_ledger(at, ws_path):
    choose(at, "laplace")
    at.number_input(key=state.EPSILON).set_value(0.7).run()
    at.text_input(key=state.RUN_LABEL).input("before the reload").run()
    run = start_and_wait(at)
    total = at.sidebar.dataframe[0].value.loc["basic", "ε"]
    # A reload is a new session: the choices, the run and the ledger come back.
    other = new_session()
    assert other.session_state[state.MECH] == "laplace" and other.session_state[state.EPSILON] == 0.7
    other.switch_page("pages/results.py").run()
    assert other.selectbox(key=state.RESULT_RUN).value == run["id"]
    assert any("before the reload" in plain(md.value) for md in other.markdown)
    assert other.sidebar.dataframe[0].value.loc["basic", "ε"] == total == "0.7"
    assert str(ws_path) in [c.value for c in other.sidebar.code]  # the app says which workspace it uses
    # A restart: a run left "running" by a dead server process is shown as interrupted, its charge kept.
    from dpcore.runs import RunStore
    from dpcore.workspace import Workspace

    ws = Workspace(ws_path)
    store = RunStore(ws)
    store.create(
        run_id="dead-run",
        kind="release",
        mechanism="fem",
        dataset=run["dataset"],
        dataset_name="adult_census",
        params={},
        epsilon=0.5,
        delta=None,
        demo=False,
        label="left running",
    )
    dead_process = f"{socket.gethostname()}:999999:1.0"  # no such pid: the server that ran it is gone
    store.update("dead-run", status="running", owner=dead_process)
    jobs._recovered.clear()  # what a fresh server process starts with
    state._open_workspace.clear()
    restarted = new_session()
    restarted.switch_page("pages/results.py").run()
    assert store.get("dead-run")["status"] == "interrupted"
    restarted.selectbox(key=state.RESULT_RUN).set_value("dead-run").run()
    assert any("Interrupted:" in e and "charge stays" in e for e in errors(restarted))


def test_a_command_line_run_is_listed_with_its_label(at, ws_path):
    from dpcore.data import bundled_adult
    from dpcore.runs import execute_release
    from dpcore.workload import Workload
    from dpcore.workspace import Workspace

    ds = bundled_adult()
    wl = Workload.random_kway(ds.domain, 2, 3, seed=1, max_cells=ds.n)
    _, _, run_id = execute_release(Workspace(ws_path), ds, wl, "gaussian", 0.3, label="from the <b>CLI</b>")
    at.switch_page("pages/results.py").run()
    assert not at.exception
    assert at.selectbox(key=state.RESULT_RUN).value == run_id
    listed = [plain(md.value) for md in at.markdown]
    assert any("from the <b>CLI</b>" in md for md in listed)  # plain text: escaped, never markup
    assert all("<b>" not in md.value for md in at.markdown if "CLI" in md.value)
    assert metrics(at)["Max error"].value
    assert len(at.get("vega_lite_chart")) >= 2


def test_delete_a_run_keeps_its_charge(at):
    choose(at, "gaussian")
    run = start_and_wait(at)
    at.switch_page("pages/results.py").run()
    next(b for b in at.button if b.label == "Delete the run").click().run()
    assert not at.exception
    assert any("No run yet" in i.value for i in at.info)
    assert state.runs_store().get(run["id"])["deleted"] == 1
    assert not (state.workspace().run_dir(run["id"])).exists()
    assert len(ledger()) == 1 and ledger()[0]["run"] == run["id"]


def test_every_registered_mechanism_gets_its_widgets_from_its_parameter_list(at):
    from ui.mechanisms import for_workloads
    from ui.widgets import param_key

    mechanisms, broken = for_workloads()
    assert mechanisms and at.selectbox(key=state.MECH).options  # listed by title, after the default
    assert len(at.selectbox(key=state.MECH).options) == len(mechanisms) + 1
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
    at.switch_page("pages/release.py").run()
    choose(at, "privlearn")
    assert at.number_input(key=f"{state.KEEP}param:privlearn:k").value == 2  # starts at the class width
    at.number_input(key=state.EPSILON).set_value(5.0).run()
    run = start_and_wait(at)
    assert run["status"] == "done", run["error"]
    at.switch_page("pages/results.py").run()
    assert not at.exception and errors(at) == []
    ce = run["evaluation"]["class_error"]
    assert ce["class"] == "all conjunctions of width ≤ 2"
    assert metrics(at)["Max error on sampled class queries"].value == f"{ce['max_error']:.4f}"
    from ui import results

    files = {f["label"]: f["path"] for f in results.downloads(run)}
    assert json.loads(files["Synopsis model (JSON)"].read_text())["format"]
    assert "class_error" not in files["Release card (JSON)"].read_text()


def test_upload_and_schema_edits_come_back_after_a_reload(at):
    from ui import datasource

    csv = "colour,size,flag\n" + "".join(f"{'rgb'[i % 3]},{i % 7},{'yn'[i % 2]}\n" for i in range(120))
    at.switch_page("pages/data.py").run()
    at.radio(key=state.SOURCE).set_value("upload").run()
    at.file_uploader(key="uploader").set_value(("mine.csv", csv.encode(), "text/csv")).run()
    assert not at.exception and at.sidebar.text[0].value == "mine.csv"
    upload = at.session_state[state.UPLOAD]
    assert state.workspace().dataset(upload["digest"])["stored_path"]  # a copy is kept in the workspace
    # What the schema editor's on_change saves after an edit (AppTest cannot type into a data editor).
    edited = datasource.fold_edits(at.session_state[state.SCHEMA_TABLE], {"edited_rows": {0: {"values": "r|g|b|x"}}})
    state.workspace().save_schema(edited.to_json(orient="records"), datasource.SCHEMA_TABLE_NAME, upload["digest"])
    other = new_session()  # a reload, or a restart: the upload and the edited schema come back
    other.switch_page("pages/data.py").run()
    # 120 rows: the only error is the public plan refusing the discovery before any spend
    assert not other.exception and [e for e in errors(other) if "expected to keep" not in e] == []
    assert other.session_state[state.SOURCE] == "upload" and other.sidebar.text[0].value == "mine.csv"
    restored = other.session_state[state.SCHEMA_TABLE]
    assert restored.iloc[0]["values"] == "r | g | b | x" or restored.iloc[0]["values"] == "r|g|b|x"
    assert restored.iloc[0]["source"] == datasource.DECLARED


def test_the_recommended_workload_is_fitted_to_the_runs_noise_and_the_run_uses_it(at):
    """The newcomer's defaults (bundled Adult, recommended workload, ε = 1) warn of nothing: the recommended pairs
    are fitted to the run's public noise, and the run releases exactly that workload."""
    choose(at, "gaussian")
    at.number_input(key=state.EPSILON).set_value(1.0).run()
    assert not any("mostly noise" in plain(w.value) for w in at.warning)
    run = start_and_wait(at)
    assert run["status"] == "done"
    from dpcore.data import bundled_adult
    from dpcore.mechanisms import registry
    from dpcore.mechanisms.base import Budget
    from dpcore.release import fitted_default_workload

    ds = bundled_adult()
    mech = registry.get("gaussian")
    fitted = fitted_default_workload(ds.domain, ds.n, mech, Budget(1.0, 1.0 / ds.n**2), mech.validate_params({}))
    names = [fitted.marginal_name(j) for j in range(fitted.n_marginals)]
    assert len(run["card"]["workload"]["marginals"]) == fitted.n_marginals
    assert run["card"]["workload"]["n_queries"] == fitted.n_queries, names


def test_the_default_says_what_it_chose_before_the_run_and_the_run_and_its_card_keep_it(at):
    """Issue 23: with the recommended workload the page opens on the default, which names the mechanism and the
    marginals it chose from n and ε before anything is spent; the run releases exactly that plan; the card, the run
    list and the Results page say so.  Another workload: the default is not offered (the user's choice runs)."""
    from dpcore.data import bundled_adult
    from dpcore.mechanisms.base import Budget
    from dpcore.release import default_release_plan
    from ui import workload_state as wls

    default = "Default: chosen for this table — synthetic rows"
    assert at.selectbox(key=state.MECH).value == "auto" and at.selectbox(key=state.MECH).options[0] == default
    at.number_input(key=state.EPSILON).set_value(1.0).run()
    said = [plain(i.value) for i in at.info if "The default chose" in plain(i.value)]
    ds = bundled_adult()
    cls, params, wl, note = default_release_plan(ds.domain, ds.n, Budget(1.0, 1.0 / ds.n**2), {})
    assert len(said) == 1 and f"The default chose: {cls.title}." in said[0] and note in said[0]
    assert ledger() == []  # said before anything is spent
    run = start_and_wait(at, timeout=180)
    assert run["status"] == "done", run["error"]
    assert run["mechanism"] == cls.name and run["card"]["mechanism"]["name"] == cls.name
    assert run["params"] == params and run["card"]["workload"]["chosen_by"] == note
    assert run["card"]["workload"]["n_queries"] == wl.n_queries
    at.switch_page("pages/results.py").run()
    assert not at.exception and any("Measured: The default" in plain(c.value) for c in at.caption)
    at.switch_page("pages/workload.py").run()
    at.radio(key=wls.MODE).set_value("all").run()
    at.switch_page("pages/release.py").run()
    assert default not in at.selectbox(key=state.MECH).options and not at.exception
    assert at.selectbox(key=state.MECH).value == "projection"  # the recommended mechanism


def test_an_outcome_chosen_on_the_page_steers_the_default_and_is_kept(at, ws_path):
    """The Release page offers the table's columns as the outcome (default none); choosing one changes the plan
    said before the run (its pairs first) and not its cost; the choice survives a reload."""
    from dpcore.data import bundled_adult
    from dpcore.mechanisms.base import Budget
    from dpcore.release import OUTCOME, default_release_plan

    box = at.selectbox(key=state.OUTCOME)
    assert box.value == "" and box.options[1:] == bundled_adult().domain.names
    box.set_value("income-per-year").run()
    ds = bundled_adult()
    _, params, _, note = default_release_plan(ds.domain, ds.n, Budget(1.0, 1.0 / ds.n**2), {OUTCOME: "income-per-year"})
    said = [plain(i.value) for i in at.info if "The default chose" in plain(i.value)]
    assert len(said) == 1 and "among the outcome income-per-year's" in said[0] and note in said[0]
    assert params["focus"] == ds.domain.names.index("income-per-year") and ledger() == []
    again = new_session()
    assert again.session_state[state.OUTCOME] == "income-per-year"
    again.switch_page("pages/release.py").run()
    assert again.selectbox(key=state.OUTCOME).value == "income-per-year" and not again.exception


def test_the_sidebar_ledger_shows_the_recent_datasets_and_folds_the_rest(ws_path):
    """A workspace that has charged many tables: the sidebar shows the three used last, the others in an expander
    (still every total, nothing hidden)."""
    from dpcore.privacy.ledger import Ledger
    from dpcore.workspace import Workspace
    from ui import sidebar

    led = Ledger(Workspace(ws_path))
    for i in range(5):
        led.reserve(dataset=f"key{i}", name=f"table{i}", n=100, run=None, mechanism="gaussian", epsilon=0.5, delta=0)
        time.sleep(0.01)  # "last used" orders them: table4 is the most recent
    with apptest.session("pages/release.py") as app:
        assert not app.exception
        shown = [t.value for t in app.sidebar.text]  # in page order, the expander's last
        assert shown[-5:] == ["table4", "table3", "table2", "table1", "table0"] and sidebar.LEDGER_SHOWN == 3
        folded = [e for e in app.sidebar.expander if e.label == "2 more datasets (used less recently)"]
        assert len(folded) == 1 and [t.value for t in folded[0].text] == ["table1", "table0"]
        assert sum(c.value == "1 charged run · total ε = 0.5" for c in app.sidebar.caption) == 5
