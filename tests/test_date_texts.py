"""Dates with texts beside them: a clinic's visit dates written "unknown" on 15% of the rows (and blank on 5%) were
typed free text for their many distinct values and left out whole by the proposal, or, decided privately, kept as
categories that came back 79% "(other)".  The role rule now reads a column clearly half dates in its format, with
many distinct values, as dates; their frequent texts are released with the bounds as a number's are
(:attr:`dpcore.domain.Attribute.texts`).  Exact statistics for the rule; the attribute; the selection's accounting
and its guarantee for a text held by one row; releases end to end with fixed seeds (tolerances from their noise);
the proposal and the evaluation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpcore.cli import main
from dpcore.discovery import (
    BOUNDS_WEIGHT,
    REFINE_WEIGHT,
    TEXTS_WEIGHT,
    DiscoveryPlan,
    ValueTask,
    discover_values,
    discovery_cost,
    partition_threshold,
)
from dpcore.domain import Attribute
from dpcore.errors import DomainError
from dpcore.ingest import MIXED_DATES_REASON, ColumnStats, Role, decide_role, propose_roles, text_cells
from dpcore.privacy.samplers import Randomness
from dpcore.tabular import TEXTS_Z, _wants_texts, parse_schema, prepare_table


def _visits(n: int, seed: int = 0, unknown: float = 0.15) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    days = pd.Timestamp("2015-01-01") + pd.to_timedelta(rng.integers(0, 3000, n), unit="D")
    visit = days.strftime("%Y-%m-%d").to_numpy().astype(object)
    u = rng.random(n)
    visit[u < unknown] = "unknown"
    visit[(u >= unknown) & (u < unknown + 0.05)] = ""
    return pd.DataFrame({"visit": visit, "age": rng.integers(20, 80, n), "ward": rng.choice(["a", "b", "c"], n)})


def test_dates_beside_a_text_are_dates_and_a_few_dates_beside_a_text_stay_categories():
    """Exact statistics (σ = 0): 84% of the present cells dates over 1,978 days -> dates (they were "free text: too
    many distinct values"); three survey waves and "unknown" (4 values) stay categories, which keep each date."""
    visits = ColumnStats("visit", 4_000, 3_803, 0, 0, 3_203, 1_978, 600, 0, date_format="%Y-%m-%d")
    role = decide_role(visits)
    assert (role.role, role.format, role.reason) == ("datetime", "%Y-%m-%d", MIXED_DATES_REASON)
    waves = ColumnStats("wave", 4_000, 4_000, 0, 0, 3_000, 4, 1_000, 0, date_format="%Y-%m-%d")
    assert decide_role(waves).role == "categorical"
    # under half dates: text with a few dates in it is not a date column
    notes = ColumnStats("note", 4_000, 4_000, 0, 0, 1_500, 2_500, 100, 0, date_format="%Y-%m-%d")
    assert decide_role(notes).role != "datetime"
    # whole numbers beside a text are dates only where they are written dates (a year under a header naming one)
    years = ColumnStats("year_of_birth", 4_000, 4_000, 3_400, 0, 3_400, 70, 200, 0, date_format="%Y")
    assert decide_role(years).role == "datetime"
    counts = ColumnStats("visits", 4_000, 4_000, 3_400, 0, 3_400, 70, 200, 0, date_format="%Y")
    assert decide_role(counts).role == "numeric"


def test_noise_keeps_the_rule_honest_about_the_distinct_count():
    """With noise, the distinct count must clear MIXED_NUMBER_VALUES by 2σ: 30 noisy distinct values at σ = 10 is
    not enough (a column of a few dates would be binned), 300 is."""
    few = ColumnStats("visit", 4_000, 3_800, 0, 0, 3_200, 30, 600, 0, date_format="%Y-%m-%d", sigma=10.0)
    assert decide_role(few).role == "categorical"
    many = ColumnStats("visit", 4_000, 3_800, 0, 0, 3_200, 300, 600, 0, date_format="%Y-%m-%d", sigma=10.0)
    assert decide_role(many).role == "datetime"


def test_the_proposal_reads_visit_dates_with_unknowns_as_dates():
    roles = {r.name: r for r in propose_roles(_visits(4_000))}
    assert (roles["visit"].role, roles["visit"].format) == ("datetime", "%Y-%m-%d")
    assert roles["visit"].reason.startswith("dates")


@pytest.mark.parametrize("seed", [1, 2])
def test_a_private_release_keeps_the_dates_and_the_unknowns_beside_them(tmp_path, seed):
    """4,000 rows at ε = 1, nothing declared, "unknown" on 30% of the rows: the visit column is released as dates
    (it was typed categories and came back as "unknown" and "(other)"), "unknown" as a value of its own in about
    its real share and the blanks empty.  The margin: the release's noise on one cell of a one-way marginal at
    this budget is a few tens of rows (σ ≈ 30); 5% of the rows is 200.  (At 15% "unknown" the old rule's margin
    typed the column dates in some draws and text in others.)"""
    df = _visits(4_000, seed=seed, unknown=0.30)
    path = tmp_path / "visits.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "out.csv"
    args = ["release", "--data", str(path), "--epsilon", "1", "--seed", str(seed), "--out", str(out)]
    assert main([*args, "--workspace", str(tmp_path / "ws")]) == 0
    released = pd.read_csv(out, dtype=str, keep_default_na=False)
    cells = released["visit"]
    assert abs((cells == "unknown").mean() - (df["visit"] == "unknown").mean()) < 0.05
    assert abs((cells == "").mean() - (df["visit"] == "").mean()) < 0.05
    dated = cells[~cells.isin(["", "unknown"])]
    dates = pd.to_datetime(dated, format="%Y-%m-%d", errors="coerce")
    assert dates.notna().all()  # every present cell is a date in the file's format, none "(other)"
    assert dates.min() >= pd.Timestamp("2014-01-01") and dates.max() <= pd.Timestamp("2024-12-31")


def test_the_evaluation_reads_dates_with_a_text_as_dates_and_compares_the_text_as_a_value():
    """`dpcore evaluate` read a column of dates with "unknown" on 30% of its rows as categories (one per day), so a
    release that kept the dates scored worse than one that kept "unknown" and lost every date.  It now reads the
    dates in bins and "unknown" as a value of its own: a release writing "unknown" as empty cells differs by the
    text's share; the table against itself by nothing; one that lost the dates to "(other)" by far more."""
    from dpcore.evaluate import evaluate

    df = _visits(3_000, seed=4, unknown=0.30)
    share = float((df["visit"] == "unknown").mean())

    def one_way(synthetic: pd.DataFrame) -> float:
        report = evaluate(df, synthetic, seed=0, ml=False)
        return {c["column"]: c["tvd"] for c in report["one_way_tvd"]["columns"]}["visit"]

    assert one_way(df.copy()) == 0.0
    emptied = df.assign(visit=df["visit"].where(df["visit"] != "unknown", ""))
    assert one_way(emptied) == pytest.approx(share, abs=1e-9)
    lost = df.assign(visit=df["visit"].where(df["visit"].isin(["unknown", ""]), "(other)"))
    assert one_way(lost) > 0.6
    # The same texts beside dates drawn afresh from the same range: close in bins (2,100 dates in 10 bins: a
    # sampling TVD of about 0.03), where one category per day had put them 0.5 apart.
    redrawn = _visits(3_000, seed=9, unknown=0.30)["visit"]
    dated = ~df["visit"].isin(["unknown", ""])
    fresh = redrawn[~redrawn.isin(["unknown", ""])].to_numpy()[: int(dated.sum())]
    assert len(fresh) == int(dated.sum())
    moved = df.copy()
    moved.loc[dated, "visit"] = fresh
    assert one_way(moved) < 0.08


def test_a_date_attribute_keeps_its_texts_after_the_bins_and_writes_them_back():
    a = Attribute("visit", "datetime", lower="2020-01-01", upper="2023-12-31", bins=4, format="%d/%m/%Y",
                  missing=True, unparsable="missing", texts=("unknown",))  # fmt: skip
    assert (a.n_bins, a.n_regular, a.size) == (4, 5, 6)
    assert a.labels()[4:] == ["unknown", "(missing)"]
    codes, _ = a.encode(pd.Series(["03/02/2021", "unknown", None, "N/K", " unknown "], dtype=object))
    assert codes.tolist() == [1, 4, 5, 5, 4]  # "N/K" is not listed: a missing cell
    values = a.decode(codes, "values", np.random.default_rng(0)).tolist()
    assert values[1] == values[4] == "unknown" and pd.isna(values[2])
    assert pd.to_datetime(values[0], format="%d/%m/%Y").year == 2021
    assert Attribute.from_dict(a.to_dict()) == a and a.to_dict()["texts"] == ["unknown"]
    assert a.with_fields(kind="numeric", lower=0, upper=1).texts == ()
    with pytest.raises(DomainError, match="reads as a date in its format"):
        Attribute("visit", "datetime", lower="2020-01-01", upper="2023-12-31", format="%d/%m/%Y", missing=True,
                  texts=("01/01/2022",))  # fmt: skip
    assert text_cells(
        pd.Series(["03/02/2021", "unknown", None, "NA", "2021-02-03"]), date_format="%d/%m/%Y"
    ).tolist() == [
        "unknown",
        "2021-02-03",  # a date in another format is a text of this column, as the release reads it
    ]


def _date_role(present: float, dates: float, sigma: float = 50.0) -> Role:
    stats = {"present": present, "date": dates, "numeric": 0.0, "noise_sigma": sigma}
    return Role("visit", "datetime", format="%Y-%m-%d", source="dp", stats=stats)


def test_a_date_column_seeks_texts_where_its_released_counts_say_there_are_some():
    gap = TEXTS_Z * 50.0 * math.sqrt(2.0)
    assert _wants_texts(_date_role(3000, 3000 - gap - 1), None, 3000)
    assert not _wants_texts(_date_role(3000, 3000 - gap + 1), None, 3000)
    confirmed = Role("visit", "datetime", format="%Y-%m-%d", source="declared")
    assert not _wants_texts(confirmed, None, 3000)  # a confirmed date role carries no counts: declare its texts


def test_a_dates_texts_share_rho_and_delta_as_a_numbers_do():
    """A date column seeking texts weighs BOUNDS_WEIGHT + TEXTS_WEIGHT (+ its refinement); its selection has
    σ = 1/sqrt(ρ_v·TEXTS_WEIGHT/total) and shares δ_t with the category sets."""
    df = _visits(3_000, seed=3, unknown=0.30)
    tasks = [
        ValueTask("ward", "categorical", need_values=True),
        ValueTask("visit", "datetime", format="%Y-%m-%d", need_lower=True, need_upper=True, need_texts=True),
    ]
    rho, delta_t = 0.02, 1e-9
    found = discover_values(df, tasks, rho, delta_t, Randomness(0))
    rep = found.report
    refined = "refined" in rep["bounds"]["visit"]
    total = 1 + BOUNDS_WEIGHT + TEXTS_WEIGHT + (REFINE_WEIGHT if refined else 0.0)
    assert rep["texts"]["sigma"] == pytest.approx(1 / math.sqrt(rho * TEXTS_WEIGHT / total))
    assert rep["texts"]["threshold"] == partition_threshold(rep["texts"]["sigma"], delta_t / 2)
    assert found.fields["visit"]["texts"] == ("unknown",)


def test_a_text_beside_dates_held_by_one_row_is_never_released_and_a_frequent_one_always():
    """ε = 1, δ = 1/n²: "moved away", held by one row, enters with probability at most δ_t / 2 per run; over 40
    runs P[any] ≤ 40·δ_t < 1e-5: none.  Its neighbour without that row cannot release it at all.  "unknown" (30%
    of 4,000 rows, ~1,200, against a τ of a few hundred) is always released."""
    df = _visits(4_000, seed=7, unknown=0.30)
    df.loc[11, "visit"] = "moved away"
    eps_d, delta_d = discovery_cost(1.0, 1.0 / len(df) ** 2, 3)
    plan = DiscoveryPlan.make(eps_d, delta_d, 0)
    tasks = [
        ValueTask("ward", "categorical", need_values=True),
        ValueTask("visit", "datetime", format="%Y-%m-%d", need_lower=True, need_upper=True, need_texts=True),
    ]
    assert 40 * plan.delta_threshold < 1e-5
    for seed in range(40):
        found = discover_values(df, tasks, plan.rho_values, plan.delta_threshold, Randomness(seed)).fields
        assert found["visit"]["texts"] == ("unknown",)


def test_declared_texts_beside_dates_are_kept_without_seeking_and_the_proposal_lists_them():
    from dpcore.proposal import propose_schema

    df = _visits(3_000, seed=8, unknown=0.30)
    df.loc[5, "visit"] = "moved away"
    proposal = propose_schema(df)
    visit = next(a for a in proposal["attributes"] if a["name"] == "visit")
    assert visit["kind"] == "datetime" and visit["texts"] == ["unknown", "moved away"]
    assert proposal["review"]["rare_values"]["visit"] == ["moved away"]
    schema = [{"name": "visit", "kind": "datetime", "format": "%Y-%m-%d", "texts": ["unknown"]}]
    prep = prepare_table(df, epsilon=1.0, delta=1e-8, noise=Randomness(0), ledger=None, schema=schema)
    assert prep.domain["visit"].texts == ("unknown",) and "texts" not in prep.discovery_report
    inferred = [{"name": "visit", "kind": "datetime", "lower": "2015-01-01", "upper": "2023-12-31",
                 "texts": ["unknown"], "source": "inferred"}]  # fmt: skip
    specs, _ = parse_schema(inferred)
    assert "texts" not in specs["visit"].settings  # read from the data without DP: not used unless asked


def test_a_date_role_confirmed_with_texts_seeks_them_without_counts():
    """The proposal marks the visit column "with texts" (exact, for the owner); confirming it (``date:%Y-%m-%d+texts``
    on the command line, ``%Y-%m-%d+texts`` in the Data page's format field) states that fact, not a text: "unknown"
    is still released privately, with no role counts to gate it.  Without the flag a confirmed date role seeks
    none; with it and no text frequent enough, the release says why those cells are empty."""
    from dpcore.cli.info import role_option
    from dpcore.errors import DataError
    from ui.roles import role_of, role_spec

    df = _visits(3_000, seed=10, unknown=0.30)
    proposed = {r.name: r for r in propose_roles(df)}
    assert proposed["visit"].texts and proposed["visit"].label == "date (%Y-%m-%d, day, with texts)"
    assert not proposed["age"].texts and role_option(proposed["visit"]) == "date:%Y-%m-%d+texts"
    assert role_of(proposed["visit"]) == ("date", "%Y-%m-%d+texts")
    confirmed = Role("visit", "datetime", format="%Y-%m-%d", texts=True)
    assert Role.parse("visit", "date:%Y-%m-%d+texts") == confirmed
    assert Role.parse("visit", confirmed.to_dict()) == confirmed
    assert role_spec({"column": "visit", "role": "date", "format": "%Y-%m-%d+texts"}) == {
        "role": "datetime", "format": "%Y-%m-%d", "texts": True,
    }  # fmt: skip
    with pytest.raises(DataError, match="for numbers and dates"):
        Role.parse("ward", "categorical+texts")
    roles = {"visit": "date:%Y-%m-%d+texts", "age": "integer", "ward": "categorical"}
    prep = prepare_table(df, epsilon=1.0, delta=1e-8, noise=Randomness(0), ledger=None, roles=roles)
    assert prep.domain["visit"].texts == ("unknown",) and prep.discovery_report["texts"]["attributes"] == 1
    plain = {**roles, "visit": "date:%Y-%m-%d"}
    prep = prepare_table(df, epsilon=1.0, delta=1e-8, noise=Randomness(0), ledger=None, roles=plain)
    assert prep.domain["visit"].texts == () and "texts" not in prep.discovery_report
    # 1% "unknown" (30 rows) against a τ of a few hundred: none released, and the release says so
    rare = _visits(3_000, seed=10, unknown=0.01)
    prep = prepare_table(rare, epsilon=1.0, delta=1e-8, noise=Randomness(0), ledger=None, roles=roles)
    assert prep.domain["visit"].texts == () and prep.discovery_report["texts_not_released"] == ["visit"]
    assert any("Cells that are not numbers (dates) in visit (confirmed with texts)" in w for w in prep.warnings)


def test_the_data_pages_schema_table_shows_a_dates_texts():
    from dpcore.domain import Domain
    from ui.datasource import domain_table

    a = Attribute("visit", "datetime", lower="2020-01-01", upper="2023-12-31", bins=4, missing=True,
                  unparsable="missing", texts=("unknown",))  # fmt: skip
    shown = domain_table(Domain((a,)))["values or bounds"].iloc[0]
    assert shown.endswith("4 bins + unknown")
    # the roles table built from a declared schema keeps the date field's texts when it declares it again
    from ui import roles

    table = roles.roles_table(["visit"], [], declared=Domain((a,)))
    entries = roles.declarations(table).entries
    assert [e.get("texts") for e in entries] == [["unknown"]]
    assert roles.declared_domain(table)["visit"].texts == ("unknown",)
