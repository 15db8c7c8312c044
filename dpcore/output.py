"""Synthetic rows back in the input's shape.

:func:`to_table` turns integer codes over a :class:`~dpcore.domain.Domain` into a table like the one that
came in: the kept columns under their (renamed) names in input order; numbers drawn uniformly within their
bin and inside the public bounds (whole numbers, as a nullable integer column, where the attribute is
integer; as text in the column's style, ``$1,234.50`` or ``63.5%``, where it has one); dates drawn within
their bin and printed in the input's format; categories as their labels (a value the schema does not list
decodes to ``"(other)"``); missing as an empty cell, or, in a CSV, as the text the schema gives the column
(``"?"``, ``"NA"``: :attr:`~dpcore.domain.Attribute.missing_text`, :func:`with_missing_text`).
``numeric="bins"`` gives bin labels (``[35, 40)``) instead.

The draws within a bin are post-processing of released codes: they protect nothing, so they take a NumPy
generator (``ctx.rng`` / ``Randomness.post_processing_generator()``), never privacy noise.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .domain import Domain, decimal_comma
from .errors import DomainError

OUTPUT_MODES = ("values", "bins")


def csv_separator(domain: Domain) -> str:
    """The field separator of a release's CSV: ";" where a column is written with a decimal comma ("1.234,5"), as
    spreadsheets in the locales that write them expect, else ",".  From the public styles only."""
    return ";" if any(decimal_comma(a.style) for a in domain.attributes) else ","


def with_missing_text(domain: Domain, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (decoded over ``domain``) with each column's missing cells written as its schema's ``missing_text``
    ("?", "NA"...), as the source file wrote them: for a CSV.  Columns with none stay as they are (empty cells)."""
    for a in domain.attributes:
        if a.missing_text and a.name in df.columns:
            col = df[a.name]
            miss = col.isna().to_numpy()
            if miss.any():
                df[a.name] = col.astype(object).where(~miss, a.missing_text)
    return df


def read_release_csv(path, nrows: int | None = None) -> pd.DataFrame:
    """A release's CSV read back as text (labels and styled numbers as released, empty cells empty), with the
    separator it was written with (:func:`csv_separator`: ";" or ","), told from its header line."""
    with open(path, encoding="utf-8", newline="") as fh:
        header = next(csv.reader([fh.readline()], delimiter=","), [])
    sep = ";" if len(header) == 1 and ";" in header[0] else ","
    return pd.read_csv(path, sep=sep, nrows=nrows, dtype=str, keep_default_na=False)


def to_table(
    domain: Domain,
    codes: np.ndarray,
    rng: np.random.Generator | None = None,
    numeric: str = "values",
    count_noise: float | Sequence[float] | None = None,
) -> pd.DataFrame:
    """The synthetic table for ``codes`` (n × len(domain)): values (``numeric="values"``, needs ``rng``) or bin
    labels (``numeric="bins"``).  ``count_noise``: the released one-way counts' σ as a share of the rows (one, or
    one per attribute; public), which lets values lean within their bins (:meth:`~dpcore.domain.Attribute.decode`)."""
    if numeric not in OUTPUT_MODES:
        raise DomainError(f"Output numeric columns as 'values' or 'bins', not {numeric!r}.")
    if numeric == "values" and rng is None:
        raise DomainError("Writing numbers and dates as values draws them within their bins: pass a numpy Generator.")
    return domain.decode(np.asarray(codes), numeric, rng, count_noise)


def write_csv(
    domain: Domain,
    codes: np.ndarray,
    path,
    rng: np.random.Generator | None = None,
    numeric: str = "values",
    chunk_rows: int = 500_000,
    count_noise: float | Sequence[float] | None = None,
) -> None:
    """Write :func:`to_table` as CSV to ``path`` a chunk at a time (a release of millions of rows never sits in
    memory as text).  Missing cells are empty or the schema's text (:func:`with_missing_text`); the separator is
    :func:`csv_separator`'s."""
    codes = np.asarray(codes)
    sep = csv_separator(domain)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        for start in range(0, max(1, codes.shape[0]), chunk_rows):
            part = with_missing_text(
                domain, to_table(domain, codes[start : start + chunk_rows], rng, numeric, count_noise)
            )
            part.to_csv(fh, index=False, header=start == 0, sep=sep)
