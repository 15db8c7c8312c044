"""AppTest: a real table through the app -- the roles table before anything is spent, per-field declarations
(issue 12, finding 4), one charged private discovery of the schema, releases that reuse it (on the card, charged
once), the explicit non-private choice, and the synthetic rows in the input's shape."""

import io
import json

import numpy as np
import pandas as pd
import pytest

from ui import apptest, datasource, roles, state
from ui.apptest import errors, plain

from .tables import KITCHEN_SINK_ROLES, kitchen_sink_csv, latin1_csv, small_table, to_csv_bytes, wide_table

#: kitchen_sink_csv renames: ``score`` and ``sex`` are both headed "grade", ``constant`` has no header.
RENAMED = {"score": "grade", "sex": "grade_2", "constant": "column_13"}
ROLE_TEXT = {"numeric:int": "integer", "numeric:real": "real", "categorical": "categorical", "excluded": "excluded"}


@pytest.fixture
def at(tmp_path, monkeypatch):
    monkeypatch.setenv("DPCORE_WORKSPACE", str(tmp_path / "ws"))  # each test its own workspace and ledger
    with apptest.session() as app:
        yield app


def metrics(app) -> dict:
    return {m.label: m.value for m in app.metric}


def upload(app, name: str, content: bytes):
    app.radio(key=state.SOURCE).set_value("upload").run()
    app.file_uploader(key="uploader").set_value((name, content, "text/csv")).run()
    assert not app.exception, app.exception
    return app


def runs(kind=None) -> list[dict]:
    rows = state.workspace().query("SELECT id, kind, status, epsilon FROM runs ORDER BY created")
    return [dict(r) for r in rows if kind is None or r["kind"] == kind]


def table_of(app) -> pd.DataFrame:
    return app.session_state[state.SCHEMA_TABLE].set_index("column")


def edit(app, column: str, **changes):
    """What the roles editor's on_change does with one edited row (AppTest cannot type into a data editor)."""
    table = app.session_state[state.SCHEMA_TABLE]
    i = int(list(table["column"]).index(column))
    app.session_state[state.SCHEMA_TABLE] = roles.fold_edits(table, {"edited_rows": {i: changes}})
    app.run()
    assert not app.exception


def discover(app, epsilon: float = 1.0) -> dict:
    app.number_input(key=datasource.SCHEMA_EPS).set_value(epsilon).run()
    button = next(b for b in app.button if b.label.startswith("Discover the schema privately"))
    assert button.label == f"Discover the schema privately (charges ε = {epsilon:g})"
    button.click().run()
    run_id = app.session_state[datasource.SCHEMA_RUN]
    apptest.wait_for_run(app, run_id)
    assert not app.exception and errors(app) == []
    return state.runs_store().get(run_id)


def release(app, mechanism="gaussian", epsilon=1.0) -> dict:
    app.switch_page("pages/release.py").run()
    app.selectbox(key=state.MECH).set_value(mechanism).run()
    app.number_input(key=state.EPSILON).set_value(epsilon).run()
    assert errors(app) == [], errors(app)
    next(b for b in app.button if b.label == "Run").click().run()
    run_id = app.session_state[state.LAST_RUN]
    apptest.wait_for_run(app, run_id)
    run = state.runs_store().get(run_id)
    assert run["status"] == "done", run["error"]
    return run


