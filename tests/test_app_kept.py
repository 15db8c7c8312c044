"""AppTest: a run that left columns out says so at the top of Results (issue 24) -- "Kept k of N columns", the kept
columns with their types and shares of "(other)" and empty cells, the left-out columns with reasons, and a caption
under the error headline -- and Compare shows the kept columns beside each run's errors, never ranks runs of
different schemas together, shows each run's δ and tells default-labelled runs apart."""

import numpy as np
import pandas as pd
import pytest

from dpcore.domain import Attribute, Domain
from dpcore.runs import execute_release
from ui import apptest, state
from ui.apptest import errors, plain

HOSTILE = "**bold** [x](http://e.com)"


def people(n: int = 600, seed: int = 0) -> pd.DataFrame:
    """A raw table of five columns: an identifier, a column of distinct codes under a hostile header, another of
    distinct references, free text and one frequent category."""
    g = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "id": [f"p{i:05d}" for i in range(n)],
            HOSTILE: [f"h{i:05d}" for i in g.permutation(n)],
            "ref": [f"r{i:07d}" for i in g.choice(10**7, n, replace=False)],
            "note": [f"free text {int(v)}" for v in g.integers(0, 10**9, n)],
            "sex": g.choice(["F", "M"], n),
        }
    )
    df.attrs["name"] = "people"
    return df


#: Declared schemas (free, so the test does not depend on the noise of a private discovery): one keeps "sex"
#: only, the other also the hostile column, declared with two of its 600 values and "(other)" for the rest.
SEX = Attribute("sex", "categorical", ("F", "M"))
ONE_COLUMN = Domain((SEX,))
TWO_COLUMNS = Domain((SEX, Attribute(HOSTILE, "categorical", ("h00001", "h00002"), other=True)))


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.setenv("DPCORE_WORKSPACE", str(tmp_path / "ws"))
    state._open_workspace.clear()
    with apptest.session() as app:
        yield app, state.workspace()
    state._open_workspace.clear()


def run_with(workspace, schema: Domain) -> str:
    rel, _, run_id = execute_release(
        workspace, None, None, "projection", 1.0, table=people(), table_options={"schema": schema, "force": True}
    )
    assert sorted(a["name"] for a in rel.card["data"]["schema"]) == sorted(schema.names)
    return run_id


def test_results_say_what_the_release_kept_before_any_error(ws):
    app, workspace = ws
    run_id = run_with(workspace, ONE_COLUMN)
    app.switch_page("pages/results.py").run()
    assert not app.exception and errors(app) == []
    assert app.selectbox(key=state.RESULT_RUN).value == run_id
    headers = [h.value for h in app.subheader]
    assert headers.index("What this release kept") < headers.index("Accuracy (internal evaluation)")
    assert headers[1] == "What this release kept"  # the top of the run's results (after the list of runs)
    warning = next(plain(w.value) for w in app.warning if "Kept 1 of 5 columns" in plain(w.value))
    assert "4 column(s) of the table are not in this release" in warning
    kept = app.main.dataframe[0].value
    assert list(kept["column"]) == ["sex"] and list(kept["type"]) == ["categorical"]
    assert kept["% (other)"][0] == "0.0%"  # declared F, M and no "(other)": every released cell is listed
    assert kept["% empty"][0].endswith("%") and list(kept["released as"]) == ["2 values + empty"]
    heading = next(i for i, md in enumerate(app.main.markdown) if md.value == "**Left out (4)**")
    left = plain(app.main.markdown[heading + 1].value).splitlines()  # listed in full, not in an expander
    names = ["id", HOSTILE, "ref", "note"]
    assert left == [f"- **{name}**: not in the declared schema" for name in names]
    assert f"**{HOSTILE}**" not in app.main.markdown[heading + 1].value  # the hostile header is escaped
    captions = [plain(c.value) for c in app.caption]
    assert any(c.startswith("Errors are measured only on the 1 kept column(s) of 5") for c in captions)
    assert app.metric[0].label == "Max error"
    # The hostile header is never markup: it only appears in dataframes (or escaped).
    assert not any("[x](http://e.com)" in md.value for md in app.markdown)
    assert not any("kept" in e.label.lower() or "left out" in e.label.lower() for e in app.main.expander)


def test_compare_shows_kept_columns_delta_labels_and_flags_different_schemas(ws):
    app, workspace = ws
    run_with(workspace, ONE_COLUMN)
    run_with(workspace, TWO_COLUMNS)
    app.switch_page("pages/compare.py").run()
    assert not app.exception and errors(app) == []
    assert any("Different schemas: errors not comparable" in plain(w.value) for w in app.warning)
    tables = [d.value for d in app.main.dataframe]
    assert len(tables) == 2  # one table per schema: never ranked together
    kept = sorted(t["kept columns"].iloc[0] for t in tables)
    assert kept == ["1 of 5", "2 of 5"]
    for t in tables:
        assert list(t.columns[:4]) == ["label", "kept columns", "max_error", "mean_error"]
        delta = t["delta"].iloc[0]
        assert delta.endswith(" (1/n²)") and "None" not in delta
    labels = [t["label"].iloc[0] for t in tables]
    assert len(set(labels)) == 2  # two default-labelled runs of one mechanism at one ε can be told apart
    assert all(lab.startswith("projection ε=1 · people · ") for lab in labels)
    assert {lab.split(" · ")[2] for lab in labels} == {"1 of 5 columns", "2 of 5 columns"}
    schema_pick = app.radio(key=state.KEEP + "compare_schema")
    assert len(schema_pick.options) == 2
    shown = app.multiselect(key=state.COMPARE_RUNS).options
    assert len(shown) == 1  # the charts show one schema's runs
    schema_pick.set_value(schema_pick.options[1]).run()
    assert not app.exception and len(app.multiselect(key=state.COMPARE_RUNS).options) == 1
    assert app.multiselect(key=state.COMPARE_RUNS).options != shown
    # The newest run (two declared columns) on Results: one of them is almost all "(other)", and says so.
    app.switch_page("pages/results.py").run()
    assert not app.exception and errors(app) == []
    assert any("Kept 2 of 5 columns" in plain(w.value) for w in app.warning)
    name_only = next(w.value for w in app.warning if "Kept in name only" in w.value)
    assert HOSTILE not in name_only and HOSTILE in plain(name_only)  # escaped, shown as written
    kept = app.main.dataframe[0].value.set_index("column")
    assert float(kept.loc[HOSTILE, "% (other)"].rstrip("%")) >= 50.0 and kept.loc["sex", "% (other)"] == "0.0%"
