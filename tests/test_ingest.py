"""Column roles: the rule on exact counts, the sensitivity of its statistics, and the private (noisy) path."""

import math
import time
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, norm

from dpcore.data import read_table
from dpcore.errors import BudgetError, DataError
from dpcore.ingest import (
    CONSTANT_REASON,
    DATE_FORMAT_SHARE,
    DATE_FORMATS,
    PRESENT_Z,
    SENSITIVITY,
    STATISTICS,
    ColumnStats,
    Role,
    column_counts,
    confirmed,
    decide_role,
    exact_stats,
    identifier_header,
    private_roles,
    propose_roles,
    role_noise,
    year_header,
)
from dpcore.privacy.samplers import Randomness

from .conftest import SHARED_DATA
from .tables import KITCHEN_SINK_ROLES, kitchen_sink, kitchen_sink_csv, latin1_csv, million_rows


def _kind(role: Role) -> str:
    if role.role == "numeric":
        return f"numeric:{'int' if role.integer else 'real'}"
    if role.role == "datetime":
        return f"datetime:{role.format}"
    return role.role


@pytest.fixture(scope="module")
def sink():
    return kitchen_sink()


def test_proposed_roles_on_every_kind_of_column(sink):
    roles = {r.name: r for r in propose_roles(sink)}
    assert {n: _kind(r) for n, r in roles.items()} == KITCHEN_SINK_ROLES
    assert all(r.source == "inferred" and r.stats is not None for r in roles.values())
    reasons = {n: r.reason for n, r in roles.items() if not r.kept}
    assert reasons["empty"].startswith("empty") and reasons["constant"].startswith("constant")
    assert reasons["notes"].startswith("free text") and reasons["name"].startswith("identifier-like")
    assert reasons["person_id"].startswith("identifier") and reasons["case_number"].startswith("identifier")
    assert roles["released"].granularity == "day" and "mixed" in roles["priors"].reason


def test_a_continuous_score_is_numeric_not_an_identifier(sink):
    st = {s.name: s for s in exact_stats(sink)}
    assert st["score"].distinct >= 0.99 * st["score"].present  # nearly one value per row ...
    assert _kind(decide_role(st["score"])) == "numeric:real"  # ... and still numeric
    renamed = replace(st["score"], name="score_id")
    assert decide_role(renamed).role == "excluded"  # an identifier header marks it


@pytest.mark.parametrize("fmt", DATE_FORMATS)
def test_every_date_format_is_recognised(fmt):
    rng = np.random.default_rng(0)
    days = pd.Timestamp("2001-01-01") + pd.to_timedelta(rng.integers(0, 9000, 300), unit="D")
    secs = pd.to_timedelta(rng.integers(0, 86_400, 300), unit="s")
    stamps = (days + secs).tz_localize("UTC") if "%z" in fmt else days + secs  # an offset needs a zone to print
    name = "year" if fmt == "%Y" else "when"  # a year alone is a date only under a header that names a year
    text = pd.Series(stamps.strftime(fmt), name=name)
    counts, fmts = column_counts(text)
    assert fmts[fmt] == 300
    role = propose_roles(pd.DataFrame({name: text}))[0]
    assert role.role == "datetime"
    # A day/month order that every cell fits equally (all days ≤ 12) reads as the first listed format;
    # with days above 12 (as here) only the true order parses every cell.
    assert role.format == fmt


def test_mixed_types_get_a_clear_role_or_reason():
    rng = np.random.default_rng(1)
    n = 1000
    few = pd.Series(np.where(rng.random(n) < 0.7, rng.integers(1, 4, n).astype(str), "unknown"))
    many = pd.Series(np.where(rng.random(n) < 0.7, rng.random(n).round(6).astype(str), [f"t{i}" for i in range(n)]))
    mostly_numbers = pd.Series(np.where(rng.random(n) < 0.97, rng.normal(size=n).round(3).astype(str), "n/a"))
    roles = {r.name: r for r in propose_roles(pd.DataFrame({"few": few, "many": many, "mostly": mostly_numbers}))}
    assert roles["few"].role == "categorical" and "mixed" in roles["few"].reason
    assert roles["many"].role == "excluded" and roles["many"].reason
    assert roles["mostly"].role == "numeric" and "missing" in roles["mostly"].reason


def test_identifier_headers():
    for name in ["id", "ID", "person_id", "caseNumber", "case_number", "record no", "uuid", "ssn"]:
        assert identifier_header(name), name
    for name in ["age", "idea", "width", "number_of_children", "priors_count", "grade", "ticket_price"]:
        assert not identifier_header(name), name
    # A reference word alone names an identifier only for the private decision (excluded when values rarely repeat).
    assert identifier_header("Ticket") and not identifier_header("Ticket", by_header_alone=True)


def test_a_named_identifier_is_excluded_even_when_the_counts_are_too_noisy_to_type_columns():
    """At σ over UNDECIDABLE_NOISE·n (Titanic's 891 rows at ε = 1: σ ≈ 97) the rule types columns by the noisy rates
    alone; a column whose header names an identifier and whose noisy distinct count is still at least
    IDENTIFIER_HEADER_RATE of its cells is excluded there too (it came back as numbers over [0, 524287]).  The
    same counts under another header stay a number, and an identifier header whose values repeat is kept."""
    noisy = dict(n=891, present=891.0, numeric=700.0, non_integer=0.0, date=0.0, mode=7.0, long_text=0.0, sigma=97.0)
    assert decide_role(ColumnStats("Ticket", distinct=650.0, **noisy)).role == "excluded"
    assert decide_role(ColumnStats("Fare", distinct=650.0, **noisy)).role == "numeric"
    assert decide_role(ColumnStats("Ticket", distinct=300.0, **noisy)).role == "numeric"