def test_an_upload_shows_every_role_and_reason_before_anything_is_spent(at):
    upload(at, "cases.csv", kitchen_sink_csv())
    assert [e for e in errors(at) if "expected to keep" not in e] == []  # the plan may refuse the discovery
    table = table_of(at)
    expected = {RENAMED.get(c, c): r for c, r in KITCHEN_SINK_ROLES.items()}
    assert list(table.index) == list(expected)  # every column, in the file's order, under its (renamed) name
    for col, want in expected.items():
        kind, _, fmt = want.partition(":")
        if kind == "datetime":
            assert (table.at[col, "role"], table.at[col, "format"]) == ("date", fmt), col
        else:
            assert table.at[col, "role"] == ROLE_TEXT[want], col
        if table.at[col, "role"] == "excluded":
            assert table.at[col, "note"], f"{col}: an excluded column says why"
    assert "identifier" in table.at["person_id", "note"] and "free text" in table.at["notes", "note"]
    assert "constant" in table.at["column_13", "note"] and "empty" in table.at["empty", "note"]
    assert table.at["income", "seen"] == "2,000 filled · 1,992 distinct"  # the owner sees exact counts ...
    assert set(table["declared"]) == {""}  # ... and nothing is declared until the user says so
    infos = [plain(i.value) for i in at.info]
    assert any("“grade” → grade_2" in i and "“(empty)” → column_13" in i for i in infos)
    # The cost of the discovery is stated; nothing was spent or recorded by showing all this.
    m = metrics(at)
    assert m["This discovery charges"] == "ε = 0.2" and "Attributes" not in m
    assert not state.has_spent() and runs() == []
    caption = next(plain(c.value) for c in at.caption if c.value.startswith("Columns discovered"))
    assert caption.startswith("Columns discovered (11): age, grade, income, grade_2, country, admitted")
    # Until the schema exists, the next pages say where to get it.
    at.switch_page("pages/workload.py").run()
    assert any("not discovered yet" in plain(i.value) for i in at.info)


def test_editing_one_field_declares_that_field_and_no_other(at):
    """Finding 4: typing the lower bound of `age` declares that bound (and the role it was typed for) -- not the
    upper bound, not another column.  The old editor marked the whole attribute declared after one edit, so the
    data's exact maximum went on the card as if the user had typed it."""
    upload(at, "cases.csv", kitchen_sink_csv())
    edit(at, "age", lower="0")
    table = table_of(at)
    assert table.at["age", "declared"] == "role,lower"
    assert table.at["age", "source"] == "declared: role, lower; the rest discovered"
    assert set(table.drop(index="age")["declared"]) == {""}
    edit(at, "country", values="United-States | Mexico | Canada")
    assert table_of(at).at["country", "declared"] == "role,values"
    assert table_of(at).at["age", "declared"] == "role,lower"  # sticky: the earlier edit stays as it was
    discover(at, epsilon=1.0)
    ds = at.session_state[state.DATASET][1]
    age, country = ds.domain["age"], ds.domain["country"]
    assert age.field_sources == {"kind": "declared", "lower": "declared", "upper": "dp"} and age.lower == 0
    assert country.field_sources == {"kind": "declared", "values": "declared"}
    assert country.values == ("United-States", "Mexico", "Canada")
    others = [a for a in ds.domain.attributes if a.name not in ("age", "country")]
    assert others and all(set(a.field_sources.values()) == {"dp"} for a in others)
    run = release(at)
    sources = {e["name"]: e["source"] for e in run["card"]["data"]["schema"]}
    assert sources["age"] == {"kind": "declared", "lower": "declared", "upper": "dp"}
    assert sources["country"] == "declared"


def test_the_discovery_states_its_cost_charges_it_once_and_comes_back_after_a_reload(at):
    upload(at, "cases.csv", kitchen_sink_csv())
    next(b for b in at.button if b.label == "Confirm all roles as public").click().run()
    assert set(table_of(at)["declared"]) >= {"role"} and all(table_of(at)["declared"].str.startswith("role"))
    at.number_input(key=datasource.SCHEMA_EPS).set_value(0.8).run()
    m = metrics(at)
    assert m["This discovery charges"] == "ε = 0.8" and m["Dataset total after it"] == "ε = 0.8"
    run = discover(at, epsilon=0.8)
    assert run["kind"] == "schema" and run["status"] == "done" and run["epsilon"] == 0.8
    digest = at.session_state[state.UPLOAD]["digest"]
    entries = state.ledger().entries(digest)
    assert [(e["run"], e["status"], e["epsilon"]) for e in entries] == [(run["id"], "settled", 0.8)]
    assert entries[0]["delta"] == pytest.approx(0.2 / 2000**2)
    assert any(f"Discovered privately in run {run['id']}: ε = 0.8" in plain(s.value) for s in at.success)
    ds = at.session_state[state.DATASET][1]
    assert ds.n == 2000 and ds.ledger_key == digest
    kinds = {a.name: a.field_sources["kind"] for a in ds.domain.attributes}
    assert set(kinds.values()) == {"declared"}  # every role confirmed: only values and bounds were discovered
    # A reload (a new session on the same workspace): the upload, the roles and the schema come back, uncharged.
    other = apptest.new_app().run()
    other.switch_page("pages/data.py").run()
    assert not other.exception and errors(other) == []
    assert other.session_state[state.DATASET][1].domain == ds.domain
    assert len(state.ledger().entries(digest)) == 1 and len(runs("schema")) == 1
    other.switch_page("pages/workload.py").run()
    assert metrics(other)["Marginals"] != "0" and errors(other) == []


