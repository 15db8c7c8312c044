"""The Workload page: defaults that fit any table of 50+ rows, a plain attribute picker, checked inputs, no traps."""

from __future__ import annotations

import re

import pytest

from dpcore.data import bundled_adult
from dpcore.workload import Workload, default_workload
from tests.tables import small_table, to_csv_bytes, wide_table
from ui import apptest, state
from ui import workload_state as wls


@pytest.fixture
def at(tmp_path, monkeypatch):
    monkeypatch.setenv("DPCORE_WORKSPACE", str(tmp_path / "ws"))
    with apptest.navigation_only():
        app = apptest.new_app(timeout=120).run()
        assert not app.exception
        yield app


def errors(app) -> list[str]:
    return [re.sub(r"\\(.)", r"\1", e.value) for e in app.error]


def metric(app, label: str) -> str:
    return next(m.value for m in app.metric if m.label == label)


def upload(app, name: str, content: bytes):
    app.radio(key=state.SOURCE).set_value("upload").run()
    app.file_uploader(key="uploader").set_value((name, content, "text/csv")).run()
    assert not app.exception
    # An upload needs a schema first: the explicit non-private one here (deterministic, no charge); the private
    # discovery is tested in tests/test_app_roles.py.
    app.checkbox(key=f"schema_from_data:{app.session_state[state.UPLOAD]['digest']}").check().run()
    assert not app.exception
    return app


def test_opens_on_the_recommended_workload_of_adult_without_an_error(at):
    at.switch_page("pages/workload.py").run()
    assert not at.exception and errors(at) == []
    ds = bundled_adult()
    expected = default_workload(ds.domain, ds.n)
    assert at.radio(key=wls.MODE).value == "recommended"
    assert metric(at, "Marginals") == f"{expected.n_marginals:,}"
    assert metric(at, "Queries |Q|") == f"{expected.n_queries:,}"
    assert at.session_state["workload"][1].marginals == expected.marginals


@pytest.mark.parametrize(
    "name, table",
    [("fifty.csv", small_table(50)), ("hundred.csv", small_table(100)), ("wide.csv", wide_table(200, 400))],
)
def test_every_mode_opens_without_an_error_on_small_and_wide_tables(at, name, table):
    upload(at, name, to_csv_bytes(table))
    at.switch_page("pages/workload.py").run()
    assert not at.exception
    assert errors(at) == [], errors(at)
    wl = at.session_state["workload"][1]
    assert wl is not None and wl.n_marginals >= 1
    ds_n = len(table)
    # the recommended workload never holds a marginal whose average cell gets fewer than 5 rows, beyond one-ways
    assert all(len(m) == 1 or size <= ds_n / 5 for m, size in zip(wl.marginals, wl.sizes))
    # pick by hand opens on a working choice: a plain attribute list, not a red error
    at.radio(key=wls.MODE).set_value("picked").run()
    assert not at.exception and errors(at) == [], errors(at)
    picker = at.multiselect(key=state.WL_PICKED)
    assert picker.value and all("×" not in o for o in picker.options)
    assert picker.options == at.session_state[state.DATASET][1].domain.names


def test_pick_by_hand_is_a_plain_attribute_multiselect(at):
    at.switch_page("pages/workload.py").run()
    at.radio(key=wls.MODE).set_value("picked").run()
    ds = bundled_adult()
    picker = at.multiselect(key=state.WL_PICKED)
    assert picker.options == ds.domain.names
    # "Select N matches" would select every attribute with one click: the bulk action is off
    assert picker.proto.select_all == 0
    picker.set_value(["age", "sex", "race"]).run()
    at.number_input(key=state.WL_K).set_value(2).run()
    assert errors(at) == []
    wl = at.session_state["workload"][1]
    names = sorted(wl.marginal_name(j) for j in range(wl.n_marginals))
    assert names == sorted(["age", "sex", "race", "age × sex", "age × race", "race × sex"])
    shape = dict(zip(ds.domain.names, ds.domain.shape))
    cells = shape["age"] + shape["sex"] + shape["race"]
    cells += shape["age"] * shape["sex"] + shape["age"] * shape["race"] + shape["race"] * shape["sex"]
    assert metric(at, "Queries |Q|") == f"{cells:,}"
    # emptied by the user: a plain message, and no workload (nothing can run)
    at.multiselect(key=state.WL_PICKED).set_value([]).run()
    assert any("Pick at least one attribute" in e for e in errors(at))
    assert at.session_state["workload"][1] is None


def test_other_modes_match_the_engine_and_refuse_with_the_number(at):
    at.switch_page("pages/workload.py").run()
    ds = bundled_adult()
    at.radio(key=wls.MODE).set_value("random").run()
    at.number_input(key=state.WL_K).set_value(2).run()
    at.number_input(key=state.WL_M).set_value(8).run()
    assert errors(at) == []
    assert at.session_state["workload"][1] == Workload.random_kway(ds.domain, 2, 8, seed=0, max_cells=ds.n)
    at.radio(key=wls.MODE).set_value("all").run()
    assert metric(at, "Marginals") == f"{Workload.all_kway(ds.domain, 2, max_cells=ds.n).n_marginals:,}"
    at.radio(key=wls.MODE).set_value("random").run()
    at.number_input(key=state.WL_M).set_value(5000).run()
    n_2way = len(Workload.all_kway(ds.domain, 2, max_cells=ds.n).marginals)
    assert any(f"Only {n_2way:,} 2-way marginals" in e for e in errors(at))


def test_an_invalid_number_shows_its_message_and_builds_nothing(at):
    at.switch_page("pages/workload.py").run()
    at.radio(key=wls.MODE).set_value("random").run()
    at.number_input(key=state.WL_K).set_value(9).run()
    assert errors(at) == ["9 is outside the allowed range: 1 ≤ value ≤ 5."]
    assert not at.metric  # no size: nothing was built from a value nobody sees
    at.number_input(key=state.WL_K).set_value(3).run()
    at.number_input(key=state.WL_M).set_value(0).run()
    assert errors(at) == ["0 is outside the allowed range: at least 1."]
    # the Release page, which builds the workload without showing the control, says why too
    at.switch_page("pages/release.py").run()
    assert not at.exception


def test_choices_survive_page_switches(at):
    at.switch_page("pages/workload.py").run()
    at.radio(key=wls.MODE).set_value("picked").run()
    at.multiselect(key=state.WL_PICKED).set_value(["age", "education"]).run()
    at.switch_page("pages/data.py").run()
    at.switch_page("pages/workload.py").run()
    assert at.radio(key=wls.MODE).value == "picked"
    assert at.multiselect(key=state.WL_PICKED).value == ["age", "education"]