def test_titanics_ticket_codes_are_an_identifier_and_its_fares_are_not():
    """Titanic's Ticket (681 distinct on 891 rows, mostly numbers such as 113803, some 'A/5 21171') is excluded as
    an identifier by the rule's own counts; Fare (248 distinct) stays a number."""
    df = read_table(str(SHARED_DATA / "real" / "titanic.csv"))
    roles = {r.name: r for r in propose_roles(df)}
    assert roles["Ticket"].role == "excluded" and "identifier" in roles["Ticket"].reason
    assert roles["Fare"].role == "numeric"


def test_role_parse_and_confirmed():
    assert Role.parse("a", "integer") == Role("a", "numeric", integer=True)
    assert Role.parse("a", "real") == Role("a", "numeric")
    assert Role.parse("a", "date:%d/%m/%Y").format == "%d/%m/%Y"
    assert Role.parse("a", "date:%Y-%m-%d %H:%M:month").granularity == "month"
    assert Role.parse("a", {"role": "categorical"}).source == "declared"
    assert Role.parse("a", "excluded").reason == "excluded by the user"
    with pytest.raises(DataError, match="unknown role"):
        Role.parse("a", "blob")
    proposed = propose_roles(pd.DataFrame({"x": ["a", "b"] * 10, "y": range(20)}))
    assert all(r.source == "declared" and r.stats is None for r in confirmed(proposed).values())
    assert confirmed({"x": "excluded"})["x"].role == "excluded"


def _neighbour(df: pd.DataFrame, rng: np.random.Generator, pool: list) -> pd.DataFrame:
    """Replace one row by a row drawn from ``pool`` (values of every kind, including missing)."""
    out = df.copy()
    i = int(rng.integers(len(df)))
    for c in df.columns:
        out.at[i, c] = pool[int(rng.integers(len(pool)))]
    return out


def test_each_statistic_moves_by_at_most_its_sensitivity_under_replace_one():
    """Brute force over random neighbours, including the cases that move the distinct count: a value held
    once replaced by a new one, a value held twice replaced by a new one, missing <-> present."""
    rng = np.random.default_rng(7)
    pool = ["a", "b", "c", "1", "2.5", "2020-01-02", "03/04/2021 10:00", "x" * 40, None, "new1", "new2", "7"]
    for trial in range(150):
        df = pd.DataFrame({"c": [pool[int(rng.integers(len(pool)))] for _ in range(6)]}, dtype=object)
        nb = _neighbour(df, rng, pool + [f"fresh{trial}"])
        s0, f0 = column_counts(df["c"])
        s1, f1 = column_counts(nb["c"])
        for key in STATISTICS:
            if key != "date":
                assert abs(s0[key] - s1[key]) <= SENSITIVITY[key], (key, df["c"].tolist(), nb["c"].tolist())
        for fmt in DATE_FORMATS:
            assert abs(f0[fmt] - f1[fmt]) <= SENSITIVITY["date"]


def test_a_count_of_values_held_once_would_move_by_two():
    """Why the rule reads the distinct count and never a singleton count (see the module docstring)."""
    before = pd.Series(["a", "a", "b", "b"])
    after = pd.Series(["a", "z", "b", "b"])  # one row replaced: 'a' now held once, 'z' new
    held_once = lambda s: int((s.value_counts() == 1).sum())  # noqa: E731
    assert held_once(after) - held_once(before) == 2
    assert column_counts(after)[0]["distinct"] - column_counts(before)[0]["distinct"] == 1


def test_role_noise_accounts_to_rho():
    for rho, p in [(0.01, 1), (0.3, 15), (2.0, 400)]:
        sigma, eps_f = role_noise(rho, p)
        l2_squared = sum(SENSITIVITY[s] ** 2 for s in STATISTICS) * p
        # each column: a date format and a number style, each chosen by an exponential mechanism at ε_f (ε²/8-zCDP);
        # the table: the missing-value text of its numbers and of its words, two more exponential mechanisms at ε_f
        assert math.isclose(l2_squared / (2 * sigma**2) + (2 * p + 2) * eps_f**2 / 8, rho, rel_tol=1e-12)
        assert math.isclose((2 * p + 2) * eps_f**2 / 8, DATE_FORMAT_SHARE * rho, rel_tol=1e-12)
    with pytest.raises(BudgetError):
        role_noise(0.0, 3)


def test_private_roles_match_the_exact_ones_when_the_noise_is_small(sink):
    pr = private_roles(sink, 50.0, Randomness(11))  # σ ≈ 1.5 rows on 2,000: the decisions must agree
    assert pr.sigma < 2
    assert {r.name: _kind(r) for r in pr.roles} == KITCHEN_SINK_ROLES
    assert all(r.source == "dp" for r in pr.roles)


def test_private_role_counts_carry_discrete_gaussian_noise_of_the_stated_scale(sink):
    """The released counts minus the true ones: mean 0 and variance σ², within tolerances from the sample size
    (the variance of a sample variance of N normal draws is 2σ⁴/(N-1); 5 standard errors)."""
    exact = np.concatenate([s.vector() for s in exact_stats(sink)])
    diffs = []
    for seed in range(12):
        pr = private_roles(sink, 0.5, Randomness(seed))
        noisy = np.concatenate([s.vector() for s in pr.stats])
        keep = np.ones(exact.size, bool)
        keep[STATISTICS.index("date") :: len(STATISTICS)] = False  # the date count depends on the chosen format
        diffs.append((noisy - exact)[keep])
    d = np.concatenate(diffs).astype(float)
    sigma = pr.sigma
    n = d.size
    assert abs(d.mean()) < 5 * sigma / math.sqrt(n)
    assert abs(d.var(ddof=1) - sigma**2) < 5 * sigma**2 * math.sqrt(2.0 / (n - 1))
    assert np.all(d == np.round(d))  # integer noise


