"""Generated private tables of every kind the ingestion engine must handle (never only the bundled Adult).

Each builder is seeded and returns a DataFrame (as :func:`dpcore.data.read_table` would give it) or the bytes of a
file, so tests read them through the real loader.  The planted facts each test relies on are documented here:

* :func:`kitchen_sink` -- every role: integers, a continuous score, categories with a long tail and ONE value held
  by a single row (:data:`SINGLETON`), ISO dates, day/month dates with times, month/day dates, person names,
  case numbers and numeric ids (identifier headers), free text, a constant and an empty column, a column with
  mixed numbers and text, missing cells;
* :func:`kitchen_sink_csv` -- the same as CSV bytes with a repeated header name and an empty one;
* :func:`wide_table` -- 400 columns; :func:`small_table` -- 100 rows;
* :func:`million_rows` -- a million-value continuous column beside a categorical one.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd

#: The category held by exactly one row of :func:`kitchen_sink`'s ``country`` column.
#: CLI arguments for a shorter fit of the default release (fewer Frank–Wolfe steps, no SCIP certificate), for tests
#: of what surrounds the fit -- the schema, the card, the columns -- not of its accuracy.
QUICK_FIT = ["--param", "round_iterations=5", "--param", "max_iterations=60", "--param", "scip=off"]

SINGLETON = "Atlantis"
FIRST_NAMES = [
    f"{a}{b}" for a in ("Jo", "An", "Ma", "Li", "Sa", "Ro", "Ka", "El", "Da", "Mi") for b in "abcdefghijklmnopqrst"
]
LAST_NAMES = [
    f"{a}{b}son" for a in ("Ber", "Car", "Dal", "Fin", "Gar", "Hol", "Ive", "Jen", "Kel", "Lar") for b in "aeiouy"
]
WORDS = (
    "the defendant was charged with possession of a controlled substance after a traffic stop on the highway near"
).split()
COUNTRIES = ["United-States"] * 60 + ["Mexico"] * 15 + ["Canada"] * 10 + ["Germany"] * 8 + ["India"] * 7


def kitchen_sink(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 91, n)
    score = np.round(rng.normal(50.0, 15.0, n), 4)
    income = rng.integers(0, 200_000, n)
    country = rng.choice(COUNTRIES, n).astype(object)
    country[rng.integers(0, n)] = SINGLETON
    days = rng.integers(0, 3 * 365, n)
    admitted = pd.Timestamp("2013-01-01") + pd.to_timedelta(days, unit="D")
    released = admitted + pd.to_timedelta(rng.integers(60, 86_400 * 30, n), unit="s")
    born = pd.Timestamp("1950-01-01") + pd.to_timedelta(rng.integers(0, 40 * 365, n), unit="D")
    initials = [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    names = [f"{rng.choice(FIRST_NAMES)} {rng.choice(initials)}. {rng.choice(LAST_NAMES)}" for _ in range(n)]
    notes = [" ".join(rng.choice(WORDS, rng.integers(7, 14))) for _ in range(n)]
    mixed = np.where(rng.random(n) < 0.7, rng.integers(1, 5, n).astype(str), rng.choice(["none", "unknown"], n))
    df = pd.DataFrame(
        {
            "person_id": rng.permutation(n) + 10_000,
            "case_number": [f"C{2013 + i % 5}-{i:06d}" for i in rng.permutation(n)],
            "name": names,
            "age": age,
            "score": score,
            "income": income,
            "sex": rng.choice(["Female", "Male"], n),
            "country": country,
            "admitted": admitted.strftime("%Y-%m-%d"),
            "released": released.strftime("%d/%m/%Y %H:%M"),
            "born": born.strftime("%m/%d/%Y"),
            "notes": notes,
            "constant": ["same"] * n,
            "empty": [np.nan] * n,
            "priors": mixed,
        }
    )
    holes = rng.random(n) < 0.05
    df.loc[holes, "age"] = np.nan
    df.loc[rng.random(n) < 0.05, "sex"] = np.nan
    df["age"] = df["age"].astype("Int64")
    return df


#: The role :func:`kitchen_sink`'s columns must get ("numeric:int" = integer numeric).
KITCHEN_SINK_ROLES = {
    "person_id": "excluded",
    "case_number": "excluded",
    "name": "excluded",
    "age": "numeric:int",
    "score": "numeric:real",
    "income": "numeric:int",
    "sex": "categorical",
    "country": "categorical",
    "admitted": "datetime:%Y-%m-%d",
    "released": "datetime:%d/%m/%Y %H:%M",
    "born": "datetime:%m/%d/%Y",
    "notes": "excluded",
    "constant": "excluded",
    "empty": "excluded",
    "priors": "categorical",
}


def to_csv_bytes(df: pd.DataFrame, header=None, sep: str = ",", encoding: str = "utf-8") -> bytes:
    """The table as CSV bytes; ``header`` overrides the header line (to plant repeated or empty names)."""
    buf = io.StringIO()
    df.to_csv(buf, index=False, sep=sep, header=header if header is not None else True)
    return buf.getvalue().encode(encoding)


def kitchen_sink_csv(n: int = 2000, seed: int = 0, sep: str = ",", encoding: str = "utf-8") -> bytes:
    """:func:`kitchen_sink` as CSV with ``sex`` and ``score`` both headed ``grade`` and ``constant`` headed ''."""
    df = kitchen_sink(n, seed)
    header = [{"sex": "grade", "score": "grade", "constant": ""}.get(c, c) for c in df.columns]
    return to_csv_bytes(df, header=header, sep=sep, encoding=encoding)


def latin1_csv(n: int = 300, seed: int = 0) -> bytes:
    """A semicolon-separated Latin-1 file with accented categories and a numeric column."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "ville": rng.choice(["Zürich", "Köln", "Besançon", "Málaga"], n),
            "âge": rng.integers(18, 80, n),
            "catégorie": rng.choice(["A", "B"], n),
        }
    )
    return to_csv_bytes(df, sep=";", encoding="latin-1")


