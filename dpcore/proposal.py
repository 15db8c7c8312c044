"""A proposed schema for the data owner to review: what ``dpcore schema FILE --out schema.json`` writes.

It is read off the data **without** privacy -- exact roles, every value of every category column, bounds taken
from the exact minimum and maximum -- so it is for the owner's eyes only, and it says so in the file.  It becomes
public only by the owner's decision: reviewed, edited, and passed back as ``--schema schema.json`` (which then
costs nothing: every field is declared).  To make that review easy and the result safe to declare:

* bounds are rounded outward to round public values (an age of 18-96 becomes 10-100, incomes up to 19,870 become
  0-20,000), so they state a range, not a person's exact value;
* values held by few rows are listed under ``review.rare_values``: a rare value in a codebook is fine when it is a
  public category (a country, a code from the questionnaire), and must be removed when it is not;
* each column says whether it had missing cells (``"missing": false`` lets a release leave no empty cell);
* a numeric column lists the texts its cells hold that are not numbers (``"texts"``: "<0.5" under an assay's
  limit), the rare ones under ``review.rare_values`` too: each is kept as a value of its own once declared.

A codebook written by hand works the same way; :func:`codebook_from_csv` reads one kept as CSV (``column,value``
rows: the allowed values of each category column).
"""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import pandas as pd

from .discovery import exact_values, value_counts
from .domain import none_cells, parse_dates, parse_numbers, written_style
from .errors import DomainError
from .ingest import _distinct_present, header_role, propose_roles, text_cells

#: A value held by fewer rows than this (or than RARE_SHARE of n) is flagged for review.
RARE_ROWS = 10
RARE_SHARE = 0.01
#: A numeric column's texts that are not numbers ("<0.5", "ND") proposed as values of their own: the most frequent.
MAX_TEXTS = 20
#: The note every proposal carries.
OWNER_ONLY = (
    "PROPOSED from the exact data, WITHOUT privacy: for the data owner's eyes only. Review every entry -- remove "
    "values that are not public categories (see review.rare_values), widen bounds as you see fit -- then pass the "
    "file as --schema: whatever it declares is public and costs nothing."
)


