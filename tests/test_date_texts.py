"""Dates with texts beside them: a clinic's visit dates written "unknown" on 15% of the rows (and blank on 5%) were
typed free text for their many distinct values and left out whole by the proposal, or, decided privately, kept as
categories that came back 79% "(other)".  The role rule now reads a column clearly half dates in its format, with
many distinct values, as dates whose other cells are missing.  Exact statistics for the rule; a private release end
to end with a fixed seed (the release's own figures, tolerances from its noise)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.cli import main
from dpcore.ingest import MIXED_DATES_REASON, ColumnStats, decide_role, propose_roles


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
def test_a_private_release_keeps_the_dates_and_reads_the_texts_as_missing(tmp_path, seed):
    """4,000 rows at ε = 1, nothing declared, "unknown" on 30% of the rows: the visit column is released as dates
    (it was typed categories and came back as "unknown" and "(other)"), its empty share near the 35% of cells
    that are "unknown" or blank.  The margin: the release's noise on one cell of a one-way marginal at this budget
    is a few tens of rows (σ ≈ 30); 5% of the rows is 200.  (At 15% "unknown" the old rule's margin typed the
    column dates in some draws and text in others.)"""
    df = _visits(4_000, seed=seed, unknown=0.30)
    path = tmp_path / "visits.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "out.csv"
    args = ["release", "--data", str(path), "--epsilon", "1", "--seed", str(seed), "--out", str(out)]
    assert main([*args, "--workspace", str(tmp_path / "ws")]) == 0
    released = pd.read_csv(out, dtype=str, keep_default_na=False)
    cells = released["visit"]
    empty = (cells == "").mean()
    assert abs(empty - 0.35) < 0.05
    dates = pd.to_datetime(cells[cells != ""], format="%Y-%m-%d", errors="coerce")
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