def small_table(n: int = 100, seed: int = 0) -> pd.DataFrame:
    """100 rows: a tiny table on which the defaults must still run and mean something."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "group": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
            "flag": rng.choice(["yes", "no"], n),
            "level": rng.integers(1, 6, n),
            "amount": np.round(rng.gamma(2.0, 30.0, n), 2),
            "visit": (pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 365, n), unit="D")).strftime(
                "%Y-%m-%d"
            ),
        }
    )


def wide_table(n: int = 2000, p: int = 400, seed: int = 0) -> pd.DataFrame:
    """``p`` columns: a quarter integers, a quarter reals, half categorical with 2-6 values."""
    rng = np.random.default_rng(seed)
    cols = {}
    for j in range(p):
        kind = j % 4
        if kind == 0:
            cols[f"int_{j}"] = rng.integers(0, 1000, n)
        elif kind == 1:
            cols[f"real_{j}"] = rng.normal(0.0, 1.0, n)
        else:
            k = 2 + j % 5
            cols[f"cat_{j}"] = rng.choice([f"v{i}" for i in range(k)], n)
    return pd.DataFrame(cols)


def million_rows(n: int = 1_000_000, seed: int = 0) -> pd.DataFrame:
    """A million values of a continuous measurement (nearly all distinct) beside a three-valued category."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"measurement": rng.lognormal(3.0, 1.0, n), "site": rng.choice(["north", "south", "east"], n)})


#: :func:`survey_extract`'s six-valued ``race`` column and the share of rows each value holds.
RACE_SHARES = {
    "African-American": 0.51,
    "Caucasian": 0.34,
    "Hispanic": 0.09,
    "Other": 0.05,
    "Asian": 0.004,
    "Native American": 0.006,
}
#: The ten columns of :func:`survey_extract` an analyst chooses.
SURVEY_CHOSEN = ["sex", "race", "age", "priors_count", "juv_fel_count", "decile_score", "c_charge_degree",
                 "is_recid", "score_text", "marital_status"]  # fmt: skip


def survey_extract(n: int = 7000, p: int = 50, seed: int = 0) -> pd.DataFrame:
    """A criminal-justice-shaped extract: n rows × p columns, of which :data:`SURVEY_CHOSEN` are the ones an analyst
    needs -- a six-valued category with shares :data:`RACE_SHARES`, integer counts 0-40 (mostly small), a 1-10
    score, ages 18-96 -- and the rest identifiers, dates, free text and filler codes."""
    rng = np.random.default_rng(seed)
    races = list(RACE_SHARES)
    shares = np.array(list(RACE_SHARES.values()))
    cols: dict[str, object] = {
        "id": np.arange(1, n + 1),
        "name": [f"{FIRST_NAMES[i % 200]} {LAST_NAMES[(i * 7) % 60]}" for i in range(n)],
        "sex": rng.choice(["Male", "Female"], n, p=[0.81, 0.19]),
        "race": rng.choice(races, n, p=shares / shares.sum()),
        "age": np.clip(np.round(18 + rng.gamma(2.2, 8.0, n)), 18, 96).astype(int),
        "priors_count": np.clip(rng.negative_binomial(1, 0.25, n), 0, 40),
        "juv_fel_count": np.clip(rng.poisson(0.07, n), 0, 20),
        "decile_score": rng.integers(1, 11, n),
        "c_charge_degree": rng.choice(["F", "M"], n, p=[0.65, 0.35]),
        "is_recid": rng.choice([0, 1], n, p=[0.55, 0.45]),
        "score_text": rng.choice(["Low", "Medium", "High"], n, p=[0.55, 0.27, 0.18]),
        "marital_status": rng.choice(
            ["Single", "Married", "Divorced", "Separated", "Widowed"], n, p=[0.74, 0.14, 0.06, 0.04, 0.02]
        ),  # fmt: skip
        "c_offense_date": [f"2013-{m:02d}-{d:02d}" for m, d in zip(rng.integers(1, 13, n), rng.integers(1, 29, n))],
        "c_charge_desc": [" ".join(rng.choice(WORDS, 6)) for _ in range(n)],
    }
    k = 0
    while len(cols) < p:
        cols[f"filler_{k}"] = rng.integers(0, 5, n)
        k += 1
    return pd.DataFrame(cols)


