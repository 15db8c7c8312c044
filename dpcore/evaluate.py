"""The internal fidelity report: how close a synthetic table is to the real one, beyond the workload.

Everything here reads the private table, so nothing here is differentially private: the report is for
the data owner's eyes (INTERNAL), is labelled so in every output, and never joins a release card.

What it measures (:func:`evaluate`):

* ``one_way_tvd`` / ``two_way_tvd`` / ``three_way_tvd`` -- total-variation distance
  TVD(p, q) = ½ Σ |p(c) - q(c)| between the real and synthetic distributions of every column,
  every column pair (mean, max, the worst pairs) and a seeded sample of column triples.  Cells are
  the columns' *evaluation codes*: a schema's categories and bin edges when a schema is given (a date
  attribute's bins too, its cells read in the schema's format), otherwise each categorical value and
  10 quantile bins of the real data for numeric (and date) columns; missing is a cell of its own, and
  synthetic values the real column never had share one "unseen" cell.
* ``out_of_range`` -- per column, the share of synthetic rows holding a value the real column could not: outside
  the real column's [min, max] for a number or date (the quantile bins fold such rows into the end bins, so the
  TVDs do not see a 1-10 rating's 14s or a visit year of 1234), a value it never holds for a category.
* ``summaries`` -- per number or date column (one compared on bins), the real and synthetic mean, standard
  deviation, median and 1st / 10th / 90th / 99th percentiles; the means' difference in real standard deviations
  (``mean_diff_sd``), the medians' in real interquartile ranges, the ratio of the standard deviations, and the share
  of real rows beyond what the release holds (below its least or above its greatest value: a clipped tail, which
  the bins' TVD folds into the end bins).  The TVDs compare shares of bins; a heavy tail clipped or values pulled to
  a bin's middle move a mean without moving a bin.
* ``association_diff`` -- |assoc(real) - assoc(synthetic)| per pair: Cramér's V for pairs of
  categorical columns (and, on the bins, for mixed pairs), Spearman's rank correlation for pairs of
  numeric columns.  Plain V is biased upward in a finite table, the more so the more categories a column
  spreads over, so a table whose marginals are flatter than the real ones scores closer to a real association
  it does not have; ``mean_bias_corrected`` is the mean with Bergsma's bias-corrected V on both sides.
* ``ml_efficacy`` -- for a target column: train on synthetic, test on real rows the synthesizer never
  saw, against train on real (scikit-learn's logistic regression and histogram gradient boosting;
  accuracy and ROC AUC).
* ``copy_rate`` -- the share of synthetic rows identical to a real training row, next to the share
  of real holdout rows identical to one: a sanity signal, not a privacy measure.

Without a holdout, the ML and copy figures use a seeded split of the real table; the synthesizer saw
the "held-out" part, so those figures are flagged optimistic.

A release may leave columns out (a column its private schema could not keep, or one the user excluded): the
report then compares the columns the two tables share and names the real columns the synthetic table left out
(``columns_left_out``); a left-out target skips the ML figures with that reason.  A synthetic table with a
column the real one lacks, or with no column in common, is refused.

Every count is vectorised (one mixed-radix cell key per column pair and one ``np.bincount`` per block
of pairs); Python loops run over columns and blocks, never over rows.  On wide tables the pairs are
capped by the work they cost (rows x pairs), with the sample and its seed stated in the report.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .domain import LEADING_ZERO, NONE_TEXT, none_cells, parse_dates, parse_numbers, written_style
from .errors import DataError

LABEL = (
    "INTERNAL evaluation: computed on the private data; not differentially private; "
    "for the data owner only, never for publication or the release card"
)
COPY_RATE_LABEL = "a sanity signal, not a privacy measure"
#: Quantile bins for numeric columns when no schema gives edges.
DEFAULT_BINS = 10
#: A numeric-typed column with at most this many distinct values is compared as categories.
NUMERIC_AS_CATEGORICAL = 20
#: Pairwise work budget: (real rows + synthetic rows) x evaluated pairs.  Above it the pairs are a
#: seeded sample (Adult's 91 pairs at 2 x 45k rows use 8.2e6).
PAIR_WORK_BUDGET = 6e7
#: Never fewer pairs than this when sampling (small tables are never sampled anyway).
MIN_SAMPLED_PAIRS = 500
#: Triples sampled for the 3-way TVD.
DEFAULT_TRIPLES = 100
#: Above this many columns the per-pair list and the association matrices are left out of the report
#: (the worst pairs are always in).
MAX_MATRIX_COLUMNS = 60
#: Cells of one block of pairs counted at once (bounds memory: two float arrays of this length).
BLOCK_CELLS = 4_000_000
#: Rows used to fit each ML model (a seeded sample above it; keeps the report's time bounded).
ML_MAX_TRAIN_ROWS = 50_000
#: The split of REAL used as a stand-in holdout when none is given.
SPLIT_HOLDOUT_FRACTION = 0.3

_INTERVAL = re.compile(r"^\s*[\[(]\s*([-+0-9.eEinfINF]+)\s*,\s*([-+0-9.eEinfINF]+)\s*[\])]\s*$")


# ------------------------------------------------------------------ column coding
@dataclass
class ColumnCoding:
    """How one column is turned into evaluation codes 0..size-1."""

    name: str
    kind: str  # "categorical" or "numeric" (dates are numeric: nanoseconds since the epoch)
    labels: list[str]  # one per code
    edges: np.ndarray | None = None  # numeric: bin edges (outer ones open: values beyond fall in the end bins)
    is_date: bool = False
    date_format: str | None = None  # a schema's date attribute: the strftime format its cells are read with
    #: numeric: how both tables' cells are read (the schema's style, else the real column's; None: each its own)
    style: str | None = None
    unseen_code: int | None = None  # categorical: synthetic values the real column never had
    missing_code: int | None = None
    #: numeric: texts that are not numbers compared as values of their own, after the bins ("<0.5": the schema's
    #: :attr:`~dpcore.domain.Attribute.texts`, else the real column's frequent ones, :func:`_frequent_texts`)
    texts: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        return len(self.labels)


def _canonical_text(values: pd.Series) -> pd.Series:
    """Text keys for matching categories across tables: 1.0 -> '1', stripped strings; missing -> None.  Numbers
    written as text match by value, read by the one parser every other step uses (a file that writes 0.0 and a
    release that writes 0 hold one value; read as two, such a column's TVD came out 1.0); a code with a leading
    zero (007) stays as written.

    Only the distinct values are canonicalised (a column of a million rows has few of them)."""
    codes, uniques = pd.factorize(values, sort=False)
    text: list[str | None] = [_canonical_value(v) for v in uniques]
    at = np.array([i for i, v in enumerate(uniques) if isinstance(v, str)], dtype=np.int64)
    if at.size:
        written = pd.Series([text[i] for i in at], dtype=object)
        held = np.bincount(codes[codes >= 0], minlength=len(uniques))[at]
        nums = parse_numbers(written, _style_of(written, held)).to_numpy(dtype=float)
        ok = np.isfinite(nums) & ~written.str.match(LEADING_ZERO.pattern).to_numpy(dtype=bool)
        for i, v in zip(at[ok], nums[ok]):
            text[i] = _canonical_value(float(v))
    text.append(None)  # code -1 (missing) picks the last
    return pd.Series(np.array(text, dtype=object)[codes], index=values.index, dtype=object)


#: How many of a column's most frequent texts say how it writes its numbers (:func:`_reading_style`).
STYLE_SAMPLE = 2000


def _reading_style(s: pd.Series) -> str:
    """How a column of text writes its numbers, read off its own cells like every evaluation figure (not private):
    the style most of its STYLE_SAMPLE most frequent texts are written in, so a table written with a decimal
    comma ("1.234,5") reads as it was meant, and its release (written in the style it was released with) too."""
    if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s) or not len(s):
        return ""
    counts = s[_present(s)].astype(str).value_counts()
    return _style_of(counts.index, counts.to_numpy())


def _style_of(texts, counts) -> str:
    """:func:`~dpcore.domain.written_style` of the STYLE_SAMPLE most frequent of a column's distinct texts."""
    top = np.argsort(-np.asarray(counts), kind="stable")[:STYLE_SAMPLE]
    return written_style([texts[i] for i in top], np.asarray(counts)[top])


def _canonical_value(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return str(int(f)) if f.is_integer() and abs(f) < 2**53 else str(f)
    if isinstance(v, str):
        return v.strip()
    return str(v)


def _parse_dates(s: pd.Series) -> pd.Series:
    if pd.api.types.is_datetime64_any_dtype(s):
        out = s
    else:
        out = pd.to_datetime(s, errors="coerce", format="mixed")
    if getattr(out.dt, "tz", None) is not None:
        out = out.dt.tz_convert("UTC").dt.tz_localize(None)
    return out


#: Nanoseconds per day: a schema's date edges are days since 1970-01-01, the report's dates nanoseconds.
NS_PER_DAY = 86_400 * 10**9


def _date_numbers(s: pd.Series, fmt: str | None = None) -> np.ndarray:
    if fmt is not None:  # the schema's format: 01/02/2012 is read as the schema says, never guessed
        return parse_dates(s, fmt) * NS_PER_DAY
    d = _parse_dates(s)
    vals = d.to_numpy(dtype="datetime64[ns]").astype(np.int64).astype(float)
    vals[d.isna().to_numpy()] = np.nan
    return vals


def _present(s: pd.Series) -> np.ndarray:
    """The cells of a column read as numbers or dates that are not missing (``None`` is missing there:
    :data:`~dpcore.domain.NONE_TEXT`)."""
    return s.notna().to_numpy() & ~none_cells(s)


def _numbers(s: pd.Series, is_date: bool, fmt: str | None = None, style: str | None = None) -> tuple[np.ndarray, int]:
    """Float values of a column (NaN = missing) and how many present cells could not be read.

    Interval labels such as ``[35, 40)`` (how dpcore decodes a numeric bin by default) read as the
    interval's midpoint, so a release's decoded rows compare with the real numbers.  ``None`` cells are missing
    (:data:`~dpcore.domain.NONE_TEXT`).  Numbers are read as ``style`` writes them (None: as the column's own cells
    say, :func:`_reading_style`)."""
    present = _present(s)
    if is_date:
        vals = _date_numbers(s, fmt)
    elif pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        vals = s.to_numpy(dtype=float, copy=True)
    else:
        vals = parse_numbers(s, _reading_style(s) if style is None else style).to_numpy(dtype=float, copy=True)
        bad = present & np.isnan(vals)
        if bad.any():
            m = s[bad].astype(str).str.extract(_INTERVAL)
            lo = pd.to_numeric(m[0], errors="coerce").to_numpy(dtype=float)
            hi = pd.to_numeric(m[1], errors="coerce").to_numpy(dtype=float)
            mid = np.where(np.isfinite(lo) & np.isfinite(hi), (lo + hi) / 2, np.where(np.isfinite(lo), lo, hi))
            vals[bad] = mid
    unreadable = int((present & np.isnan(vals)).sum())
    return vals, unreadable


def _coded_numbers(s: pd.Series, coding: ColumnCoding) -> np.ndarray:
    """A numeric column's values as its evaluation coding reads them (NaN = missing or unreadable)."""
    return _numbers(s, coding.is_date, coding.date_format, coding.style)[0]


#: A text that is not a number, in a column of numbers, is compared as a value of its own ("<0.5" under an assay's
#: limit) when it fills at least this share of the real column's rows (at most FREQUENT_TEXTS of them) ...
FREQUENT_TEXT_SHARE = 0.01
FREQUENT_TEXTS = 10


def _date_reading(s: pd.Series) -> tuple[bool, tuple[str, ...]]:
    """Whether a column reads as dates, and the texts compared beside them: at least half its present cells (a
    sample of 500) are dates, and with its frequent texts (a visit date's "unknown": :func:`_frequent_date_texts`)
    95% of them.  Numbers, and cells shorter than 6 or longer than 40 characters, are not dates here."""
    if pd.api.types.is_datetime64_any_dtype(s):
        return True, ()
    if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return False, ()
    present = s[_present(s)]
    if present.empty:
        return False, ()
    sample = present.iloc[:: max(1, len(present) // 500)].astype(str)
    if pd.to_numeric(sample, errors="coerce").notna().mean() > 0.5:
        return False, ()
    dated = pd.to_datetime(sample, errors="coerce", format="mixed").notna().to_numpy()
    if dated.mean() < 0.5:
        return False, ()
    lengths = sample[dated].str.len()
    if lengths.max() > 40 or lengths.min() < 6:
        return False, ()
    texts = _frequent_date_texts(present, len(s)) if dated.mean() < 1.0 else ()
    read = dated | sample.str.strip().isin(texts).to_numpy()
    return bool(read.mean() >= 0.95), texts


def _frequent_date_texts(present: pd.Series, n: int) -> tuple[str, ...]:
    """The texts of a real column of dates that are not dates and fill FREQUENT_TEXT_SHARE of its rows or more
    (at most FREQUENT_TEXTS), the most frequent first: its distinct frequent cells read once each."""
    counts = present.astype(str).str.strip().value_counts()
    frequent = counts[counts >= FREQUENT_TEXT_SHARE * max(n, 1)]
    if frequent.empty:
        return ()
    dated = pd.to_datetime(pd.Series(frequent.index), errors="coerce", format="mixed").notna().to_numpy()
    return tuple(str(t) for t in frequent.index[~dated][:FREQUENT_TEXTS])


def _frequent_texts(s: pd.Series, style: str, nums: pd.Series | None = None) -> tuple[str, ...]:
    """The texts of a real column that are not numbers and fill FREQUENT_TEXT_SHARE of its rows or more, the most
    frequent first, where at least half its present cells are numbers (the evaluation reads the real table: it is
    the data owner's comparison, not a release).  ``nums``: its present cells read as numbers, when already read."""
    if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return ()
    present = s[_present(s)]
    nums = parse_numbers(present, style) if nums is None else nums
    if present.empty or nums.notna().mean() < 0.5:
        return ()
    words = present[nums.isna().to_numpy()].astype(str).str.strip()
    counts = words[~words.str.match(_INTERVAL)].value_counts()
    return tuple(str(t) for t in counts[counts >= FREQUENT_TEXT_SHARE * max(len(s), 1)].index[:FREQUENT_TEXTS])


def _numeric_reading(s: pd.Series, style: str) -> tuple[bool, tuple[str, ...]]:
    """Whether a column reads as numbers (95% of its present cells, with its frequent texts compared beside them,
    and at least half of them numbers; more than NUMERIC_AS_CATEGORICAL values), read as ``style`` writes them; and
    those texts (:func:`_frequent_texts`).  The cells are read as numbers once."""
    if pd.api.types.is_bool_dtype(s):
        return False, ()
    present = s[_present(s)]
    if present.empty:
        return False, ()
    if pd.api.types.is_numeric_dtype(s):
        return present.nunique() > NUMERIC_AS_CATEGORICAL, ()
    nums = parse_numbers(present, style)
    texts = _frequent_texts(s, style, nums)
    read = nums.notna() | present.astype(str).str.strip().isin(texts)
    return bool(read.mean() >= 0.95 and nums.nunique() > NUMERIC_AS_CATEGORICAL), texts


def build_coding(real: pd.Series, synthetic: pd.Series, attribute=None, bins: int = DEFAULT_BINS) -> ColumnCoding:
    """The evaluation coding of one column, from the real column (and the schema's attribute)."""
    name = str(real.name)
    has_missing = bool(real.isna().any() or synthetic.isna().any())
    if attribute is not None and attribute.kind == "numeric":
        edges = np.asarray(attribute.edges, dtype=float)
        labels = _interval_labels(edges, False) + list(attribute.texts)
        coding = ColumnCoding(name, "numeric", labels, edges, style=attribute.style, texts=tuple(attribute.texts))
        return _finish(coding, has_missing)
    if attribute is not None and attribute.kind == "datetime":  # the schema's date bins, read in its format
        edges = np.asarray(attribute.edges, dtype=float) * NS_PER_DAY
        labels = attribute.labels()[: attribute.n_bins] + list(attribute.texts)
        coding = ColumnCoding(
            name, "numeric", labels, edges, is_date=True, date_format=attribute.format, texts=tuple(attribute.texts)
        )
        return _finish(coding, has_missing)
    if attribute is not None:
        labels = list(attribute.values)
        return _finish(ColumnCoding(name, "categorical", labels), has_missing, unseen=True)
    is_date, texts = _date_reading(real)
    style = None if is_date else _reading_style(real)  # the release is written as the real column is
    numeric, texts = (False, texts) if is_date else _numeric_reading(real, style or "")
    if is_date or numeric:
        vals, _ = _numbers(real, is_date, style=style)
        finite = vals[np.isfinite(vals)]
        if finite.size:
            edges = quantile_edges(finite, bins)
            if edges.size < 2:
                edges = np.array([edges[0], edges[0]])
            labels = _interval_labels(edges, is_date) + list(texts)
            coding = ColumnCoding(name, "numeric", labels, edges, is_date, style=style, texts=texts)
            return _finish(coding, has_missing)
    keys = _canonical_text(real.dropna())
    labels = list(pd.unique(keys))
    return _finish(ColumnCoding(name, "categorical", labels), has_missing, unseen=True)


def quantile_edges(values: np.ndarray, bins: int = DEFAULT_BINS) -> np.ndarray:
    """Edges of ``bins`` quantile bins; a point mass that swallows several quantiles (capital-gain's
    92% zeros) keeps one bin and the bins it swallowed go to the values beside it."""
    edges = np.unique(np.quantile(values, np.linspace(0.0, 1.0, bins + 1)))
    if edges.size - 1 < bins:
        rest = values[~np.isin(values, edges)]
        if rest.size:
            extra = np.quantile(rest, np.linspace(0.0, 1.0, bins - (edges.size - 1) + 1))
            edges = np.unique(np.concatenate([edges, extra]))
    return edges


def _interval_labels(edges: np.ndarray, is_date: bool) -> list[str]:
    if edges.size < 2 or edges[0] == edges[-1]:
        return [_fmt_edge(edges[0], is_date)]
    fmt = [_fmt_edge(e, is_date) for e in edges]
    return [f"[{a}, {b}{']' if i == len(fmt) - 2 else ')'}" for i, (a, b) in enumerate(zip(fmt, fmt[1:]))]


def _fmt_edge(e: float, is_date: bool) -> str:
    if is_date:
        return str(pd.Timestamp(int(e)).date())
    return f"{e:.4g}"


def _finish(c: ColumnCoding, has_missing: bool, unseen: bool = False) -> ColumnCoding:
    if unseen:
        c.unseen_code = len(c.labels)
        c.labels = c.labels + ["(unseen in real)"]
    if has_missing:
        c.missing_code = len(c.labels)
        c.labels = c.labels + ["(missing)"]
    return c


def encode_column(coding: ColumnCoding, s: pd.Series) -> tuple[np.ndarray, int]:
    """Codes of a column under ``coding`` and the number of present cells that could not be read."""
    codes, unreadable, _ = _encode(coding, s)
    return codes, unreadable


def _encode(coding: ColumnCoding, s: pd.Series) -> tuple[np.ndarray, int, np.ndarray | None]:
    """:func:`encode_column`, and a numeric coding's values as read (NaN: missing or unreadable; None otherwise)."""
    missing = s.isna().to_numpy()
    vals = None
    if coding.kind == "numeric":
        vals, unreadable = _numbers(s, coding.is_date, coding.date_format, coding.style)
        missing = missing | np.isnan(vals)
        edges = coding.edges
        assert edges is not None  # a numeric coding always has edges
        n_bins = max(1, edges.size - 1) if edges[0] != edges[-1] else 1
        # Interior edges only: values below/above the real range fall in the end bins.
        codes = np.searchsorted(edges[1:-1], np.nan_to_num(vals), side="right") if n_bins > 1 else np.zeros(len(s))
        codes = codes.astype(np.int64)
        if coding.texts:  # a listed text: its own code after the bins, not a missing or unreadable cell
            unread = np.flatnonzero(missing & _present(s))
            lookup = {t: n_bins + i for i, t in enumerate(coding.texts)}
            found = np.array([lookup.get(str(v).strip(), -1) for v in s.iloc[unread]], dtype=np.int64)
            hit = unread[found >= 0]
            codes[hit], missing[hit] = found[found >= 0], False
            unreadable -= int(hit.size)
    else:
        unreadable = 0
        # Labels through the same canonical form as the cells (a declared '1.50' matches a cell 1.5).
        labels = pd.Series(coding.labels[: coding.unseen_code], dtype=object)
        lookup = {v: i for i, v in enumerate(_canonical_text(labels))}
        if NONE_TEXT not in lookup:  # "None" is a missing cell where it is not one of the values (as in encoding)
            missing = missing | none_cells(s)
        text = _canonical_text(s[~missing]) if (~missing).any() else pd.Series([], dtype=object)
        uniq_idx, uniques = pd.factorize(text, sort=False)
        uniq_code = np.array([lookup.get(u, coding.unseen_code) for u in uniques], dtype=np.int64)
        codes = np.zeros(len(s), dtype=np.int64)
        codes[~missing] = uniq_code[uniq_idx] if len(uniq_code) else 0
    if missing.any():
        if coding.missing_code is None:  # only when the caller encodes a third table (the holdout)
            coding.missing_code = len(coding.labels)
            coding.labels.append("(missing)")
        codes[missing] = coding.missing_code
    return codes, unreadable, vals


# ------------------------------------------------------------------ TVD and association
def tvd(p: np.ndarray, q: np.ndarray) -> float:
    """Total-variation distance ½ Σ |p - q| of two distributions over the same cells."""
    return 0.5 * float(np.abs(np.asarray(p, float) - np.asarray(q, float)).sum())


def cramers_v(table: np.ndarray) -> float:
    """Cramér's V of a contingency table (counts or proportions), on its non-empty rows and columns;
    0 when either side has a single category (no association can show)."""
    t = np.asarray(table, dtype=float)
    t = t[t.sum(axis=1) > 0][:, t.sum(axis=0) > 0]
    k = min(t.shape) - 1 if t.size else 0
    if k <= 0:
        return 0.0
    p = t / t.sum()
    expected = np.outer(p.sum(axis=1), p.sum(axis=0))
    phi2 = float((p**2 / expected).sum() - 1.0)
    return math.sqrt(max(phi2, 0.0) / k)


def _one_way(codes: np.ndarray, sizes: np.ndarray) -> list[np.ndarray]:
    n = codes.shape[0]
    return [np.bincount(codes[:, j], minlength=int(sizes[j])) / n for j in range(codes.shape[1])]


def _pair_block(codes_r, codes_s, sizes, i, js, p1_r, p1_s):
    """TVD and Cramér's V (real, synthetic) of pairs (i, j) for j in ``js``: one bincount per table."""
    ki = int(sizes[i])
    kj = sizes[js].astype(np.int64)
    seg = ki * kj
    offsets = np.zeros(len(js) + 1, dtype=np.int64)
    np.cumsum(seg, out=offsets[1:])
    L = int(offsets[-1])

    def joint(codes):
        keys = offsets[:-1][None, :] + codes[:, i][:, None] * kj[None, :] + codes[:, js]
        return np.bincount(keys.ravel(), minlength=L) / codes.shape[0]

    pr, ps = joint(codes_r), joint(codes_s)
    starts = offsets[:-1]
    tv = 0.5 * np.add.reduceat(np.abs(pr - ps), starts)
    # Cell t of segment j: row a = t // k_j (column i's code), column b = t % k_j (column j's code).
    seg_id = np.repeat(np.arange(len(js)), seg)
    local = np.arange(L, dtype=np.int64) - np.repeat(starts, seg)
    a = local // kj[seg_id]
    b = local % kj[seg_id]
    v, vc = [], []
    for p, m1, n in ((pr, p1_r, codes_r.shape[0]), (ps, p1_s, codes_s.shape[0])):
        pa = m1["p1"][i][a]
        pb = m1["flat"][m1["offsets"][js][seg_id] + b]
        denom = pa * pb
        term = np.divide(p * p, denom, out=np.zeros_like(p), where=denom > 0)
        phi2 = np.add.reduceat(term, starts) - 1.0
        r, c = m1["nonzero"][i], m1["nonzero"][js]
        k = np.minimum(r, c) - 1  # V on the occupied categories only
        v.append(np.where(k > 0, np.sqrt(np.clip(phi2, 0, None) / np.maximum(k, 1)), 0.0))
        vc.append(_bias_corrected_v(phi2, r, c, n))
    return tv, v[0], v[1], vc[0], vc[1]


def _bias_corrected_v(phi2: np.ndarray, r, c, n: int) -> np.ndarray:
    """Bergsma's bias-corrected Cramér's V (J. Korean Stat. Soc. 42, 2013): φ² less its expectation under
    independence, (r-1)(c-1)/(n-1), on r and c occupied categories shrunk alike.  Two independent columns give about
    0 whatever their marginals, where plain V grows with the categories they spread over (about
    sqrt((r-1)/n) for r ≤ c): flatter marginals would otherwise pass for association."""
    r = np.asarray(r, dtype=float)
    c = np.asarray(c, dtype=float)
    if n < 2:
        return np.zeros(np.broadcast(phi2, r, c).shape)
    phi2c = np.clip(phi2 - (r - 1.0) * (c - 1.0) / (n - 1.0), 0.0, None)
    k = np.minimum(r - (r - 1.0) ** 2 / (n - 1.0), c - (c - 1.0) ** 2 / (n - 1.0)) - 1.0
    return np.where(k > 0, np.sqrt(phi2c / np.where(k > 0, k, 1.0)), 0.0)


def _margins(p1: list[np.ndarray]) -> dict:
    """1-way distributions laid out once for every block of pairs."""
    sizes = np.array([len(p) for p in p1], dtype=np.int64)
    return {
        "p1": p1,
        "flat": np.concatenate(p1),
        "offsets": np.concatenate([[0], np.cumsum(sizes)])[:-1],
        "nonzero": np.array([int((p > 0).sum()) for p in p1]),
    }


def _spearman_matrix(values: np.ndarray) -> np.ndarray:
    """Spearman's ρ between all columns of ``values`` (NaN = missing): average ranks, a missing cell
    set to the column's mean rank (so it adds nothing to the covariance), then one matrix product."""
    n, m = values.shape
    ranks = np.empty_like(values)
    for j in range(m):
        col = values[:, j]
        ok = np.isfinite(col)
        r = np.full(n, np.nan)
        if ok.any():
            r[ok] = pd.Series(col[ok]).rank(method="average").to_numpy()
        ranks[:, j] = r
    ok = np.isfinite(ranks)
    mean = np.where(ok, ranks, 0.0).sum(axis=0) / np.maximum(ok.sum(axis=0), 1)
    z = np.where(ok, ranks - mean, 0.0)
    norm = np.sqrt((z * z).sum(axis=0))
    cov = z.T @ z
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = cov / np.outer(norm, norm)
    rho[~np.isfinite(rho)] = 0.0  # a constant column has no rank correlation with anything
    np.fill_diagonal(rho, 1.0)
    return rho


# ------------------------------------------------------------------ the report
def evaluate(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    holdout: pd.DataFrame | None = None,
    schema=None,
    target: str | None = None,
    seed: int = 0,
    n_triples: int = DEFAULT_TRIPLES,
    top: int = 10,
    pair_work_budget: float = PAIR_WORK_BUDGET,
    ml: bool = True,
) -> dict:
    """The internal fidelity report of ``synthetic`` against ``real`` (see the module docstring).

    ``schema`` is a :class:`dpcore.domain.Domain` whose categories and bin edges define the cells;
    ``seed`` fixes every sample the report draws (pairs on wide tables, triples, the stand-in holdout
    split, ML subsamples) -- randomness that protects nothing, so an ordinary generator.
    Returns a JSON-serialisable dict labelled INTERNAL.
    """
    t0 = time.perf_counter()
    notes: list[str] = []
    if schema is not None and isinstance(real, pd.DataFrame):
        # A release covers the schema's columns only: compare on those, and say which real columns were left out.
        names = set(schema.names)
        left_out = [c for c in real.columns if str(c) not in names]
        if left_out and len(left_out) < real.shape[1]:
            notes.append(f"real columns not in the schema, left out of the comparison: {left_out[:10]}")
            real = real[[c for c in real.columns if str(c) in names]]
            if holdout is not None:
                holdout = holdout[[c for c in holdout.columns if str(c) in names]]
    real, synthetic, holdout, left_out_cols = _check_inputs(real, synthetic, holdout, target)
    target_left_out = target is not None and target in left_out_cols
    left_out_target = target
    if left_out_cols:
        shown = ", ".join(repr(c) for c in left_out_cols[:10]) + (" …" if len(left_out_cols) > 10 else "")
        shared = real.shape[1] - len(left_out_cols)
        notes.append(
            f"the synthetic table left out {len(left_out_cols)} of the real table's {real.shape[1]} columns "
            f"({shown}): the report compares the {shared} column{'' if shared == 1 else 's'} they share"
        )
        kept = [c for c in real.columns if c not in set(left_out_cols)]
        real = real[kept]
        holdout = None if holdout is None else holdout[kept]
        if target_left_out:
            target = None
    cols = list(real.columns)
    synthetic = synthetic[cols]
    rng = np.random.default_rng(seed)
    attrs = {}
    if schema is not None:
        names = set(schema.names)
        attrs = {c: schema[c] for c in cols if c in names}
        missing = [c for c in cols if c not in names]
        if missing:
            notes.append(f"columns not in the schema, binned from the real data instead: {missing[:10]}")
    codings = [build_coding(real[c], synthetic[c], attrs.get(c)) for c in cols]
    codes_r, _, real_read = _encode_all(codings, real, lambda j, v: (_extent(v), _summary(v)))
    extents = [None if r is None else r[0] for r in real_read]
    codes_s, unread_s, syn_read = _encode_all(codings, synthetic, lambda j, v: (_outside(v, extents[j]), _summary(v)))
    outside = [None if r is None else r[0] for r in syn_read]
    unreadable = {c: u for c, u in zip(cols, unread_s) if u}
    if unreadable:
        notes.append(f"synthetic cells that could not be read as numbers/dates (counted as missing): {unreadable}")
    sizes = np.array([c.size for c in codings], dtype=np.int64)

    p1_r, p1_s = _one_way(codes_r, sizes), _one_way(codes_s, sizes)
    one = [tvd(a, b) for a, b in zip(p1_r, p1_s)]
    order = np.argsort(one)[::-1]
    report: dict = {
        "label": LABEL,
        "internal": True,
        "n_real": int(len(real)),
        "n_synthetic": int(len(synthetic)),
        "n_holdout": None if holdout is None else int(len(holdout)),
        "columns_left_out": list(left_out_cols),
        "columns": [
            {
                "name": c.name,
                "kind": "date" if c.is_date else c.kind,
                "cells": c.size,
                "binned_by": _binned_by(c, attrs),
            }
            for c in codings
        ],
        "one_way_tvd": {
            "mean": float(np.mean(one)),
            "max": float(np.max(one)),
            "columns": [{"column": cols[j], "tvd": one[j]} for j in order],
        },
    }
    report["out_of_range"] = _out_of_range(codings, codes_s, outside)
    report["summaries"] = _summaries(
        codings, [None if r is None else r[1] for r in real_read], [None if r is None else r[1] for r in syn_read]
    )
    report["two_way_tvd"], report["association_diff"] = _pairs(
        cols, codings, codes_r, codes_s, sizes, p1_r, p1_s, real, synthetic, rng, top, pair_work_budget, seed
    )
    report["three_way_tvd"] = _triples(cols, codes_r, codes_s, sizes, n_triples, seed)
    report["copy_rate"], report["ml_efficacy"] = _holdout_figures(
        real, synthetic, holdout, codings, codes_r, codes_s, target, seed, ml, notes
    )
    if target_left_out:
        report["ml_efficacy"]["skipped"] = "the synthetic table left out the target column"
        report["ml_efficacy"]["target"] = left_out_target
    report["settings"] = {
        "seed": seed,
        "numeric_bins": "schema edges" if schema is not None else f"{DEFAULT_BINS} quantile bins of the real data",
        "numeric_as_categorical_up_to": NUMERIC_AS_CATEGORICAL,
        "pair_work_budget": pair_work_budget,
        "n_triples": n_triples,
    }
    report["notes"] = notes
    report["seconds"] = round(time.perf_counter() - t0, 3)
    return report


def _extent(vals: np.ndarray) -> tuple[float, float] | None:
    """The real column's [min, max] as read (None when it holds no number)."""
    finite = vals[np.isfinite(vals)]
    return (float(finite.min()), float(finite.max())) if finite.size else None


def _outside(vals: np.ndarray, extent: tuple[float, float] | None) -> float:
    """The share of rows whose value lies outside ``extent`` (missing and unreadable cells are not)."""
    if extent is None or not len(vals):
        return 0.0
    return float(np.mean((vals < extent[0]) | (vals > extent[1])))  # NaN compares False


#: The quantiles a column's summary lists (and keeps on a grid of SUMMARY_GRID + 1 points to read the share of
#: real rows beyond the release's range, to within 1 / SUMMARY_GRID of the rows).
SUMMARY_QUANTILES = {"p01": 0.01, "p10": 0.10, "p25": 0.25, "median": 0.50, "p75": 0.75, "p90": 0.90, "p99": 0.99}
SUMMARY_GRID = 2000


def _summary(vals: np.ndarray) -> dict | None:
    """Mean, standard deviation, extremes and quantiles of a column's values as read (missing cells left out),
    with the quantile grid :func:`_summaries` reads shares of rows from; None when it holds no number."""
    x = vals[np.isfinite(vals)]
    if not x.size:
        return None
    grid = np.quantile(x, np.linspace(0.0, 1.0, SUMMARY_GRID + 1), method="inverted_cdf")  # values of the column
    out = {"n": int(x.size), "mean": float(x.mean()), "sd": float(x.std()), "min": float(grid[0])}
    qs = np.quantile(x, list(SUMMARY_QUANTILES.values()))
    out.update({k: float(v) for k, v in zip(SUMMARY_QUANTILES, qs)})
    out["max"] = float(grid[-1])
    out["grid"] = grid
    return out


def _share_beyond(grid: np.ndarray, lo: float, hi: float) -> float:
    """The share of a column's rows below ``lo`` or above ``hi``, read off its quantile grid (point k the least value
    with at least k / G of the rows at or below it: exact where the share is a multiple of 1 / G, within it else)."""
    g = grid.size - 1
    below = (np.searchsorted(grid, lo, side="left") - 1) / g if lo > grid[0] else 0.0
    above = 1.0 - (np.searchsorted(grid, hi, side="right") - 1) / g if hi < grid[-1] else 0.0
    return float(min(1.0, max(0.0, below) + max(0.0, above)))


def _summaries(codings, real: list, synthetic: list) -> dict:
    """Real against synthetic summaries of every number or date column (``summaries`` in the module docstring),
    worst mean first; dates' values are nanoseconds since the epoch (the differences are in real SDs and IQRs)."""
    rows = []
    for c, r, s in zip(codings, real, synthetic):
        if c.kind != "numeric" or r is None:
            continue
        row: dict = {"column": c.name, "kind": "date" if c.is_date else "number"}
        row["real"] = {k: v for k, v in r.items() if k != "grid"}
        row["synthetic"] = None if s is None else {k: v for k, v in s.items() if k != "grid"}
        iqr = r["p75"] - r["p25"]
        row["mean_diff_sd"] = abs(s["mean"] - r["mean"]) / r["sd"] if s is not None and r["sd"] > 0 else None
        row["median_diff_iqr"] = abs(s["median"] - r["median"]) / iqr if s is not None and iqr > 0 else None
        row["sd_ratio"] = s["sd"] / r["sd"] if s is not None and r["sd"] > 0 else None
        row["real_beyond_synthetic"] = _share_beyond(r["grid"], s["min"], s["max"]) if s is not None else 1.0
        rows.append(row)
    diffs = [r["mean_diff_sd"] for r in rows if r["mean_diff_sd"] is not None]
    rows.sort(key=lambda r: -1.0 if r["mean_diff_sd"] is None else r["mean_diff_sd"], reverse=True)
    return {
        "mean_diff_sd": {"mean": float(np.mean(diffs)), "max": float(np.max(diffs))} if diffs else None,
        "real_beyond_synthetic_max": max((r["real_beyond_synthetic"] for r in rows), default=None),
        "columns": rows,
        "dates_in": "nanoseconds since 1970-01-01",
    }


def _shown(value: float | None, kind: str) -> str:
    if value is None or not np.isfinite(value):
        return "—"
    if kind == "date":
        t = pd.Timestamp(int(round(value)))
        return t.strftime("%Y-%m-%d") if t == t.normalize() else t.strftime("%Y-%m-%d %H:%M")
    return f"{value:.4g}"


def summary_table(report: dict) -> list[dict]:
    """The report's ``summaries`` as rows of display strings, worst mean first: one per number or date column,
    each statistic as ``real → synthetic`` (empty for a report computed before the figure existed)."""
    out = []
    for row in (report.get("summaries") or {}).get("columns", []):
        kind, r, s = row["kind"], row["real"], row["synthetic"] or {}

        def pair(key: str, kind=kind, r=r, s=s) -> str:
            return f"{_shown(r.get(key), kind)} → {_shown(s.get(key), kind)}"

        out.append(
            {
                "column": row["column"],
                "mean": pair("mean"),
                "mean off by (real SDs)": "—" if row["mean_diff_sd"] is None else f"{row['mean_diff_sd']:.2f}",
                "median": pair("median"),
                "1st / 99th percentile": f"{pair('p01')}; {pair('p99')}",
                "SD ratio": "—" if row["sd_ratio"] is None else f"{row['sd_ratio']:.2f}",
                "real rows beyond the release": f"{row['real_beyond_synthetic']:.1%}",
            }
        )
    return out


def _out_of_range(codings, codes_s: np.ndarray, outside: list) -> dict:
    """Per column, the share of synthetic rows outside what the real column holds: a number or date outside the
    real [min, max] (``outside``, from the values as the coding reads them), a category in the "unseen" cell.
    Columns sorted by share."""
    shares = [
        float(outside[j]) if c.kind == "numeric" and outside[j] is not None
        else float(np.mean(codes_s[:, j] == c.unseen_code)) if c.unseen_code is not None and len(codes_s)
        else 0.0
        for j, c in enumerate(codings)
    ]  # fmt: skip
    order = np.argsort(shares)[::-1]
    return {
        "mean": float(np.mean(shares)) if shares else 0.0,
        "max": float(np.max(shares)) if shares else 0.0,
        "columns": [{"column": codings[j].name, "share": shares[j]} for j in order],
    }


def _binned_by(c: ColumnCoding, attrs: dict) -> str:
    if c.name in attrs:
        return "schema"
    return f"{DEFAULT_BINS} quantile bins of real" if c.kind == "numeric" else "values"


def _check_inputs(real, synthetic, holdout, target):
    for name, df in (("real", real), ("synthetic", synthetic), ("holdout", holdout)):
        if df is None and name == "holdout":
            continue
        if not isinstance(df, pd.DataFrame):
            raise DataError(f"The {name} table must be a pandas DataFrame.")
        if df.shape[0] == 0:
            raise DataError(f"The {name} table has no rows.")
        if df.shape[1] == 0:
            raise DataError(f"The {name} table has no columns.")
        if len(set(map(str, df.columns))) != df.shape[1]:
            raise DataError(f"The {name} table repeats column names; rename them.")
    real = real.rename(columns=str)
    synthetic = synthetic.rename(columns=str)
    cols = list(real.columns)
    left_out: list[str] = []
    for name, df in (("synthetic", synthetic), ("holdout", holdout)):
        if df is None:
            continue
        df_cols = [str(c) for c in df.columns]
        missing = [c for c in cols if c not in df_cols]
        extra = [c for c in df_cols if c not in cols]
        if name == "synthetic" and missing and not extra and len(missing) < len(cols):
            left_out = missing  # a release that left columns out: compared on the columns it kept
            continue
        if missing or extra:
            raise DataError(
                f"The {name} table's columns differ from the real table's: missing {missing[:5]}, "
                f"extra {extra[:5]}. Compare tables with the same columns"
                + (" (a synthetic table may leave real columns out, but not add any)." if name == "synthetic" else ".")
            )
    if holdout is not None:
        holdout = holdout.rename(columns=str)[cols]
    if target is not None and target not in cols:
        raise DataError(f"Target column {target!r} is not in the table; columns are {cols[:10]}.")
    return real.reset_index(drop=True), synthetic.reset_index(drop=True), holdout, left_out


def _encode_all(codings, df, summarise=None):
    """Codes of every column and the unreadable cells of each; with ``summarise(j, values)``, also its result for
    every numeric column's values as read (None for the others), so they are parsed once."""
    out = np.empty((len(df), len(codings)), dtype=np.int64)
    unread, summary = [], []
    for j, c in enumerate(codings):
        out[:, j], u, vals = _encode(c, df[c.name])
        unread.append(u)
        summary.append(None if summarise is None or vals is None else summarise(j, vals))
    return out, unread, summary


def _pairs(cols, codings, codes_r, codes_s, sizes, p1_r, p1_s, real, synthetic, rng, top, budget, seed):
    m = len(cols)
    total = m * (m - 1) // 2
    if total == 0:
        empty: dict = {"mean": None, "max": None, "pairs": [], "pairs_total": 0, "pairs_evaluated": 0}
        none: dict = {"mean": None, "max": None, "mean_bias_corrected": None, "pairs": []}
        return empty, {**none, "categorical": None, "numeric": None, "mixed": None}
    rows = codes_r.shape[0] + codes_s.shape[0]
    cap = max(MIN_SAMPLED_PAIRS, int(budget // max(rows, 1)))
    iu, ju = np.triu_indices(m, k=1)
    sampled = total > cap
    if sampled:
        keep = np.sort(rng.choice(total, size=cap, replace=False))
        iu, ju = iu[keep], ju[keep]
    tv = np.empty(len(iu))
    v_r = np.empty(len(iu))
    v_s = np.empty(len(iu))
    vc_r = np.empty(len(iu))
    vc_s = np.empty(len(iu))
    # Blocks: all evaluated pairs (i, j) of one i, cut so a block's cells stay under BLOCK_CELLS.
    per_block = max(1, BLOCK_CELLS // max(codes_r.shape[0], codes_s.shape[0]))  # the key matrix is rows x pairs
    m_r, m_s = _margins(p1_r), _margins(p1_s)
    starts = np.flatnonzero(np.r_[True, iu[1:] != iu[:-1]])
    ends = np.r_[starts[1:], len(iu)]
    for s0, e0 in zip(starts, ends):
        i = int(iu[s0])
        s = s0
        while s < e0:
            cells = np.cumsum(sizes[i] * sizes[ju[s:e0]])
            e = s + max(1, int(np.searchsorted(cells, BLOCK_CELLS, side="right")))
            e = min(e, e0, s + per_block)
            tv[s:e], v_r[s:e], v_s[s:e], vc_r[s:e], vc_s[s:e] = _pair_block(
                codes_r, codes_s, sizes, i, ju[s:e], m_r, m_s
            )
            s = e
    order = np.argsort(tv)[::-1]
    two = {
        "mean": float(tv.mean()),
        "max": float(tv.max()),
        "pairs": [{"columns": [cols[iu[k]], cols[ju[k]]], "tvd": float(tv[k])} for k in order[:top]],
        "pairs_total": int(total),
        "pairs_evaluated": int(len(iu)),
        "sampled": bool(sampled),
    }
    if sampled:
        two["sample"] = f"{len(iu)} of {total} pairs drawn uniformly without replacement, seed {seed}"
    if m <= MAX_MATRIX_COLUMNS:
        two["all"] = [[cols[a], cols[b], float(t)] for a, b, t in zip(iu, ju, tv)]

    kinds = np.array([c.kind for c in codings])
    num_idx = np.flatnonzero(kinds == "numeric")
    rho_r = rho_s = None
    if num_idx.size >= 2:
        vr = np.column_stack([_coded_numbers(real[cols[j]], codings[j]) for j in num_idx])
        vs = np.column_stack([_coded_numbers(synthetic[cols[j]], codings[j]) for j in num_idx])
        rho_r, rho_s = _spearman_matrix(vr), _spearman_matrix(vs)
    pos = {int(j): k for k, j in enumerate(num_idx)}
    both_num = (kinds[iu] == "numeric") & (kinds[ju] == "numeric")
    both_cat = (kinds[iu] == "categorical") & (kinds[ju] == "categorical")
    assoc_r, assoc_s = v_r.copy(), v_s.copy()
    if rho_r is not None and rho_s is not None and both_num.any():
        a = np.array([pos[int(x)] for x in iu[both_num]])
        b = np.array([pos[int(x)] for x in ju[both_num]])
        assoc_r[both_num], assoc_s[both_num] = rho_r[a, b], rho_s[a, b]
    diff = np.abs(assoc_r - assoc_s)
    # The same with Cramér's V bias-corrected on both sides (Spearman's ρ needs no correction).
    corr_r, corr_s = vc_r.copy(), vc_s.copy()
    corr_r[both_num], corr_s[both_num] = assoc_r[both_num], assoc_s[both_num]
    diff_corrected = np.abs(corr_r - corr_s)
    kind = np.where(both_num, "numeric", np.where(both_cat, "categorical", "mixed"))
    measure = {"categorical": "cramers_v", "numeric": "spearman_rho", "mixed": "cramers_v on bins"}
    order = np.argsort(diff)[::-1]

    def stats(mask):
        if not mask.any():
            return None
        return {"mean": float(diff[mask].mean()), "max": float(diff[mask].max()), "pairs": int(mask.sum())}

    assoc = {
        "mean": float(diff.mean()),
        "max": float(diff.max()),
        "mean_bias_corrected": float(diff_corrected.mean()),
        "pairs": [
            {
                "columns": [cols[iu[k]], cols[ju[k]]],
                "measure": measure[kind[k]],
                "real": float(assoc_r[k]),
                "synthetic": float(assoc_s[k]),
                "diff": float(diff[k]),
            }
            for k in order[:top]
        ],
        "categorical": stats(kind == "categorical"),
        "numeric": stats(kind == "numeric"),
        "mixed": stats(kind == "mixed"),
        "measures": "Cramér's V for categorical pairs and mixed pairs (numeric side binned); Spearman's rank "
        "correlation for numeric pairs (a missing cell counts at its column's mean rank); mean_bias_corrected: the "
        "mean with Bergsma's bias-corrected V on both sides, which independent columns score about 0 on whatever "
        "their marginals (plain V grows with the categories a column spreads over)",
    }
    if m <= MAX_MATRIX_COLUMNS:
        mat_r, mat_s = np.eye(m), np.eye(m)
        mat_r[iu, ju] = mat_r[ju, iu] = assoc_r
        mat_s[iu, ju] = mat_s[ju, iu] = assoc_s
        if sampled:  # pairs not in the sample are unknown
            known = np.eye(m, dtype=bool)
            known[iu, ju] = known[ju, iu] = True
            mat_r[~known] = mat_s[~known] = np.nan
        assoc["matrices"] = {
            "columns": cols,
            "real": _nan_to_none(mat_r),
            "synthetic": _nan_to_none(mat_s),
        }
    return two, assoc


def _nan_to_none(a: np.ndarray) -> list:
    return [[None if not np.isfinite(x) else float(x) for x in row] for row in a]


def _triples(cols, codes_r, codes_s, sizes, n_triples, seed):
    m = len(cols)
    total = math.comb(m, 3)
    if total == 0 or n_triples <= 0:
        return {"mean": None, "max": None, "triples": [], "triples_total": total, "triples_evaluated": 0, "seed": seed}
    rng = np.random.default_rng([seed, 3])
    if total <= n_triples:
        triples = np.array(list(_all_triples(m)))
    else:
        seen: set = set()
        while len(seen) < n_triples:  # rejection over column indices, not rows
            t = tuple(sorted(rng.choice(m, size=3, replace=False).tolist()))
            seen.add(t)
        triples = np.array(sorted(seen))
    vals = np.empty(len(triples))
    for k, (a, b, c) in enumerate(triples):
        kb, kc = int(sizes[b]), int(sizes[c])
        kr = (codes_r[:, a] * kb + codes_r[:, b]) * kc + codes_r[:, c]
        ks = (codes_s[:, a] * kb + codes_s[:, b]) * kc + codes_s[:, c]
        cells = int(sizes[a]) * kb * kc
        if cells <= 4 * (len(kr) + len(ks)) or cells <= 1_000_000:
            pr = np.bincount(kr, minlength=cells) / len(kr)
            ps = np.bincount(ks, minlength=cells) / len(ks)
        else:  # sparse: only the occupied cells
            u, inv = np.unique(np.concatenate([kr, ks]), return_inverse=True)
            pr = np.bincount(inv[: len(kr)], minlength=len(u)) / len(kr)
            ps = np.bincount(inv[len(kr) :], minlength=len(u)) / len(ks)
        vals[k] = tvd(pr, ps)
    order = np.argsort(vals)[::-1]
    return {
        "mean": float(vals.mean()),
        "max": float(vals.max()),
        "triples": [{"columns": [cols[i] for i in triples[k]], "tvd": float(vals[k])} for k in order[:10]],
        "triples_total": int(total),
        "triples_evaluated": int(len(triples)),
        "sampled": bool(total > len(triples)),
        "seed": seed,
        "sample": (
            f"{len(triples)} of {total} triples drawn uniformly without replacement, seed {seed}"
            if total > len(triples)
            else "all triples"
        ),
    }


def _all_triples(m):
    for a in range(m):
        for b in range(a + 1, m):
            for c in range(b + 1, m):
                yield (a, b, c)


# ------------------------------------------------------------------ copy rate and ML efficacy
def _row_hashes(df: pd.DataFrame, codings) -> np.ndarray:
    """One 64-bit hash per row of the canonicalised values (numbers as floats, dates as instants,
    categories as text), so 39, 39.0 and '39' are the same cell."""
    canon = {}
    for c in codings:
        s = df[c.name]
        if c.kind == "numeric":
            canon[c.name] = pd.Series(_coded_numbers(s, c), index=df.index)
        else:
            canon[c.name] = _canonical_text(s).where(s.notna(), None)
    return pd.util.hash_pandas_object(pd.DataFrame(canon), index=False).to_numpy()


def _code_hashes(codes: np.ndarray) -> np.ndarray:
    return pd.util.hash_pandas_object(pd.DataFrame(codes), index=False).to_numpy()


def _holdout_figures(real, synthetic, holdout, codings, codes_r, codes_s, target, seed, ml, notes):
    rng = np.random.default_rng([seed, 7])
    if holdout is None:
        n = len(real)
        perm = rng.permutation(n)
        n_hold = max(1, int(round(SPLIT_HOLDOUT_FRACTION * n))) if n > 1 else 0
        hold_idx, train_idx = np.sort(perm[:n_hold]), np.sort(perm[n_hold:])
        train, hold = real.iloc[train_idx], real.iloc[hold_idx]
        train_codes, hold_codes = codes_r[train_idx], codes_r[hold_idx]
        optimistic = True
        reference = (
            f"a {SPLIT_HOLDOUT_FRACTION:.0%} split of REAL (seed {seed}); the synthesizer saw these rows, "
            "so these figures are OPTIMISTIC"
        )
    else:
        train, hold = real, holdout
        train_codes = codes_r
        hold_codes = _encode_all(codings, holdout)[0]
        optimistic = False
        reference = "the holdout table (real rows the synthesizer never saw)"

    train_h, syn_h, hold_h = _row_hashes(train, codings), _row_hashes(synthetic, codings), _row_hashes(hold, codings)
    train_ch, syn_ch, hold_ch = _code_hashes(train_codes), _code_hashes(codes_s), _code_hashes(hold_codes)

    def share(h, ref):
        return float(np.isin(h, ref).mean()) if len(h) else None

    copy = {
        "label": COPY_RATE_LABEL,
        "synthetic": share(syn_h, train_h),
        "holdout": share(hold_h, train_h),
        "synthetic_binned": share(syn_ch, train_ch),
        "holdout_binned": share(hold_ch, train_ch),
        "compared_with": "real training rows" if holdout is not None else "the training part of the REAL split",
        "reference": reference,
        "optimistic": optimistic,
        "meaning": "share of rows identical to a real training row: 'synthetic'/'holdout' on the values "
        "themselves, '*_binned' on the evaluation cells; a synthetic share far above the holdout's suggests "
        "memorised rows. It proves nothing about privacy either way.",
    }
    if target is None or not ml:
        eff = {
            "label": LABEL,
            "target": target,
            "skipped": "no target column given" if target is None else "ML efficacy switched off",
        }
        return copy, eff
    eff = ml_efficacy(train, synthetic, hold, target, codings, seed)
    eff["reference"] = reference
    eff["optimistic"] = optimistic
    return copy, eff


def ml_efficacy(train: pd.DataFrame, synthetic: pd.DataFrame, test: pd.DataFrame, target: str, codings, seed: int):
    """Train on synthetic and on real, test both on the same real rows: accuracy and ROC AUC."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    by_name = {c.name: c for c in codings}
    tcod = by_name[target]
    features = [c.name for c in codings if c.name != target]
    out: dict = {"label": LABEL, "target": target, "models": {}, "notes": []}
    if not features:
        out["skipped"] = "the table has no column besides the target"
        return out
    # Classes are the target's evaluation cells: its categories, or its bins when it is numeric.
    y_train = encode_column(tcod, train[target])[0]
    y_syn = encode_column(tcod, synthetic[target])[0]
    y_test = encode_column(tcod, test[target])[0]
    if tcod.kind == "numeric":
        out["notes"].append(f"numeric target: classes are its {tcod.size} bins")
    out["classes"] = [tcod.labels[k] for k in np.unique(np.concatenate([y_train, y_test]))]
    if len(np.unique(y_test)) < 2:
        out["skipped"] = "the test rows hold a single class of the target: accuracy and AUC say nothing"
        return out

    num = [f for f in features if by_name[f].kind == "numeric"]
    cat = [f for f in features if by_name[f].kind != "numeric"]

    def matrix(df):
        # Categorical features enter as their evaluation codes (integers): sklearn's encoders are
        # slow on Python strings, and the codes already mark unseen and missing values.
        X = {f: _coded_numbers(df[f], by_name[f]) for f in num}
        for f in cat:
            X[f] = encode_column(by_name[f], df[f])[0]
        return pd.DataFrame(X, columns=num + cat)

    rng = np.random.default_rng([seed, 11])

    def cap(X, y):
        if len(y) > ML_MAX_TRAIN_ROWS:
            idx = np.sort(rng.choice(len(y), ML_MAX_TRAIN_ROWS, replace=False))
            out["notes"].append(f"a training set was subsampled to {ML_MAX_TRAIN_ROWS:,} rows (seed {seed})")
            return X.iloc[idx], y[idx]
        return X, y

    X_train, y_train = cap(matrix(train), y_train)
    X_syn, y_syn = cap(matrix(synthetic), y_syn)
    X_test = matrix(test)

    def linear():
        parts = []
        if num:
            parts.append(("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), num))
        if cat:
            parts.append(("cat", OneHotEncoder(handle_unknown="infrequent_if_exist", max_categories=30), cat))
        return make_pipeline(ColumnTransformer(parts), LogisticRegression(max_iter=500))

    def boosted():
        # Native categorical splits up to 255 categories (the histogram's bin limit); beyond, codes as ordinals.
        native = [f in cat and by_name[f].size <= 255 for f in num + cat]
        return HistGradientBoostingClassifier(max_iter=100, categorical_features=native, random_state=seed)

    models = {"logistic_regression": linear, "gradient_boosting": boosted}
    for name, make in models.items():
        res: dict = {}
        for label, X, y in (("train_on_real", X_train, y_train), ("train_on_synthetic", X_syn, y_syn)):
            res[label] = _fit_score(make, X, y, X_test, y_test)
        r, s = res["train_on_real"], res["train_on_synthetic"]
        res["accuracy_gap"] = None if r["accuracy"] is None or s["accuracy"] is None else r["accuracy"] - s["accuracy"]
        res["auc_gap"] = None if r["auc"] is None or s["auc"] is None else r["auc"] - s["auc"]
        out["models"][name] = res
    out["n_test"] = int(len(y_test))
    return out


def _fit_score(make, X, y, X_test, y_test) -> dict:
    import warnings

    from sklearn.metrics import accuracy_score, roc_auc_score

    classes = np.unique(np.concatenate([y, y_test]))
    test_classes = np.unique(y_test)
    if len(np.unique(y)) < 2:
        # One class only: the best any model can do is predict it.
        pred = np.full(len(y_test), y[0] if len(y) else classes[0])
        return {"accuracy": float(accuracy_score(y_test, pred)), "auc": 0.5, "note": "training rows hold one class"}
    from threadpoolctl import threadpool_limits

    # One thread: OpenMP's spinning workers cost several times the work on a shared, loaded machine.
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")
        model = make().fit(X, y)
        proba_fit = model.predict_proba(X_test)
    proba = np.zeros((len(y_test), len(classes)))
    col = np.searchsorted(classes, model.classes_)
    proba[:, col] = proba_fit
    pred = classes[np.argmax(proba, axis=1)]
    acc = float(accuracy_score(y_test, pred))
    if len(test_classes) == 2:
        pos = test_classes[1]
        auc = float(roc_auc_score(y_test == pos, proba[:, np.searchsorted(classes, pos)]))
    else:
        p = proba[:, np.searchsorted(classes, test_classes)]
        p = p / np.where(p.sum(axis=1, keepdims=True) > 0, p.sum(axis=1, keepdims=True), 1.0)
        p[p.sum(axis=1) == 0] = 1.0 / len(test_classes)
        auc = float(roc_auc_score(y_test, p, multi_class="ovr", labels=test_classes))
    return {"accuracy": acc, "auc": auc}