def test_releases_reuse_the_schema_on_their_cards_and_the_ledger_is_charged_once(at):
    upload(at, "cases.csv", kitchen_sink_csv())
    schema_run = discover(at, epsilon=1.0)
    digest = at.session_state[state.UPLOAD]["digest"]
    at.switch_page("pages/release.py").run()
    note = next(plain(c.value) for c in at.caption if c.value.startswith("The schema was discovered"))
    assert f"run {schema_run['id']}" in note and "not charged for it again" in note
    cards = [release(at, epsilon=0.5)["card"], release(at, epsilon=0.7)["card"]]
    for card, eps in zip(cards, (0.5, 0.7)):
        assert "inferred" not in json.dumps(card["data"]["schema"])
        for entry in card["data"]["schema"]:
            src = entry["source"]
            assert set(src.values() if isinstance(src, dict) else [src]) <= {"declared", "dp"}
        schema, mech = card["privacy"]["parts"]
        assert schema["run"] == schema_run["id"] and schema["epsilon"] == 1.0 and "once" in schema["charged"]
        assert mech["epsilon"] <= eps and card["privacy"]["epsilon_spent"] == pytest.approx(1.0 + mech["epsilon"], 1e-3)
        assert {e["name"] for e in card["data"]["excluded"]} >= {"person_id", "case_number", "name", "notes"}
        assert card["data"]["renamed"] == [
            {"original": "grade", "name": "grade_2"},
            {"original": "", "name": "column_13"},
        ]
        assert card["data"]["schema_discovery"]["epsilon"] == 1.0
    by_run = {}
    for e in state.ledger().entries(digest):
        by_run[e["run"]] = by_run.get(e["run"], 0.0) + e["epsilon"]
    assert len(by_run) == 3 and by_run[schema_run["id"]] == 1.0  # the schema once, each release its own part
    assert sorted(v for k, v in by_run.items() if k != schema_run["id"]) == pytest.approx([0.5, 0.7])


def test_synthetic_rows_come_back_in_the_input_shape_and_the_preview_shows_them(at):
    upload(at, "cases.csv", kitchen_sink_csv())
    discover(at, epsilon=2.0)
    domain = at.session_state[state.DATASET][1].domain
    run = release(at, "projection", epsilon=2.0)
    rows = pd.read_csv(run["artifacts"]["synthetic.csv"], dtype=str, keep_default_na=False)
    order = list(pd.read_csv(io.BytesIO(kitchen_sink_csv()), nrows=0).columns)
    assert list(rows.columns) == domain.names  # the kept columns, in the file's order
    assert [c for c in order if c in rows.columns] == [c for c in rows.columns if c in order]
    for a in domain.attributes:
        # a number's or date's released texts (a column 70% numbers beside `none`, typed numbers in about 2% of
        # runs by the noisy distinct count) come back as written; every other cell is a number or a date
        cells = rows[a.name][(rows[a.name] != "") & ~rows[a.name].isin(a.texts)]
        if a.kind == "numeric":
            values = cells.astype(float)
            assert values.between(a.lower, a.upper).all(), a.name
            if a.integer:
                assert (values == values.round()).all(), a.name
        elif a.kind == "datetime":
            assert pd.to_datetime(cells, format=a.format).notna().all(), a.name
        else:
            assert set(cells) <= set(a.values) | {"(other)"}, a.name
    # The Results page previews those rows as released: numbers and dates, not bin labels.
    at.switch_page("pages/results.py").run()
    assert not at.exception and errors(at) == []
    preview = next(d.value for d in at.dataframe if list(d.value.columns) == domain.names)
    numeric = [a.name for a in domain.attributes if a.kind == "numeric"]
    assert numeric and not preview[numeric[0]].astype(str).str.startswith("[").any()