def coded_adult(folder, columns: list[str], rows: int, stem: str):
    """The first ``rows`` rows of the literature's coded Adult (``adult_pgm.csv``) on ``columns``, written to
    ``folder/stem.csv`` with its ``{column: size}`` file ``folder/stem-domain.json``; returns (DataFrame, sizes)."""
    import json
    from pathlib import Path

    shared = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
    df = pd.read_csv(shared / "adult_pgm.csv", usecols=columns).iloc[:rows][columns]
    full = json.loads((shared / "adult_pgm-domain.json").read_text())
    sizes = {c: full[c] for c in columns}
    (Path(folder) / f"{stem}.csv").write_text(df.to_csv(index=False))
    (Path(folder) / f"{stem}-domain.json").write_text(json.dumps(sizes))
    return df, sizes


def seeded_release(df: pd.DataFrame, folder, epsilon: float = 1.0, seed: int = 0) -> tuple[dict, pd.DataFrame]:
    """A seeded demo release of ``df`` with nothing declared, through the command line a user runs: the release
    card and the released rows as text (empty cells as "")."""
    from dpcore.cli import main

    data, out, card = folder / "table.csv", folder / "synth.csv", folder / "c.json"
    df.to_csv(data, index=False)
    args = ["release", "--data", str(data), "--epsilon", str(epsilon), "--seed", str(seed), "--out", str(out),
            "--card", str(card), "--workspace", str(folder / "ws"), "--quiet"]  # fmt: skip
    assert main(args) == 0
    return json.loads(card.read_text()), pd.read_csv(out, dtype=str, keep_default_na=False)


def declared_release(
    df: pd.DataFrame, attributes: list[dict], folder, epsilon: float = 1.0, seed: int = 0
) -> pd.DataFrame:
    """A seeded demo release of ``df`` with ``attributes`` declared as its schema, through the command line: the
    released rows as text (empty cells as "")."""
    from dpcore.cli import main

    schema, data, out = folder / "schema.json", folder / "t.csv", folder / "o.csv"
    schema.write_text(json.dumps({"attributes": attributes}))
    df.to_csv(data, index=False)
    argv = ["release", "--data", str(data), "--schema", str(schema), "--epsilon", str(epsilon), "--seed", str(seed)]
    assert main([*argv, "--out", str(out), "--workspace", str(folder / "ws"), "--quiet"]) == 0
    return pd.read_csv(out, dtype=str, keep_default_na=False)


def refused_release(argv: list[str], folder, capsys) -> str:
    """``dpcore release`` with ``argv`` (and --out, --workspace in ``folder``) refused before anything is read or
    charged: exit 2, no traceback, no output, no ledger entry.  Returns what it printed on stderr."""
    from dpcore.cli import main

    assert main([*argv, "--out", str(folder / "o.csv"), "--workspace", str(folder / "ws"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and not (folder / "o.csv").exists()
    if (folder / "ws").exists():  # nothing charged
        from dpcore.privacy.ledger import Ledger
        from dpcore.workspace import Workspace

        assert not Ledger(Workspace(folder / "ws")).entries()
    return err


def whole_numbers_per_bin(edges, lower: int, upper: int) -> list[set[int]]:
    """The whole numbers of [lower, upper] each bin of ``edges`` holds (bins [a, b), the last closed); every one of
    them must fall in some bin."""
    e = np.asarray(edges, dtype=float)
    values = np.arange(lower, upper + 1)
    idx = np.searchsorted(e, values, side="right") - 1
    idx[values == e[-1]] = len(e) - 2
    assert (idx >= 0).all() and (idx <= len(e) - 2).all()
    return [set(values[idx == i].tolist()) for i in range(len(e) - 1)]


def shop_orders(n: int, seed: int, discounts, weights, stars_and_price: bool = False) -> pd.DataFrame:
    """A shop's orders: a category, a quantity (1-6), a discount drawn from ``discounts`` with ``weights`` (a few
    round whole numbers), optionally a 1-5 star rating and a price, and a 10% return flag."""
    rng = np.random.default_rng(seed)
    cols = {
        "category": rng.choice(["toys", "books", "garden", "food"], n),
        "quantity": np.minimum(rng.geometric(0.5, n), 6),
    }
    if stars_and_price:
        cols["stars"] = rng.choice([1, 2, 3, 4, 5], n, p=[0.05, 0.07, 0.18, 0.35, 0.35])
    cols["discount"] = rng.choice(list(discounts), n, p=list(weights))
    if stars_and_price:
        cols["price"] = rng.lognormal(3, 0.8, n).round(2)
    cols["returned"] = rng.choice(["no", "yes"], n, p=[0.9, 0.1])
    return pd.DataFrame(cols)