def test_heavy_noise_keeps_columns_rather_than_guessing_small_counts():
    st = ColumnStats(
        "c", 10_000, present=9900, numeric=3, non_integer=0, date=0, distinct=1, mode=9000, long_text=0, sigma=200.0
    )
    assert decide_role(st).role == "categorical"  # not "constant": 1 distinct value is within the noise
    st = ColumnStats(
        "c", 10_000, present=300, numeric=0, non_integer=0, date=0, distinct=5, mode=100, long_text=0, sigma=200.0
    )
    assert decide_role(st).reason.startswith("empty")  # 300 present cells are within 2σ of none


def test_a_few_valued_column_is_not_dropped_as_constant_when_its_distinct_count_falls_short_on_noise():
    """A city column of three values, 1,000 rows each, on 3,000 rows (σ = 20): its noisy distinct count fell more than
    3σ short (3 - 65 here; 0.13% of draws a column) and the column was left out as "constant" -- 6 of 2,000 seeded
    discoveries of a 3-column table lost one. Its mode (1,000 + noise) cannot fill 99% of the cells, so it stays;
    one whose mode could fill them is still read as constant, and so is one whose exact counts say so."""
    common = dict(n=3000, present=3000, numeric=0, non_integer=0, date=0, long_text=0, sigma=20.0)
    assert decide_role(ColumnStats("city", distinct=-62.0, mode=1010.0, **common)).role == "categorical"
    assert decide_role(ColumnStats("city", distinct=-62.0, mode=2990.0, **common)).reason == CONSTANT_REASON
    exact = {**common, "sigma": 0.0}
    assert decide_role(ColumnStats("city", distinct=1.0, mode=3000.0, **exact)).reason == CONSTANT_REASON


def test_noise_too_large_to_decide_keeps_numbers_as_numbers_and_the_rest_as_categories():
    """σ > 10% of n: the finer decisions are out of reach; the noisy share of numbers (dates) still decides the
    type (numbers never come back as '(other)'), everything else stays categories."""
    st = ColumnStats(
        "c", 100, present=-40, numeric=90, non_integer=3, date=0, distinct=70, mode=5, long_text=0, sigma=15.0
    )
    role = decide_role(st)
    assert role.role == "numeric" and role.integer and "heavy noise" in role.reason
    assert decide_role(replace(st, sigma=30.0)).role == "categorical"  # beyond 20% of n: noise alone
    text = replace(st, numeric=-20, present=95)
    assert decide_role(text).role == "categorical" and "too large" in decide_role(text).reason
    dates = replace(st, numeric=3, present=95, date=80, date_format="%Y-%m-%d")
    assert decide_role(dates).role == "datetime" and decide_role(dates).format == "%Y-%m-%d"


def test_csv_fixture_reads_with_renamed_headers_and_roles():
    df = read_table(kitchen_sink_csv(sep=";", encoding="latin-1"))
    assert df.attrs["renamed"] == [{"original": "grade", "name": "grade_2"}, {"original": "", "name": "column_13"}]
    roles = {r.name: r for r in propose_roles(df)}
    assert roles["grade"].role == "numeric" and roles["grade_2"].role == "categorical"
    assert roles["column_13"].reason.startswith("constant")
    latin = read_table(latin1_csv())
    assert {r.name: r.role for r in propose_roles(latin)} == {
        "ville": "categorical",
        "âge": "numeric",
        "catégorie": "categorical",
    }


def test_a_million_values_are_fast():
    df = million_rows()
    t0 = time.perf_counter()
    roles = {r.name: r for r in propose_roles(df)}
    elapsed = time.perf_counter() - t0
    assert roles["measurement"].role == "numeric" and not roles["measurement"].integer
    assert roles["site"].role == "categorical"
    assert elapsed < 20.0, elapsed  # ~1 s on an idle core; generous for a shared, loaded machine