def test_free_edits_after_discovery_reuse_it_and_new_needs_are_flagged(at):
    upload(at, "cases.csv", kitchen_sink_csv())
    run = discover(at, epsilon=1.0)
    before = at.session_state[state.DATASET][1].domain
    kept = [n for n in before.names if n != "priors"]
    edit(at, "priors", role="excluded")  # needs nothing from the data: applied at once, uncharged
    after = at.session_state[state.DATASET][1].domain
    assert after.names == kept and all(after[n] == before[n] for n in kept)
    assert any(f"Discovered privately in run {run['id']}" in plain(s.value) for s in at.success)
    edit(at, "name", role="categorical")  # brings back a column: its values must come from the data
    warning = next(plain(w.value) for w in at.warning if "need the data again" in w.value)
    assert "name" in warning and at.session_state[state.DATASET][1].domain == before
    assert len(runs("schema")) == 1 and len(state.ledger().entries()) == 1


def test_reading_the_schema_without_privacy_is_an_explicit_choice_that_the_card_states(at):
    upload(at, "small.csv", to_csv_bytes(small_table()))
    digest = at.session_state[state.UPLOAD]["digest"]
    box = at.checkbox(key=f"schema_from_data:{digest}")
    assert box.value is False and "WITHOUT privacy" in box.label
    box.check().run()
    assert any("Read from the data without privacy" in plain(w.value) for w in at.warning)
    ds = at.session_state[state.DATASET][1]
    assert {s for a in ds.domain.attributes for s in a.field_sources.values()} == {"inferred"}
    assert not state.has_spent()  # no charge for the schema
    card = release(at)["card"]
    assert "does not cover" in card["data"]["schema_guarantee"] and "does not cover them" in card["promise"]
    assert len(state.ledger().entries(digest)) == 1  # the release only


def test_latin1_and_wide_tables_get_their_roles(at):
    upload(at, "villes.csv", latin1_csv())
    table = table_of(at)
    assert list(table.index) == ["ville", "âge", "catégorie"] and table.at["âge", "role"] == "integer"
    # 300 rows at the default schema ε: the public plan expects nothing usable, so the discovery is refused
    # before any spend (issue 22), until the owner asks for it anyway
    assert [e for e in errors(at) if not e.startswith("This discovery is expected to keep 0 usable")] == []
    button = next(b for b in at.button if b.label.startswith("Discover the schema privately"))
    assert button.disabled and not state.has_spent()
    at.checkbox(key=f"discover_anyway:{at.session_state[state.UPLOAD]['digest']}").check().run()
    assert not next(b for b in at.button if b.label.startswith("Discover the schema privately")).disabled
    wide = wide_table(n=300, p=400)
    upload(at, "wide.csv", to_csv_bytes(wide))
    table = table_of(at)
    assert len(table) == 400 and set(table["role"]) == {"integer", "real", "categorical"}
    assert metrics(at)["This discovery charges"] == "ε = 0.2" and not state.has_spent()


def test_a_small_table_is_told_before_the_discovery_what_the_budget_cannot_resolve(at):
    """Public (header, declarations, ε, δ, n): on 120 rows at the default ε no category can enter a discovered
    set; the page says so before anything is spent, and stops saying it when ε is large enough."""
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], 120), "grade": rng.choice(list("abc"), 120)})
    upload(at, "small.csv", df.to_csv(index=False).encode())
    warned = [plain(w.value) for w in at.warning]
    assert any(w.startswith("No category can be discovered at this budget") and "has 120" in w for w in warned)
    assert not state.has_spent() and runs() == []
    at.number_input(key=datasource.SCHEMA_EPS).set_value(50.0).run()
    assert not any("No category can be discovered" in plain(w.value) for w in at.warning)


def test_a_refused_discovery_names_the_smallest_schema_epsilon_that_keeps_something(at):
    """A 944-row panel of ten number columns at the default schema ε: the plan refuses and says which ε would do
    (public: the plan at the suggested ε); at that ε the page no longer refuses."""
    from .test_schema_plan import _panel

    upload(at, "panel.csv", _panel(944).to_csv(index=False).encode())
    refused = [e for e in errors(at) if e.startswith("This discovery is expected to keep")]
    assert refused and "the plan keeps something" in refused[0], errors(at)
    eps = float(refused[0].split("(at ε = ")[1].split(" ")[0])
    assert eps > datasource.DEFAULT_SCHEMA_EPSILON and not state.has_spent()
    at.number_input(key=datasource.SCHEMA_EPS).set_value(eps).run()
    assert not any(e.startswith("This discovery is expected to keep") for e in errors(at)), errors(at)


