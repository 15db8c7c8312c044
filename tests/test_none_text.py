"""``None`` in a CSV cell: a category of its own where a column of words holds it, a missing cell in numbers.

pandas reads ``None`` as missing by default, so a sleep-health table's "Sleep Disorder" (None 58%, Insomnia,
Sleep Apnea) came back blank on 58% of its rows, and an allergies column (None 70%, four allergens of 5-10%) was
left out: without its most common value no value cleared partition selection.  ``None`` is now read as text
(``NA``, ``NULL``, ``N/A`` and empty cells stay missing) and, cell by cell, counts as a value of a column of
categories whose schema lists it and as a missing cell everywhere else (numbers, dates, the roles' counts).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.data import read_table
from dpcore.discovery import select_values, value_counts
from dpcore.domain import Attribute, DomainError, infer_attribute
from dpcore.evaluate import build_coding, encode_column
from dpcore.ingest import SENSITIVITY, STATISTICS, column_counts, exact_stats, propose_roles
from dpcore.privacy.samplers import Randomness

from .tables import seeded_release


def _read(text: str) -> pd.DataFrame:
    return read_table(text.encode(), filename="t.csv")


def test_none_is_read_as_text_and_the_usual_missing_tokens_as_missing():
    df = _read("a,b\nNone,1\nNA,2\nNULL,3\n,4\nN/A,5\n?,6\nnan,7\nnone,8\n")
    assert df["a"].tolist()[0] == "None" and df["a"].tolist()[-1] == "none"
    assert df["a"].isna().tolist() == [False, True, True, True, True, True, True, False]


def test_a_listed_none_is_a_value_and_an_unlisted_one_a_missing_cell():
    column = pd.Series(["None", "Insomnia", " None ", None, "Insomnia"])
    listed = Attribute("d", "categorical", ("Insomnia", "None"), missing=True)
    codes, _ = listed.encode(column)
    assert codes.tolist() == [1, 0, 1, 2, 0]
    unlisted = Attribute("d", "categorical", ("Insomnia",), missing=True, other=True)
    codes, _ = unlisted.encode(column)
    assert codes.tolist() == [2, 0, 2, 2, 0]  # missing, not '(other)'
    with pytest.raises(DomainError, match="missing value"):  # as a blank cell would be
        Attribute("d", "categorical", ("Insomnia",)).encode(column)


def test_none_in_a_column_of_numbers_or_dates_is_a_missing_cell_not_an_unparsable_one():
    steps = pd.Series(["9800", "None", "5500", "None"])
    attr = Attribute("steps", "numeric", lower=0, upper=10_000, bins=10, missing=True)  # unparsable="reject"
    codes, _ = attr.encode(steps)
    assert codes.tolist() == [9, attr.n_regular, 5, attr.n_regular]
    when = Attribute("when", "datetime", lower="2020-01-01", upper="2020-12-31", missing=True)
    codes, _ = when.encode(pd.Series(["2020-03-01", "None"]))
    assert codes[1] == when.n_regular
    with pytest.raises(DomainError, match="non-numeric"):  # other text is still refused
        attr.encode(pd.Series(["9800", "lots"]))


def test_the_roles_count_none_as_missing_so_a_column_of_numbers_stays_numbers():
    rng = np.random.default_rng(0)
    steps = [str(v) if rng.random() > 0.3 else "None" for v in rng.integers(3000, 10_000, 400)]
    disorder = rng.choice(["None", "Insomnia", "Sleep Apnea"], 400, p=[0.6, 0.2, 0.2])
    df = _read("steps,disorder\n" + "".join(f"{s},{d}\n" for s, d in zip(steps, disorder)))
    stats = {s.name: s for s in exact_stats(df)}
    assert stats["steps"].present == sum(s != "None" for s in steps) == stats["steps"].numeric
    roles = {r.name: r for r in propose_roles(df)}
    assert roles["steps"].role == "numeric" and roles["disorder"].role == "categorical"
    assert infer_attribute(df["steps"], "steps").kind == "numeric"
    labels, counts = value_counts(df["disorder"])  # a category set's candidates include it
    assert dict(zip(labels, counts.tolist()))["None"] == int((disorder == "None").sum())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_cell_turned_to_none_moves_each_role_statistic_by_at_most_its_sensitivity(seed):
    """Neighbouring tables: a cell of a number, a word or a blank becomes ``None``: every role statistic and
    date-format count moves by at most its sensitivity (the rule reads the cell alone)."""
    rng = np.random.default_rng(seed)
    for column in (
        [str(v) for v in rng.integers(0, 50, 300)],
        list(rng.choice(["None", "Insomnia", "Sleep Apnea"], 300)),
        [f"2020-01-{d:02d}" if d % 7 else "" for d in rng.integers(1, 28, 300)],
    ):
        other = list(column)
        other[int(rng.integers(300))] = "None"
        a = _read("x,y\n" + "".join(f"{c},1\n" for c in column))["x"]
        b = _read("x,y\n" + "".join(f"{c},1\n" for c in other))["x"]
        (s0, f0), (s1, f1) = column_counts(a), column_counts(b)
        for key in STATISTICS:
            assert abs(s0[key] - s1[key]) <= SENSITIVITY[key], key
        assert max(abs(f0[f] - f1[f]) for f in f0) <= 1


def test_partition_selection_releases_none_as_a_value():
    column = pd.Series(["None"] * 600 + ["Insomnia"] * 200 + ["Sleep Apnea"] * 200)
    released = select_values(column, sigma=5.0, tau=50, noise=Randomness(seed=0))
    assert released == ("Insomnia", "None", "Sleep Apnea")


def test_evaluation_reads_none_as_a_value_of_words_and_a_missing_number():
    real = pd.Series([str(100 * i) if i % 3 else "None" for i in range(30, 90)], name="steps")
    assert build_coding(real, real).kind == "numeric"
    coding = build_coding(real, real, Attribute("steps", "numeric", lower=0, upper=10_000, bins=10, missing=True))
    codes, unreadable = encode_column(coding, real)
    assert unreadable == 0 and codes[0] == coding.missing_code
    words = pd.Series(["None", "Insomnia"] * 10, name="d")
    codes, _ = encode_column(build_coding(words, words), words)
    assert build_coding(words, words).labels[int(codes[0])] == "None"


def test_a_none_category_comes_back_as_none_with_nothing_declared(tmp_path):
    """A 1,500-row sleep table with nothing declared at ε = 1 (a seeded demo): 'sleep_disorder' comes back with
    its 'None' rows as 'None' (within 4σ of their real share), not blank; the allergies column, 70% 'None', is
    kept; a count of steps written 'None' on 3% of its rows is released as numbers with those cells blank."""
    rng = np.random.default_rng(7)
    n = 1500
    bmi = rng.choice(["Normal", "Overweight", "Obese"], n, p=[0.55, 0.4, 0.05])
    disorder = np.where(rng.random(n) < np.where(bmi == "Normal", 0.15, 0.75),
                        rng.choice(["Sleep Apnea", "Insomnia"], n), "None")  # fmt: skip
    steps = (rng.integers(30, 100, n) * 100).astype(object)
    steps[rng.random(n) < 0.03] = "None"
    allergies = rng.choice(["None", "Peanuts", "Latex", "Pollen"], n, p=[0.7, 0.1, 0.1, 0.1])
    df = pd.DataFrame({"age": rng.integers(27, 60, n), "bmi_category": bmi, "sleep_disorder": disorder,
                       "daily_steps": steps, "allergies": allergies})  # fmt: skip
    card, synth = seeded_release(df, tmp_path)
    schema = {a["name"]: a for a in card["data"]["schema"]}
    assert "None" in schema["sleep_disorder"]["values"] and "None" in schema["allergies"]["values"]
    assert schema["daily_steps"]["kind"] == "numeric"
    sigma = float(card["derived_public_parameters"]["sigma_one_way_counts"]) / n
    real_share = float((disorder == "None").mean())
    got = float((synth["sleep_disorder"] == "None").mean())
    assert abs(got - real_share) <= 4 * sigma + 3 * np.sqrt(real_share * (1 - real_share) / n), (got, real_share)
    assert "None" not in set(synth["daily_steps"])