def round_outward(lo: float, hi: float, integer: bool = False) -> tuple[float, float]:
    """Bounds rounded outward to a round step (1, 2 or 5 times a power of ten) of which the range holds at most
    ten: 18-96 -> 10-100, 0-38 -> 0-40, 3-19,870 -> 0-20,000, 0.12-0.97 -> 0.1-1."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise DomainError("Bounds must be finite numbers.")
    if hi <= lo:
        hi = lo + 1.0
    span = hi - lo
    step = 10.0 ** math.floor(math.log10(span / 10.0)) if span > 0 else 1.0
    for mult in (1, 2, 5, 10):
        if span / (step * mult) <= 10:
            step *= mult
            break
    if integer:
        step = max(1.0, round(step))
    out_lo = math.floor(lo / step) * step
    out_hi = math.ceil(hi / step) * step
    if lo >= 0 > out_lo:
        out_lo = 0.0
    return float(round(out_lo, 12)), float(round(out_hi, 12))


def propose_schema(df: pd.DataFrame) -> dict:
    """The proposal for ``df`` (a table as :func:`dpcore.data.read_table` returns it): NOT private."""
    n = len(df)
    proposed = {r.name: r for r in propose_roles(df)}
    entries, rare, excluded = [], {}, {}
    for name in df.columns:
        role = header_role(name) or proposed[str(name)]
        column = df[name]
        entry: dict = {"name": str(name), "kind": role.role}
        if role.role == "excluded":
            excluded[str(name)] = role.reason or "excluded"
            entries.append(entry)
            continue
        entry["missing"] = bool(
            column.isna().any() or (column.astype(str).str.strip() == "").any()
            or (role.role != "categorical" and none_cells(column).any())  # "None" in numbers: a missing cell
        )  # fmt: skip
        own = proposed[str(name)]  # a header's role carries no text: the proposal's, where the roles agree
        text = own.missing_text if own.role == role.role else ""
        if entry["missing"] and text:  # how the file writes a missing cell ("NA", "?"): exact, like the style
            entry["missing_text"] = text
        if role.role == "categorical":
            entry["values"] = list(exact_values(column))
            labels, counts = value_counts(column)
            cut = max(RARE_ROWS, RARE_SHARE * n)
            few = sorted(lab for lab, c in zip(labels, counts) if c < cut)
            if few:
                rare[str(name)] = few
        elif role.role == "numeric":
            style = written_style(*_distinct_present(column))  # the style most of its cells are written in
            vals = parse_numbers(column, style).to_numpy(dtype=float)
            vals = vals[np.isfinite(vals)]
            lo, hi = round_outward(float(vals.min()), float(vals.max()), role.integer)
            entry.update(lower=lo, upper=hi, integer=bool(role.integer))
            if style:
                entry["style"] = style
            _propose_texts(entry, text_cells(column, style), n, rare)  # "<0.5" under an assay's limit, "ND"
        else:
            days = parse_dates(column, role.format)
            days = days[np.isfinite(days)]
            first = pd.Timestamp("1970-01-01") + pd.Timedelta(days=float(days.min()))
            last = pd.Timestamp("1970-01-01") + pd.Timedelta(days=float(days.max()))
            entry.update(
                lower=f"{first.year}-01-01",
                upper=f"{last.year}-12-31",
                format=role.format,
                granularity=role.granularity or "day",
            )
            _propose_texts(entry, text_cells(column, date_format=role.format), n, rare)  # "unknown" beside dates
        entries.append(entry)
    return {
        "note": OWNER_ONLY,
        "complete": True,
        "attributes": entries,
        "review": {
            "excluded": excluded,
            "rare_values": rare,
            "rare_means": f"held by fewer than max({RARE_ROWS}, {RARE_SHARE:.0%} of n) rows",
        },
    }


def _propose_texts(entry: dict, cells: pd.Series, n: int, rare: dict) -> None:
    """A numeric or date column's texts beside its values (``cells``: :func:`dpcore.ingest.text_cells`), the most
    frequent first (at most MAX_TEXTS), into its ``entry``; those held by few rows into ``rare``, for review."""
    texts, counts = value_counts(cells)
    if not texts:
        return
    order = np.argsort(-counts, kind="stable")[:MAX_TEXTS]
    entry["texts"] = [texts[i] for i in order]
    cut = max(RARE_ROWS, RARE_SHARE * n)
    few = sorted(texts[i] for i in order if counts[i] < cut)
    if few:
        rare[str(entry["name"])] = few


def read_schema_file(path) -> dict | list:
    """A declared schema from a file, as ``--schema`` and ``Synthesizer(schema=PATH)`` read it: a CSV codebook
    (``column,value`` rows; decoded as tables are) or a schema JSON -- complete (``"complete": true``, as
    ``dpcore schema --out`` writes it, excluded columns included) or partial (each entry wins field by field)."""
    import json
    from pathlib import Path

    from .data import read_text_file
    from .errors import DataError

    if str(path).lower().endswith(".csv"):
        try:
            text = read_text_file(Path(path), "codebook")
        except DataError as exc:
            raise DomainError(f"Cannot read the codebook: {exc}") from None
        except OSError as exc:
            raise DomainError(f"Cannot read the codebook {path} ({exc.strerror or exc}).") from None
        return codebook_from_csv(text)
    try:
        return json.loads(Path(path).read_bytes())  # UTF-8 (or -16, -32) as JSON is, whatever the locale
    except OSError as exc:
        raise DomainError(f"Cannot read the schema file {path} ({exc.strerror or exc}).") from None
    except ValueError as exc:
        raise DomainError(f"The schema file {path} is not valid JSON ({exc}).") from None


def codebook_from_csv(text: str) -> dict:
    """A declared schema from a CSV codebook: a header with ``column`` and ``value`` (each row one allowed value of a
    category column, in order).  Every listed column is declared categorical with exactly those values."""
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    fields = [f.strip().lower() for f in (reader.fieldnames or [])]
    if "column" not in fields or "value" not in fields:
        raise DomainError("A CSV codebook needs a header with 'column' and 'value' (one allowed value per row).")
    col_key = reader.fieldnames[fields.index("column")]  # type: ignore[index]
    val_key = reader.fieldnames[fields.index("value")]  # type: ignore[index]
    values: dict[str, list[str]] = {}
    for row in reader:
        col, val = (row.get(col_key) or "").strip(), (row.get(val_key) or "").strip()
        if not col:
            continue
        if not val:
            raise DomainError(f"The codebook lists an empty value for column {col!r}.")
        values.setdefault(col, [])
        if val not in values[col]:
            values[col].append(val)
    if not values:
        raise DomainError("The CSV codebook lists no values.")
    return {"attributes": [{"name": c, "kind": "categorical", "values": v} for c, v in values.items()]}