def test_a_small_wide_table_is_refused_until_its_proposal_is_declared_and_then_releases_every_column(at):
    """Issue 22 in the app: 1,000 rows × 21 columns at the default schema ε -- the plan refuses the discovery before
    any spend (button disabled); declaring the proposed values and bounds as public makes the schema free, and the
    release's card lists those fields as declared."""
    from .test_schema_plan import _survey

    df = _survey(1000)
    upload(at, "survey.csv", df.to_csv(index=False).encode())
    assert any(e.startswith("This discovery is expected to keep 0 usable") for e in errors(at))
    button = next(b for b in at.button if b.label.startswith("Discover the schema privately"))
    assert button.disabled and not state.has_spent()
    next(b for b in at.button if b.label == "Declare the proposed values and bounds as public").click().run()
    assert not at.exception and errors(at) == [], errors(at)
    assert any("the schema costs nothing" in s.value for s in at.success)
    table = table_of(at)
    assert table.at["q0", "values"] and table.at["age", "lower"] == "10" and table.at["q0", "source"] == "declared"
    assert not state.has_spent()
    run = release(at)
    schema = run["card"]["data"]["schema"]
    assert [a["name"] for a in schema] == list(df.columns)
    for a in schema:
        src = a["source"]
        assert set(src.values() if isinstance(src, dict) else [src]) == {"declared"}, a
    assert "schema_discovery" not in run["card"]["data"]


def test_a_tables_run_outcome_stays_on_that_table_and_results_opens_the_run_shown(at):
    """Issue 24: a success banner of one table's run appeared on the next table's pages, and "See the results" once
    opened another table's run.  The outcome belongs to the table it ran on; the link opens the run it announces."""
    from .test_schema_plan import _survey

    df = _survey(1000)
    upload(at, "survey.csv", df.to_csv(index=False).encode())
    next(b for b in at.button if b.label == "Declare the proposed values and bounds as public").click().run()
    first = release(at)  # on the upload
    at.run()
    assert any("finished in" in s.value for s in at.success)  # its outcome, on its table's Release page
    assert at.session_state[state.RESULT_RUN] == first["id"]
    at.switch_page("pages/data.py").run()
    at.radio(key=state.SOURCE).set_value("bundled").run()
    at.switch_page("pages/release.py").run()
    assert not any("finished in" in s.value for s in at.success)  # the upload's run is not this table's
    second = release(at)  # on the bundled sample
    at.run()
    assert at.session_state[state.RESULT_RUN] == second["id"] != first["id"]
    at.switch_page("pages/results.py").run()
    assert at.session_state[state.RESULT_RUN] == second["id"]


def test_a_column_proposed_excluded_but_kept_by_the_discovery_is_said_and_can_be_left_out(at):
    """Issue 24: a constant column shown as 'excluded' on the Data page was released anyway.  A proposal from exact
    counts is not a decision (honouring it would publish an exact-count decision): the page says the discovery kept
    it, and one click declares it excluded, after which the release leaves it out."""
    rng = np.random.default_rng(0)
    n = 3000
    df = pd.DataFrame(
        {"grade": rng.choice(list("abc"), n), "sex": rng.choice(["F", "M"], n), "site": ["north"] * n,
         "age": rng.integers(18, 90, n)}
    )  # fmt: skip
    upload(at, "t.csv", df.to_csv(index=False).encode())
    assert table_of(at).at["site", "role"] == "excluded" and "not a decision" in table_of(at).at["site", "note"]
    found = discover(at, 1.0)
    at.switch_page("pages/data.py").run()
    kept = "site" in [a["name"] for a in found["card"]["data"]["schema"]]
    said = any("proposed excluding site" in plain(w.value) for w in at.warning)
    assert said == kept  # said exactly when the discovery kept it
    if kept:
        next(b for b in at.button if b.label == "Leave them out (declare excluded)").click().run()
        assert table_of(at).at["site", "source"] != "not declared: discovered"
        discover(at, 1.0)
    run = release(at)
    assert "site" not in [a["name"] for a in run["card"]["data"]["schema"]]