def test_numbers_with_grouped_thousands_and_timestamps_with_a_utc_offset_keep_their_roles_and_shape():
    """Spreadsheet exports: "26,610.29" is a number (role, bounds and encoding read it alike), an ISO timestamp
    with "+0000" or "Z" is a date whose synthetic values come back in the same format."""
    from dpcore.domain import parse_numbers
    from dpcore.privacy.samplers import Randomness
    from dpcore.tabular import prepare_table

    rng_share = np.random.default_rng(9)
    s = pd.Series(["26,610.29", "1,234", "12", None, "abc", "1,23", "-1,000,000.5"], index=range(5, 12))
    got = parse_numbers(s)
    assert list(got.index) == list(s.index)
    # "1,23" is no grouping of thousands: it reads as a decimal comma (1.23), as the tables that write it mean it.
    np.testing.assert_array_equal(got.to_numpy(), [26610.29, 1234.0, 12.0, np.nan, np.nan, 1.23, -1000000.5])
    # Percent and currency signs as reports write them: the number as written (63.5, not 0.635).
    d = pd.Series(["63.5%", "12 %", "$1,234.50", "-€3", "£ 7", ".5", "1.2.3", "%", "$", "5%%", "12%3"])
    np.testing.assert_array_equal(parse_numbers(d).to_numpy(), [63.5, 12.0, 1234.5, -3.0, 7.0, 0.5] + [np.nan] * 5)
    shares = pd.DataFrame({"turnout": [f"{v:.1f}%" for v in rng_share.uniform(20, 90, 400)]})
    role = {r.name: r for r in propose_roles(shares)}["turnout"]
    assert role.role == "numeric" and not role.integer
    rng = np.random.default_rng(4)
    n = 3000
    stamps = pd.Timestamp("2019-01-01T00:00:00Z") + pd.to_timedelta(rng.integers(0, 10**8, n), unit="s")
    df = pd.DataFrame(
        {
            "income": [f"{v:,.2f}" for v in rng.lognormal(10, 1, n)],
            "seen": stamps.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "utc": stamps.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    )
    proposed = {r.name: r for r in propose_roles(df)}
    assert proposed["income"].role == "numeric" and not proposed["income"].integer
    assert (proposed["seen"].role, proposed["seen"].format) == ("datetime", "%Y-%m-%dT%H:%M:%S%z")
    assert (proposed["utc"].role, proposed["utc"].format) == ("datetime", "%Y-%m-%dT%H:%M:%SZ")
    roles = {c: proposed[c].to_dict() for c in df.columns}
    prep = prepare_table(df, epsilon=50.0, delta=1e-9, noise=Randomness(2), roles=roles)
    lo, hi = prep.domain["income"].lower, prep.domain["income"].upper
    assert 0 <= lo < hi < 10_000_000  # a wide positive range reaches down to 0
    out = prep.to_table(np.asarray(prep.dataset.codes[:200]), np.random.default_rng(0))
    assert out["seen"].dropna().str.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+0000$").all()
    assert out["utc"].dropna().str.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$").all()
    # Numbers come back with the decimals their style writes (",.2", as the file), never out of their bin; under a
    # style without decimals, rounded to three significant digits of the narrowest bin.
    attr = prep.domain["income"]
    codes = np.asarray(prep.dataset.codes[:200, prep.domain.names.index("income")])
    assert proposed["income"].style == ",.2" and out["income"].dropna().str.fullmatch(r"[\d,]+\.\d\d").all()
    assert out["income"].dropna().str.contains(",").any()  # written as the file
    vals = parse_numbers(out["income"].dropna()).to_numpy(dtype=float)
    assert np.allclose(vals, np.round(vals, 2))
    assert np.array_equal(attr.encode(pd.Series(vals))[0], codes[~out["income"].isna().to_numpy()])
    width = float(np.min(np.diff(attr.edges)))
    decimals = max(0, 2 - int(np.floor(np.log10(width))))
    drawn = replace(attr, style=",").decode(codes, "values", np.random.default_rng(0))
    vals = parse_numbers(drawn.dropna()).to_numpy(dtype=float)
    assert np.allclose(vals, np.round(vals, decimals))
    assert np.array_equal(attr.encode(pd.Series(vals))[0], codes[~drawn.isna().to_numpy()])


def test_codes_with_leading_zeros_stay_categories_as_written():
    """ZIP codes, FIPS codes, "007": digits with a leading zero are codes; read as numbers they would lose the
    zero on the way out."""
    rng = np.random.default_rng(5)
    zips = [f"{z:05d}" for z in rng.choice([2134, 8390, 10001, 60614, 94110], 2000)]
    role = propose_roles(pd.DataFrame({"zip": zips, "x": rng.integers(0, 100, 2000)}))[0]
    assert role.role == "categorical", role
    counts, _ = column_counts(pd.Series(zips))
    assert counts["numeric"] == sum(not z.startswith("0") for z in zips)
    plain = propose_roles(pd.DataFrame({"n": [str(v) for v in rng.integers(0, 500, 2000)]}))[0]
    assert plain.role == "numeric"  # a lone "0" is a number


def test_a_proposal_one_changed_row_could_flip_is_marked():
    """Issue 24, finding 3: confirming a proposal publishes it; one that sits on a cut of the rule (99% of cells
    hold one value: constant; one row fewer and it is not) is marked, a safe one is not."""
    from dpcore.ingest import FRAGILE_NOTE, one_row_could_flip

    df = pd.DataFrame(
        {
            "flag": ["a"] * 990 + ["b"] * 10,  # exactly at the 99% cut: 989 would not be constant
            "safe": ["u"] * 999 + ["v"],  # 999 or 1000 of 1000: constant either way
            "sex": ["F"] * 500 + ["M"] * 500,  # two values held by 500 rows: one row cannot make it constant
            "codes": [str(i % 2) for i in range(999)] + ["2"],  # two whole-number values plus one held once
        }
    )
    roles = {r.name: r for r in propose_roles(df)}
    assert roles["flag"].role == "excluded" and roles["flag"].reason.startswith(FRAGILE_NOTE)
    assert roles["safe"].role == "excluded" and not roles["safe"].reason.startswith(FRAGILE_NOTE)
    assert roles["sex"].role == "categorical" and not roles["sex"].reason.startswith(FRAGILE_NOTE)
    # 3 distinct whole numbers: numeric; losing the value held once makes it a two-valued category
    assert roles["codes"].role == "numeric" and roles["codes"].reason.startswith(FRAGILE_NOTE)
    # the check agrees with brute force on the neighbour that flips it
    flipped = df.copy()
    flipped.loc[999, "codes"] = "0"
    assert propose_roles(flipped[["codes"]])[0].role == "categorical"
    # the distinct count falls only where some value is held once: "codes" is fragile because one is, and would not
    # be if its rarest value were held twice; unknown, the check assumes the worst
    st = exact_stats(df, ["codes"])[0]
    assert one_row_could_flip(st, rarest=1) and not one_row_could_flip(st, rarest=2)
    assert one_row_could_flip(st, rarest=None) is True
    # two values held by 500 rows each: one row can make it neither constant nor anything else
    st = exact_stats(df, ["sex"])[0]
    assert not one_row_could_flip(st, rarest=500) and not one_row_could_flip(st, rarest=None)


def test_dates_with_english_month_names_are_dates_as_written():
    """Found on a statistics package's monthly series ("Jan-1-1995", days not zero-padded): read as free text, the
    column was dropped.  Month names in either case, written the ways spreadsheets and packages write them, are
    dates in their own format."""
    raw = b"DATE,value\nJan-1-1995,66.19\nFeb-1-1995,65.15\nmar-1-1995,70.2\nDEC-31-1996,71.0\n"
    df = read_table(raw, filename="series.csv")
    role = propose_roles(df)[0]
    assert (role.role, role.format) == ("datetime", "%b-%d-%Y")
    for cells, fmt in (
        (["01-Jan-2020", "15-Feb-2021"], "%d-%b-%Y"),
        (["Jan 5, 2020", "Dec 25, 2019"], "%b %d, %Y"),
        (["1 January 2020", "25 December 2019"], "%d %B %Y"),
        (["January 1, 2020", "September 3, 2021"], "%B %d, %Y"),
    ):
        _, fmts = column_counts(pd.Series(cells))
        assert fmts[fmt] == 2 and max(fmts, key=fmts.get) == fmt
    # A word that is not a month does not parse, whatever its shape.
    _, fmts = column_counts(pd.Series(["Foo-1-1995", "Bar-2-1996"]))
    assert not any(fmts.values())


def _numbers(n, numeric, non_integer, mode, distinct, sigma=0.0):
    return ColumnStats("c", n, present=numeric, numeric=numeric, non_integer=non_integer, date=0, distinct=distinct,
                       mode=mode, long_text=0, sigma=sigma)  # fmt: skip


def test_a_column_of_mostly_zeros_with_decimals_is_real_and_flags_stay_whole():
    """A discount that is 0 on 80% of the rows and 0.05-0.2 otherwise has 20% fractions -- under the 25% that makes
    a column real -- but every number besides its most frequent value is one: real (before: whole, and its
    fractions came back as 0 or 1).  Exact counts and noisy ones (σ = 4% and 6% of the rows: the rule asks the
    fractions to clear 2σ, and at least σ, so at 7% this discount stays whole).  A 0/1 flag with 90% zeros, a
    count, and ages with a few halves stay whole whatever the noise within 2σ (a flag turns real only when noise
    alone lifts its fractions by 3σ: probability 0.13%)."""
    from dpcore.ingest import whole_numbers

    n = 3000
    discount = dict(numeric=n, non_integer=600, mode=2400, distinct=5)
    assert not whole_numbers(_numbers(n, **discount))
    for sigma in (0.04 * n, 0.06 * n):
        assert not whole_numbers(_numbers(n, **discount, sigma=sigma))
        assert decide_role(_numbers(n, **discount, sigma=sigma)).integer is False
    for sigma in (0.0, 0.04 * n, 0.07 * n):
        for noise in (-2.0, 0.0, 2.0):  # the fractions' noisy count within 2σ of the truth
            flag = _numbers(n, n, max(noise * sigma, 0.0), 2700, 2, sigma)
            count = _numbers(n, n, max(noise * sigma, 0.0), 900, 12, sigma)
            ages = _numbers(n, n, 90 + noise * sigma, 100, 70, sigma)  # 3% halves (estimated ages)
            assert whole_numbers(flag) and whole_numbers(count) and whole_numbers(ages), (sigma, noise)


def test_under_heavy_noise_whole_numbers_stay_whole():
    """σ ≈ 10.6% of 1,000 rows (14 columns at ε = 1): a 0-2 column's noisy fraction count, truly 0, passed the
    quarter of its noisy numbers in ~1% of draws (2.3σ), and the column came back as reals (1.256, 1.007).  Both
    rules now ask (FRACTION_Z + 1)·σ = 3σ: over 20,000 draws of the three counts' noise, at most binom.ppf(1 - 1e-4)
    of the Gaussian tail beyond 3σ turn it real; a real column (every number a fraction) stays real in every draw."""
    from dpcore.ingest import whole_numbers

    rng = np.random.default_rng(7)
    n, sigma, draws = 1000, 106.0, 20_000
    noise = rng.normal(0.0, sigma, size=(draws, 3))
    real = sum(not whole_numbers(_numbers(n, n + a, max(b, 0.0), 481 + c, 3, sigma)) for a, b, c in noise)
    assert real <= binom.ppf(1 - 1e-4, draws, norm.sf(3.0)), real
    assert not any(whole_numbers(_numbers(n, n + a, n + b, 20 + c, 900, sigma)) for a, b, c in noise[:2000])


def test_private_roles_type_a_zero_inflated_discount_as_real():
    """3,000 rows, three columns, ρ such that σ = 4% of the rows (a 7-column table's at ε = 1): the discount column
    (fractions on 20% of the rows, 2σ = 8%) is typed real in at least binom.ppf(1e-4, 10, p) of 10 draws, p the
    chance that its noisy counts clear the rule (the fraction count, 600, must clear 2σ plus the larger of σ and a
    quarter of the noisy numbers beside the noisy mode: p ≈ 0.9, computed below from the three counts' normal
    noise) -- and a 0/1 flag never loses whole numbers."""
    rng = np.random.default_rng(0)
    n = 3000
    df = pd.DataFrame({
        "discount": np.where(rng.random(n) < 0.8, 0.0, rng.choice([0.05, 0.1, 0.15, 0.2], n)),
        "returned": rng.choice([0, 1], n, p=[0.9, 0.1]),
        "region": rng.choice(["N", "S", "E"], n),
    })  # fmt: skip
    real = 0
    for seed in range(10):
        roles = {r.name: r for r in private_roles(df, 7 * 3 / (2 * (0.04 * n) ** 2), Randomness(seed)).roles}
        real += roles["discount"].role == "numeric" and not roles["discount"].integer
        assert roles["returned"].role != "numeric" or roles["returned"].integer
    draws = np.random.default_rng(1).normal(size=(3, 200_000)) * roles["discount"].stats["noise_sigma"]
    counts = df["discount"].value_counts()
    non_integer, mode = float((df["discount"] % 1 != 0).sum()) + draws[0], float(counts.max()) + draws[1]
    numeric = float(n) + draws[2]
    sigma = roles["discount"].stats["noise_sigma"]
    rest = np.maximum(numeric - mode, 0.0)
    first = non_integer >= np.maximum(0.25 * numeric, 3 * sigma)
    p = float(np.mean(first | (non_integer - 2 * sigma >= np.maximum(0.25 * rest, sigma))))
    assert real >= binom.ppf(1e-4, 10, p), (real, p)


# ---------------------------------------------------------------------------- years
def test_a_header_names_a_year_by_its_words_not_by_years_or_yearly():
    named = ["year", "Year", "visit_year", "YearBuilt", "birthyear", "yob", "model_yr", "Yr_Sold", "yearofbirth"]
    assert all(year_header(h) for h in named)
    assert not any(year_header(h) for h in ["years", "years_edu", "yearsAtCompany", "yearly_income", "n_years", "day"])


def test_whole_numbers_under_a_year_header_are_years_and_come_back_as_years():
    """A visit year (2019-2023, ints), a year built with gaps (floats: 1981.0, NaN) and the same as text are dates by
    year (format %Y): their bounds come from one bin per year, and they decode to '2021', not to a draw from the
    power-of-two range [1024, 2047].  The same numbers under another header, a 'year' column holding 1-5 (a school
    year) and years 1700-2008 (mostly outside 1900-2099, the dates' grid) stay numbers."""
    rng = np.random.default_rng(0)
    n = 400
    built = rng.integers(1950, 2021, n).astype(float)
    built[rng.random(n) < 0.1] = np.nan
    df = pd.DataFrame({
        "visit_year": rng.integers(2019, 2024, n),
        "YearBuilt": built,
        "year_text": pd.Series(built).map(lambda v: "" if np.isnan(v) else f"{v:.0f}"),
        "amount": rng.integers(2019, 2024, n),
        "year": rng.integers(1, 6, n),
        "sunspot_year": rng.integers(1700, 2009, n),
    })  # fmt: skip
    roles = {r.name: r for r in propose_roles(df)}
    for name in ("visit_year", "YearBuilt", "year_text"):
        assert (roles[name].role, roles[name].format, roles[name].granularity) == ("datetime", "%Y", "year"), name
    assert roles["amount"].role == roles["year"].role == roles["sunspot_year"].role == "numeric"
    from dpcore.domain import Attribute

    attr = Attribute(
        "YearBuilt", "datetime", lower="1950", upper="2020", granularity="year", format="%Y", missing=True, bins=71
    )
    codes, _ = attr.encode(df["YearBuilt"])
    back = attr.decode(codes)
    assert back[df["YearBuilt"].notna()].tolist() == [f"{v:.0f}" for v in built[~np.isnan(built)]]
    assert back[df["YearBuilt"].isna()].isna().all()


def test_dates_written_as_eight_digits_are_dates_and_come_back_in_that_shape():
    """Weekly dates 1958-2001 written 19580329 (as text, and as integers the way a Parquet file holds them) are
    dates in the format %Y%m%d -- read as numbers, their power-of-two range [2^24, 2^25) came back with 20131245
    and 42% of the rows outside the real dates.  Eight-digit numbers that are not dates (amounts, an identifier-
    like code whose middle digits are not months) stay numbers."""
    rng = np.random.default_rng(2)
    n = 500
    days = pd.Timestamp("1958-03-29") + pd.to_timedelta(7 * rng.integers(0, 2280, n), unit="D")
    compact = days.strftime("%Y%m%d")
    df = pd.DataFrame({
        "date": compact,
        "date_int": compact.astype(np.int64),
        "amount": rng.integers(10_000_000, 99_999_999, n),
        "code": 20_000_000 + 10_000 * rng.integers(13, 99, n) + rng.integers(0, 9_999, n),  # "months" 13-98
    })  # fmt: skip
    roles = {r.name: r for r in propose_roles(df)}
    for name in ("date", "date_int"):
        assert (roles[name].role, roles[name].format, roles[name].granularity) == ("datetime", "%Y%m%d", "day"), name
    assert roles["amount"].role == roles["code"].role == "numeric"
    from dpcore.domain import Attribute, Domain
    from dpcore.output import to_table

    attr = Attribute("date", "datetime", lower="1958-03-29", upper="2001-12-29", granularity="day", format="%Y%m%d")
    codes = attr.encode(df["date"])[0]
    back = to_table(Domain([attr]), codes[:, None], np.random.default_rng(0))["date"]  # values drawn in their bins
    assert back.str.fullmatch(r"(19|20)\d{6}").all()
    assert pd.to_datetime(back, format="%Y%m%d").between("1958-03-29", "2001-12-29").all()  # the bounds


def _years_table(year: str, n: int, noise_share: float, seed: int) -> tuple[pd.DataFrame, float]:
    """A column of birth years (1925-2006) named ``year``, a 1-10 score and a group, and the roles' ρ at which σ is
    ``noise_share`` of the rows (seven statistics of sensitivity 1 for each of the three columns)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({year: np.clip(rng.normal(1970, 15, n).round(), 1925, 2006).astype(int),
                       "score": rng.integers(1, 11, n), "group": rng.choice(["a", "b"], n)})  # fmt: skip
    return df, 7 * 3 / (2 * (noise_share * n) ** 2) / (1 - DATE_FORMAT_SHARE)


def test_private_roles_read_a_year_column_as_years():
    """3,000 rows at σ = 4% of the rows: the noisy count of cells holding a year (all of them) is possibly 95% of the
    present cells unless the noise takes it below by over 2σ, and the format choice picks %Y (the only format with a
    count) unless the exponential mechanism at ε_f picks a format of count 0: each has probability
    exp(-ε_f·n/2) relative weight -- nil here.  So every one of 10 draws reads it as years."""
    n = 3000
    df, rho = _years_table("birth_year", n, 0.04, seed=1)
    for seed in range(10):
        roles = {r.name: r for r in private_roles(df, rho, Randomness(seed)).roles}
        assert (roles["birth_year"].role, roles["birth_year"].format) == ("datetime", "%Y"), seed
        assert roles["score"].role == "numeric"


def test_private_roles_read_a_year_column_as_years_under_heavy_noise():
    """1,000 rows at σ = 12% of the rows (over UNDECIDABLE_NOISE: types are read from the share of numbers alone, at
    half the cells): a year column's numbers were typed plain numbers there and binned over [1024, 2047], coming
    back as years like 1127 (a six-column table at ε = 1: σ ≈ 101 rows). Under a header that names a year, the same
    share read as years makes it a date column by year, as under lighter noise; a score with the same share of
    numbers stays a number. The noisy counts are ~1,000 ± 120 against half the present cells, so each passes unless
    the noise takes it below by 4σ; the format choice picks %Y, the only format with a count, in every draw (each
    other format's relative weight is exp(-ε_f·n/2)). 10 draws out of 10."""
    n = 1000
    df, rho = _years_table("yob", n, 0.12, seed=4)
    for seed in range(10):
        released = private_roles(df, rho, Randomness(seed))
        assert 0.1 * n < released.sigma <= 0.2 * n
        roles = {r.name: r for r in released.roles}
        assert (roles["yob"].role, roles["yob"].format) == ("datetime", "%Y"), seed
        assert "heavy noise" in roles["yob"].reason and "dates" in roles["yob"].reason
        assert roles["score"].role == "numeric"


def test_private_roles_read_eight_digit_dates_as_dates():
    """As the years above: 3,000 rows at σ = 4% of the rows, every cell of ``date`` an eight-digit date, and the
    exponential mechanism's other formats count 0 cells; 10 draws out of 10 read it as dates in %Y%m%d, while a
    column of eight-digit amounts stays numeric."""
    rng = np.random.default_rng(3)
    n = 3000
    days = pd.Timestamp("1990-01-01") + pd.to_timedelta(rng.integers(0, 9000, n), unit="D")
    df = pd.DataFrame({"date": days.strftime("%Y%m%d").astype(np.int64), "amount": rng.integers(10**7, 10**8, n),
                       "group": rng.choice(["a", "b"], n)})  # fmt: skip
    rho = 7 * 3 / (2 * (0.04 * n) ** 2) / (1 - DATE_FORMAT_SHARE)
    for seed in range(10):
        roles = {r.name: r for r in private_roles(df, rho, Randomness(seed)).roles}
        assert (roles["date"].role, roles["date"].format) == ("datetime", "%Y%m%d"), seed
        assert roles["amount"].role == "numeric"


def test_a_column_present_on_a_fifth_of_the_rows_is_not_dropped_as_empty_on_noise():
    """A smoker's cigarettes a day, present on 410 of 2,000 rows, at σ ≈ 115 (seven columns at ε = 1): a column
    counted as present only where its noisy count reached 3σ (345), so it was dropped as "nearly every cell is
    missing" whenever the noise took 65 off -- 28% of draws. It is now present where the count reaches PRESENT_Z·σ
    (2σ: a column with no cells gets there in 2.3% of draws, and is left out later when nothing stands out in it),
    and so is a type's count; under it the reason names the noise and how to keep the column. A count under 1% of
    the rows still reads as nearly empty."""
    common = dict(n=2000, non_integer=0.0, distinct=40.0, mode=40.0, long_text=0.0, sigma=115.0)
    assert PRESENT_Z == 2.0
    cigs = ColumnStats("cigs_per_day", present=300.0, numeric=290.0, date=0.0, **common)
    assert decide_role(cigs).role == "numeric"
    faint = ColumnStats("cigs_per_day", present=200.0, numeric=210.0, date=0.0, **common)
    role = decide_role(faint)
    assert role.role == "excluded" and "σ ≈ 115" in role.reason and "confirm its role" in role.reason
    blank = ColumnStats("notes", present=12.0, numeric=0.0, date=0.0, **{**common, "sigma": 0.0})
    assert decide_role(blank).reason == "empty: nearly every cell is missing"
    rng = np.random.default_rng(8)
    kept = sum(
        decide_role(replace(cigs, present=410.0 + z, numeric=410.0 + y)).role == "numeric"
        for z, y in rng.normal(0, 115.0, (2000, 2))
    )
    # P(present and numeric both reach 230 | 410) = Φ(180/115)² ≈ 0.885 (3σ: Φ(65/115)² ≈ 0.51); 2,000 draws
    assert abs(kept / 2000 - norm.cdf(180 / 115) ** 2) < 4 * math.sqrt(0.885 * 0.115 / 2000)


def test_a_sparse_text_column_is_not_typed_a_number_on_noise():
    """A "yes"-or-blank checkbox on 30% of 2,000 rows at σ = 95 (5 columns at ε = 1): its noisy counts (present 480,
    numbers -45, dates -33) read through the 3σ margin made it "possibly" 95% numbers -- 0 + 285 against 95% of
    480 - 285 -- so it was typed a number and left out when no range of numbers stood out.  A type now needs its
    cells clearly present as well; a sparse column that clearly holds numbers (600 of them) is still a number, and
    with exact counts nothing changes."""
    common = dict(n=2000, non_integer=0.0, distinct=3.0, mode=640.0, long_text=0.0, sigma=95.0)
    checkbox = ColumnStats("insured", present=480.0, numeric=-45.0, date=-33.0, date_format="%Y-%m-%d", **common)
    assert decide_role(checkbox).role == "categorical"
    dose = ColumnStats("dose", present=600.0, numeric=610.0, date=0.0, **common)
    assert decide_role(dose).role == "numeric"
    visit = ColumnStats("visit", present=600.0, numeric=0.0, date=590.0, date_format="%Y-%m-%d", **common)
    assert decide_role(visit).role == "datetime"
    exact = ColumnStats("dose", present=30.0, numeric=30.0, date=0.0, **{**common, "sigma": 0.0, "mode": 3.0})
    assert decide_role(exact).role == "numeric"


def test_two_digit_years_are_dates_released_in_their_shape(tmp_path):
    """Spreadsheets' short dates as exported ("8/10/22", the US default, not zero-padded; "10/08/22"; "05-Mar-21"
    from databases) were categories with one value a day, nearly all '(other)' in a release; they are dates, and
    come back written with two-digit years.  Version numbers ("3.10.4") are not read as dates."""
    from .tables import seeded_release

    rng = np.random.default_rng(5)
    n = 2000
    stamps = pd.Timestamp("2021-01-01") + pd.to_timedelta(rng.integers(0, 700, n), unit="D")
    df = pd.DataFrame({
        "us": [f"{t.month}/{t.day}/{t:%y}" for t in stamps],
        "eu": stamps.strftime("%d/%m/%y"),
        "db": stamps.strftime("%d-%b-%y"),
        "version": [f"{a}.{b}.{c}" for a, b, c in rng.integers(1, 12, (n, 3))],
        "kind": rng.choice(["a", "b"], n),
    })  # fmt: skip
    roles = {r.name: r for r in propose_roles(df)}
    assert {c: roles[c].format for c in ("us", "eu", "db")} == {"us": "%m/%d/%y", "eu": "%d/%m/%y", "db": "%d-%b-%y"}
    assert roles["version"].role != "datetime"
    card, rows = seeded_release(df[["us", "eu", "db", "kind"]], tmp_path, epsilon=1.0, seed=0)
    assert {a["name"]: a["kind"] for a in card["data"]["schema"]} == {
        "us": "datetime", "eu": "datetime", "db": "datetime", "kind": "categorical"}  # fmt: skip
    assert rows["us"].str.fullmatch(r"\d\d/\d\d/2[12]").all()
    assert rows["db"].str.fullmatch(r"\d\d-[A-Z][a-z]{2}-2[12]").all()


def test_timestamps_with_fractions_am_pm_times_and_named_months_are_dates_released_in_their_shape(tmp_path):
    """JavaScript's and databases' timestamps ("2024-09-01T20:07:15.730Z", "2024-01-05 12:30:45.123456"), US
    times with AM/PM ("09/01/2024 08:07 PM") and a month named before its year ("Sep 2024") were left out as free
    text or kept as month labels; they are dates (the last by month), and come back written the same way."""
    from .tables import seeded_release

    rng = np.random.default_rng(4)
    n = 2000
    stamps = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 365 * 86_400, n), unit="s")
    ms = rng.integers(0, 1000, n)
    df = pd.DataFrame({
        "created": [t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{m:03d}Z" for t, m in zip(stamps, ms)],
        "logged": [t.strftime("%Y-%m-%d %H:%M:%S.") + f"{m:06d}" for t, m in zip(stamps, ms)],
        "opened": stamps.strftime("%m/%d/%Y %I:%M %p"),
        "period": stamps.strftime("%b %Y"),
        "kind": rng.choice(["a", "b"], n),
    })  # fmt: skip
    roles = {r.name: r for r in propose_roles(df)}
    assert {c: roles[c].format for c in ("created", "logged", "opened", "period")} == {
        "created": "%Y-%m-%dT%H:%M:%S.%fZ", "logged": "%Y-%m-%d %H:%M:%S.%f", "opened": "%m/%d/%Y %I:%M %p",
        "period": "%b %Y"}  # fmt: skip
    assert roles["period"].granularity == "month" and roles["created"].granularity == "day"
    card, rows = seeded_release(df, tmp_path, epsilon=1.0, seed=0)
    kinds = {a["name"]: a["kind"] for a in card["data"]["schema"]}
    assert kinds == {"created": "datetime", "logged": "datetime", "opened": "datetime", "period": "datetime",
                     "kind": "categorical"}  # fmt: skip
    assert rows["created"].str.fullmatch(r"2\d{3}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z").all()
    assert rows["opened"].str.fullmatch(r"\d\d/\d\d/\d{4} \d\d:\d\d [AP]M").all()
    assert rows["period"].str.fullmatch(r"[A-Z][a-z]{2} 2\d{3}").all()