def test_a_declared_complete_proposal_comes_back_with_no_other_and_no_empty_cell(at):
    """Issue 24: declared complete value sets and columns with no missing values come back with no '(other)' and no
    empty cells (a declared 1|2 target came back with 2.8% '(other)' and 1.3% empty)."""
    from dpcore.report import kept_summary

    from .test_schema_plan import _survey

    df = _survey(1000)
    upload(at, "survey.csv", df.to_csv(index=False).encode())
    next(b for b in at.button if b.label == "Declare the proposed values and bounds as public").click().run()
    assert "every value listed and no missing cells" in table_of(at).at["target", "note"]
    run = release(at, mechanism="projection")
    rows = state.runs_store().get(run["id"])
    synthetic = pd.read_csv(rows["artifacts"]["synthetic.csv"], dtype=str, keep_default_na=False)
    summary = kept_summary(run["card"], synthetic)
    assert summary["kept"] == 21
    for c in summary["columns"]:
        assert c["empty_share"] == 0, c
        assert c["other_share"] in (None, 0), c


def test_a_declared_number_role_keeps_how_its_numbers_are_written(at):
    """The roles table proposes how a column's numbers are written in its format field, as it does a date's format:
    prices "$1,234.50" propose "$,.2".  Declaring the role keeps that format, and the release writes the prices so
    (declaring a number's role used to drop it: prices came back plain)."""
    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({"price": [f"${v:,.2f}" for v in 1000 + rng.gamma(2.0, 900.0, n)],
                       "kind": rng.choice(["a", "b"], n)})  # fmt: skip
    upload(at, "prices.csv", to_csv_bytes(df))
    assert table_of(at).at["price", "role"] == "real" and table_of(at).at["price", "format"] == "$,.2"
    edit(at, "price", role="integer")  # declares the role; the format field keeps "$,.2"
    assert roles.declarations(at.session_state[state.SCHEMA_TABLE]).roles["price"] == {
        "role": "numeric", "integer": True, "style": "$,.2"}  # fmt: skip
    discover(at, epsilon=1.0)
    assert at.session_state[state.DATASET][1].domain["price"].style == "$,.2"
    run = release(at, "projection")
    schema = {e["name"]: e for e in run["card"]["data"]["schema"]}
    assert schema["price"]["style"] == "$,.2" and schema["price"]["integer"]
    rows = pd.read_csv(run["artifacts"]["synthetic.csv"], dtype=str, keep_default_na=False)
    assert rows["price"].str.fullmatch(r"\$[\d,]+\.00|").all() and (rows["price"] != "").mean() > 0.9
    edit(at, "price", format="")  # an emptied format writes plain numbers
    assert "style" not in roles.declarations(at.session_state[state.SCHEMA_TABLE]).roles["price"]


def test_a_lab_columns_texts_are_proposed_confirmed_and_released_through_the_app(at):
    """The roles table proposes CRP as real with ".1+texts" in its format field (exact, for the owner); "Confirm
    all roles as public" states that texts exist, not which; the private discovery releases "<0.5" and the release
    writes it back (it came back as empty cells)."""
    rng = np.random.default_rng(0)
    n = 3000
    crp = np.round(rng.lognormal(0.5, 1.2, n), 1)
    df = pd.DataFrame({"crp": np.where(crp < 0.5, "<0.5", crp.astype(str)), "ward": rng.choice(["A", "B"], n)})
    upload(at, "labs.csv", to_csv_bytes(df))
    assert table_of(at).at["crp", "role"] == "real" and table_of(at).at["crp", "format"] == ".1+texts"
    next(b for b in at.button if b.label == "Confirm all roles as public").click().run()
    assert roles.declarations(at.session_state[state.SCHEMA_TABLE]).roles["crp"]["texts"] is True
    discover(at, epsilon=1.0)
    assert at.session_state[state.DATASET][1].domain["crp"].texts == ("<0.5",)
    run = release(at, "projection")
    rows = pd.read_csv(run["artifacts"]["synthetic.csv"], dtype=str, keep_default_na=False)
    share = float((df["crp"] == "<0.5").mean())
    assert float((rows["crp"] == "<0.5").mean()) == pytest.approx(share, abs=0.05)
