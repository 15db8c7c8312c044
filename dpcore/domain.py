"""The public schema: attributes, their value sets, numeric and date bins; encode and decode.

A differentially private release is only private if everything *not* protected by
noise is public.  The value set of each attribute is such a thing: if it is read off
the private table, the release card reveals (for example) which rare countries occur.
So every attribute records, **field by field**, where its definition came from
(its *provenance*):

* ``"declared"`` -- written by the data owner from public knowledge (typed in the app,
  a schema JSON, a codebook, the bundled sample's documentation); costs nothing;
* ``"dp"`` -- released under differential privacy by :mod:`dpcore.discovery` from a
  share of the run's ε (thresholded partition selection for value sets, a noisy histogram
  over public bins for bounds, noisy counts for the role);
* ``"inferred"`` -- read off the private table without DP (:func:`infer_domain`, or the
  explicit ``schema_from_data=True`` mode of :func:`dpcore.tabular.prepare_table`).  Not
  private; the release card's guarantee must say so.

The fields that carry a provenance are the ones that can come from the data: ``kind``
(the column's role, with its integer/real subtype or date format), ``values`` for a
categorical attribute, ``lower`` and ``upper`` for a numeric or date attribute.  Bin
counts, the missing and "other" codes and the out-of-bounds policy are public settings,
never read off the data.  Provenance is sticky: :meth:`Attribute.with_fields` marks only
the fields it changes.  ``Attribute.source`` summarises it: the common provenance, or
``"mixed"``; the legacy value ``"data"`` is read as ``"inferred"``.

Encoding maps a raw table to integer codes ``0..size-1`` per attribute: the regular
codes, then (categorical with ``other=True``) one code for every value not listed, then
(``missing=True``) the missing code.  Numeric attributes are binned with public bounds
and either a bin count (equal width) or explicit edges; date attributes are binned in
whole units of their public granularity (year, month, day).  Values outside the bounds
are clipped and counted, or rejected, as the attribute says; a cell that does not parse
as a number or a date is refused or (``unparsable="missing"``) becomes a missing cell --
a row is never dropped.

Decoding gives labels (``numeric="interval"``/``"bins"``: ``[35, 40)``) or, with
``numeric="values"``, values in the input's shape: numbers drawn uniformly within their
bin (whole numbers for an integer attribute), dates drawn within their bin and printed in
the attribute's format, categories as their labels, missing as an empty cell.  The draw
is post-processing of released codes: it takes a NumPy generator, not privacy noise.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from .errors import DomainError

MISSING_LABEL = "(missing)"
#: Label of the code holding every value a categorical attribute does not list (``other=True``).
OTHER_LABEL = "(other)"
#: The texts a CSV cell may hold for "no value": read as missing (:func:`dpcore.data.read_table`).  A release writes
#: a missing cell empty, or as the one of them its schema names (:attr:`Attribute.missing_text`): "?" as UCI's
#: files write it, "NA" as R does, "NULL" as databases do.
MISSING_TOKENS = (
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA",
    "NULL", "NaN", "n/a", "nan", "null", "?",
)  # fmt: skip
KINDS = ("categorical", "numeric", "datetime")
#: Every provenance a field can have.
PROVENANCE = ("declared", "dp", "inferred")
#: Accepted on input: the legacy provenance names.
_PROVENANCE_ALIASES = {"data": "inferred"}
SOURCES = PROVENANCE + ("mixed",)
#: The fields of each kind that carry a provenance (everything else is a public setting).
PROVENANCE_FIELDS = {
    "categorical": ("kind", "values"),
    "numeric": ("kind", "lower", "upper"),
    "datetime": ("kind", "lower", "upper"),
}
GRANULARITIES = ("year", "month", "day")
#: The format a date attribute is printed in when none is given, by granularity.
DEFAULT_DATE_FORMAT = {"year": "%Y", "month": "%Y-%m", "day": "%Y-%m-%d"}
#: Above this many distinct values a text column is not turned into a categorical
#: attribute without an explicit choice: it is probably an identifier or free text.
MAX_INFERRED_CATEGORIES = 1000
#: Numeric columns with at most this many distinct values are inferred categorical.
NUMERIC_AS_CATEGORICAL = 20
_EPOCH = pd.Timestamp("1970-01-01")
#: Which provenance fields a change to a constructor field sets (with_fields).
_FIELDS_SET_BY = {
    "kind": ("kind",),
    "integer": ("kind",),
    "format": ("kind",),
    "granularity": ("kind",),
    "values": ("values",),
    "lower": ("lower",),
    "upper": ("upper",),
    "edges": ("lower", "upper"),
    "style": ("kind",),
    "missing_text": ("kind",),
}


def _normalise_source(src) -> str:
    src = _PROVENANCE_ALIASES.get(src, src)
    if src not in SOURCES:
        raise DomainError(f"A provenance must be one of {PROVENANCE} (got {src!r}).")
    return src


@dataclass(frozen=True)
class Attribute:
    """One column of the public schema.

    Categorical: ``values`` lists the labels (strings) in code order; ``other=True`` adds
    one code for every value not listed.
    Numeric: ``lower``/``upper`` bound the column publicly and ``edges`` (derived
    from ``bins`` when not given) cut it into ``len(edges) - 1`` intervals; the
    last interval is closed on the right.  ``integer=True`` decodes to whole numbers.
    Datetime: ``lower``/``upper`` are the first and last public unit of ``granularity``
    (given as dates, e.g. ``"2015-01-01"``; stored as days since 1970-01-01), cut into at
    most ``bins`` groups of whole units; ``format`` (strftime) reads and prints the dates.

    ``source`` gives every field the same provenance; ``provenance`` (field -> provenance)
    overrides it field by field.  After construction ``provenance`` holds every field of
    :data:`PROVENANCE_FIELDS` and ``source`` their summary.
    """

    name: str
    kind: str = "categorical"
    values: tuple[str, ...] = ()
    lower: float | None = None
    upper: float | None = None
    bins: int | None = None
    edges: tuple[float, ...] = ()
    missing: bool = False
    source: str = "declared"
    out_of_bounds: str = "clip"  # numeric/datetime: "clip" or "reject"
    integer: bool = False  # numeric: whole numbers
    granularity: str | None = None  # datetime: "year", "month" or "day"
    format: str | None = None  # datetime: strftime format of the input and output
    other: bool = False  # categorical: one code for the values not listed
    unparsable: str = "reject"  # numeric/datetime: "reject" or "missing" for cells that do not parse
    provenance: tuple[tuple[str, str], ...] = ()
    #: numeric: values whose bin decodes to the value itself (a frequent value with a bin of its own,
    #: ``[p - h, p + h)``: 17.5 comes back as 17.5, not as a draw between 17.45 and 17.55; a whole number's bin
    #: holds it alone).  Released under DP (frequent values) or declared; the bins between two points hold the
    #: values not released (:func:`dpcore.mechanisms.decouple.gap_codes`)
    points: tuple[float, ...] = ()
    #: categorical: listed values a public vocabulary, or the gaps between released range labels, added to a
    #: discovered set (:mod:`dpcore.vocabularies`), not released from the data; measured like every value, and
    #: fitted as empty where measured under 1σ
    #: (:data:`dpcore.mechanisms.decouple.WORD_Z`)
    vocabulary: tuple[str, ...] = ()
    #: datetime with a time of day in its format: the shares of the TIME_SLOTS slots a date's time is drawn from --
    #: exactly midnight, then each hour of the day (released under DP by discovery,
    #: :func:`dpcore.discovery.time_profile`, or declared); empty: drawn uniformly over the day
    hours: tuple[float, ...] = ()
    #: numeric: how its numbers are written (:data:`NUMBER_STYLES`: "" plain, "$,.2" a currency sign, thousands
    #: grouped, two decimals; chosen under DP with the roles, :func:`dpcore.ingest.private_roles`, or declared)
    style: str = ""
    #: how the release writes a missing cell: "" (empty) or one of :data:`MISSING_TOKENS` ("?", "NA", "NULL"...) as
    #: the source file wrote them (chosen under DP with the roles, :func:`dpcore.ingest.private_roles`, or declared)
    missing_text: str = ""
    #: numeric: texts that are not numbers kept as values of their own, after the bins ("<0.5" for a lab value under
    #: its assay's limit, ">0.5" above it, "ND"): a cell holding one gets its code and the release writes the text
    #: back; any other cell that is not a number is unparsable.  Released under DP with the bounds (thresholded
    #: partition selection over the column's cells that are not numbers, :func:`dpcore.discovery.discover_values`)
    #: or declared.  datetime: likewise, texts that are not dates in its format ("unknown" beside visit dates)
    texts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise DomainError("Every attribute needs a non-empty name.")
        if self.kind not in KINDS:
            raise DomainError(f"Attribute {self.name!r}: kind must be one of {KINDS}, not {self.kind!r}.")
        try:
            self._set_provenance()
        except DomainError as exc:
            raise DomainError(f"Attribute {self.name!r}: {exc}") from None
        if self.out_of_bounds not in ("clip", "reject"):
            raise DomainError(f"Attribute {self.name!r}: out_of_bounds must be 'clip' or 'reject'.")
        if self.unparsable not in ("reject", "missing"):
            raise DomainError(f"Attribute {self.name!r}: unparsable must be 'reject' or 'missing'.")
        if self.kind == "categorical":
            vals = tuple(_canonical_text(v) for v in self.values)
            if not vals and not self.missing and not self.other:
                raise DomainError(f"Attribute {self.name!r}: a categorical attribute needs at least one value.")
            if len(set(vals)) != len(vals):
                dup = sorted({v for v in vals if vals.count(v) > 1})[:5]
                raise DomainError(f"Attribute {self.name!r}: repeated values {dup}; list each value once.")
            if MISSING_LABEL in vals or OTHER_LABEL in vals:
                raise DomainError(
                    f"Attribute {self.name!r}: {MISSING_LABEL!r} and {OTHER_LABEL!r} are reserved; tick 'missing' "
                    "or 'other' instead of listing them."
                )
            object.__setattr__(self, "values", vals)
            added = tuple(_canonical_text(v) for v in self.vocabulary)
            if any(v not in vals for v in added):
                raise DomainError(f"Attribute {self.name!r}: every vocabulary value must be one of its values.")
            object.__setattr__(self, "vocabulary", added)
        elif self.kind == "numeric":
            self._check_numeric()
        else:
            self._check_datetime()
        if self.points and self.kind != "numeric":
            raise DomainError(f"Attribute {self.name!r}: points are for numeric attributes.")
        if self.style:
            if not isinstance(self.style, str) or self.kind != "numeric":
                raise DomainError(f"Attribute {self.name!r}: a style is for numeric attributes.")
            _style_parts(self.style)
        if not isinstance(self.missing_text, str) or self.missing_text not in MISSING_TOKENS:
            raise DomainError(
                f"Attribute {self.name!r}: missing_text must be one of {list(MISSING_TOKENS)} (how a missing cell is "
                f"written), not {self.missing_text!r}."
            )
        check_missing_text(self.name, self.missing_text, self.values)
        if self.vocabulary and self.kind != "categorical":
            raise DomainError(f"Attribute {self.name!r}: vocabulary values are for categorical attributes.")
        if self.texts:
            self._check_texts()
        if self.hours:
            hours = tuple(float(h) for h in self.hours)
            if self.kind != "datetime" or not _has_time(self.format):
                raise DomainError(f"Attribute {self.name!r}: hours are for dates written with a time of day.")
            if len(hours) != TIME_SLOTS or not all(math.isfinite(h) and h >= 0 for h in hours) or sum(hours) <= 0:
                raise DomainError(
                    f"Attribute {self.name!r}: hours must be {TIME_SLOTS} shares, at least 0 and not all 0 "
                    "(exactly midnight, then each hour of the day)."
                )
            object.__setattr__(self, "hours", hours)

    def _set_provenance(self) -> None:
        fields = PROVENANCE_FIELDS[self.kind]
        src = _normalise_source(self.source)
        given = dict(self.provenance.items() if isinstance(self.provenance, Mapping) else self.provenance)
        unknown = set(given) - set(fields)
        if unknown:
            raise DomainError(f"provenance given for {sorted(unknown)}, but a {self.kind} attribute has {fields}.")
        if src == "mixed" and set(given) != set(fields):
            raise DomainError(f"source 'mixed' needs a provenance for each of {fields}.")
        full = {f: _normalise_source(given.get(f, src)) for f in fields}
        if "mixed" in full.values():
            raise DomainError(f"a field's provenance must be one of {PROVENANCE}.")
        distinct = set(full.values())
        object.__setattr__(self, "provenance", tuple((f, full[f]) for f in fields))
        object.__setattr__(self, "source", distinct.pop() if len(distinct) == 1 else "mixed")

    def _check_numeric(self) -> None:
        name = self.name
        if self.edges:
            edges = tuple(float(e) for e in self.edges)
            if len(edges) < 2 or any(not math.isfinite(e) for e in edges):
                raise DomainError(f"Attribute {name!r}: give at least two finite bin edges.")
            if any(b <= a for a, b in itertools.pairwise(edges)):
                raise DomainError(f"Attribute {name!r}: bin edges must be strictly increasing.")
            lower, upper = edges[0], edges[-1]
            if self.lower is not None and not math.isclose(float(self.lower), lower):
                raise DomainError(f"Attribute {name!r}: the first edge must equal the lower bound.")
            if self.upper is not None and not math.isclose(float(self.upper), upper):
                raise DomainError(f"Attribute {name!r}: the last edge must equal the upper bound.")
        else:
            if self.lower is None or self.upper is None:
                raise DomainError(f"Attribute {name!r}: a numeric attribute needs public lower and upper bounds.")
            try:
                lower, upper = float(self.lower), float(self.upper)
            except (TypeError, ValueError):
                raise DomainError(f"Attribute {name!r}: bounds must be numbers.") from None
            if not (math.isfinite(lower) and math.isfinite(upper)) or upper <= lower:
                raise DomainError(
                    f"Attribute {name!r}: bounds must be finite with lower < upper (got {lower}, {upper})."
                )
            bins = self.bins if self.bins is not None else 10
            if not isinstance(bins, (int, np.integer)) or not 1 <= int(bins) <= 10_000:
                raise DomainError(f"Attribute {name!r}: the bin count must be an integer from 1 to 10000.")
            edges = tuple(float(e) for e in np.linspace(lower, upper, int(bins) + 1))
        if self.integer and math.floor(edges[-1]) < math.ceil(edges[0]):
            raise DomainError(f"Attribute {name!r}: integer bounds [{edges[0]:g}, {edges[-1]:g}] hold no whole number.")
        points = tuple(sorted({float(p) for p in self.points}))
        if any(not (math.isfinite(p) and edges[0] <= p <= edges[-1]) for p in points):
            raise DomainError(f"Attribute {name!r}: every point must lie within the bounds.")
        bins_of = np.clip(np.searchsorted(edges, points, side="right") - 1, 0, len(edges) - 2)
        if len(set(bins_of.tolist())) != len(points):
            raise DomainError(f"Attribute {name!r}: each point needs a bin of its own.")
        last = len(edges) - 2
        alone = (whole_span(edges[i], edges[i + 1], i == last) == (p, p) for p, i in zip(points, bins_of))
        if self.integer and not all(alone):
            raise DomainError(f"Attribute {name!r}: a whole number's point must be the only whole number of its bin.")
        object.__setattr__(self, "points", points)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "lower", edges[0])
        object.__setattr__(self, "upper", edges[-1])
        object.__setattr__(self, "bins", len(edges) - 1)
        object.__setattr__(self, "values", ())
        object.__setattr__(self, "integer", bool(self.integer))

    def _check_texts(self) -> None:
        name = self.name
        if self.kind not in ("numeric", "datetime"):
            raise DomainError(f"Attribute {name!r}: texts kept beside the values are for numeric and date attributes.")
        if isinstance(self.texts, str):
            raise DomainError(f"Attribute {name!r}: 'texts' must be a list of texts.")
        texts = tuple(_canonical_text(t) for t in self.texts)
        if any(not isinstance(t, str) for t in self.texts):
            raise DomainError(f"Attribute {name!r}: every entry of 'texts' must be a text, such as \"<0.5\".")
        if len(set(texts)) != len(texts):
            dup = sorted({t for t in texts if texts.count(t) > 1})[:5]
            raise DomainError(f"Attribute {name!r}: repeated texts {dup}; list each once.")
        blank = [t for t in texts if t in MISSING_TOKENS or t == NONE_TEXT or t in (MISSING_LABEL, OTHER_LABEL)]
        if blank:
            raise DomainError(
                f"Attribute {name!r}: {blank[0]!r} reads as a missing cell, so it cannot be one of its texts; allow "
                "missing values instead."
            )
        cells = pd.Series(list(texts), dtype=object)
        if self.kind == "datetime":
            read, what = np.isfinite(parse_dates(cells, self.format)), f"a date in its format {self.format!r}"
        else:
            read, what = np.isfinite(parse_numbers(cells, self.style).to_numpy(dtype=float)), "a number"
        if read.any():
            shown = texts[int(np.flatnonzero(read)[0])]
            raise DomainError(
                f"Attribute {name!r}: {shown!r} reads as {what}, so it belongs in a bin, not among its texts."
            )
        object.__setattr__(self, "texts", texts)

    def _check_datetime(self) -> None:
        name = self.name
        gran = self.granularity or "day"
        if gran not in GRANULARITIES:
            raise DomainError(f"Attribute {name!r}: granularity must be one of {GRANULARITIES}, not {gran!r}.")
        if self.lower is None or self.upper is None:
            raise DomainError(f"Attribute {name!r}: a date attribute needs public first and last dates.")
        lo = int(unit_index(_as_days(self.lower, name), gran))
        hi = int(unit_index(_as_days(self.upper, name), gran))
        if hi < lo:
            raise DomainError(f"Attribute {name!r}: the last date comes before the first.")
        units = hi - lo + 1
        bins = self.bins if self.bins is not None else min(units, 10)
        if not isinstance(bins, (int, np.integer)) or not 1 <= int(bins) <= 10_000:
            raise DomainError(f"Attribute {name!r}: the bin count must be an integer from 1 to 10000.")
        edges = equal_date_edges(lo, hi, int(bins), gran)
        if self.edges:
            edges = self._date_edges(gran, lo, hi, edges)
        fmt = self.format or DEFAULT_DATE_FORMAT[gran]
        if not isinstance(fmt, str) or "%" not in fmt:
            raise DomainError(f"Attribute {name!r}: format must be a strftime pattern such as '%Y-%m-%d'.")
        object.__setattr__(self, "granularity", gran)
        object.__setattr__(self, "format", fmt)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "lower", edges[0])
        object.__setattr__(self, "upper", float(unit_start_days(np.array([hi]), gran)[0]))
        object.__setattr__(self, "bins", len(edges) - 1)
        object.__setattr__(self, "values", ())

    def _date_edges(self, gran: str, lo: int, hi: int, even: tuple[float, ...]) -> tuple[float, ...]:
        """A date attribute's own bin edges (days since 1970-01-01, or dates): each a first day of its unit,
        increasing, from the first unit to the one after the last -- bins over where the dates are and one over a
        far, frequent date (1900-01-01 written for "no date"), :func:`dpcore.tabular._far_date_edges`."""
        name = self.name
        given = tuple(_as_days(e, name) for e in self.edges)
        if given == even:
            return even
        units = unit_index(np.asarray(given), gran)
        starts = tuple(float(e) for e in unit_start_days(units, gran))
        if given != starts or len(given) < 2 or any(b <= a for a, b in zip(given, given[1:])):
            raise DomainError(
                f"Attribute {name!r}: a date attribute's edges must be increasing first days of its {gran}s."
            )
        if units[0] != lo or units[-1] != hi + 1:
            raise DomainError(
                f"Attribute {name!r}: its edges must run from its first date to the {gran} after its last."
            )
        return given

    def _even_date_edges(self) -> bool:
        """Whether a date attribute's edges are the equal bins its lower, upper and bins give (written as those)."""
        gran = self._unit
        lo, hi = int(unit_index(self._lower, gran)), int(unit_index(self._upper, gran))
        return equal_date_edges(lo, hi, int(self.bins or 1), gran) == tuple(self.edges)

    # ------------------------------------------------------------- checked fields
    # __post_init__ gives a numeric or date attribute both bounds and a date attribute its granularity and format;
    # these read them with the types they then have.
    @property
    def _lower(self) -> float:
        assert self.lower is not None, f"{self.name!r} is categorical: it has no bounds"
        return self.lower

    @property
    def _upper(self) -> float:
        assert self.upper is not None, f"{self.name!r} is categorical: it has no bounds"
        return self.upper

    @property
    def _unit(self) -> str:
        assert self.granularity is not None, f"{self.name!r} is not a date attribute"
        return self.granularity

    @property
    def _date_format(self) -> str:
        assert self.format is not None, f"{self.name!r} is not a date attribute"
        return self.format

    # ------------------------------------------------------------------ provenance
    @property
    def field_sources(self) -> dict[str, str]:
        """Provenance of every field that can come from the data: field -> "declared" / "dp" / "inferred"."""
        return dict(self.provenance)

    @property
    def card_source(self) -> str | dict[str, str]:
        """The card's ``source``: one string when every field shares a provenance, else field -> provenance."""
        return self.source if self.source != "mixed" else self.field_sources

    def with_fields(self, source: str = "declared", **changes) -> Attribute:
        """A copy with ``changes`` applied and exactly the changed fields marked ``source`` (sticky provenance:
        one edited field never makes the others declared).  A new ``kind`` re-marks every field."""
        kind = changes.get("kind", self.kind)
        prov = {} if kind != self.kind else self.field_sources
        for key in changes:
            for f in _FIELDS_SET_BY.get(key, ()):
                prov[f] = source
        prov = {f: prov.get(f, source) for f in PROVENANCE_FIELDS[kind]}
        if ("values" in changes or kind != "categorical") and "vocabulary" not in changes:
            changes["vocabulary"] = ()  # a value list given anew: none of it was added by a vocabulary
        if {"format", "kind", "granularity"} & set(changes) and "hours" not in changes:
            changes["hours"] = ()  # a time profile belongs to the dates it was read from
        if {"lower", "upper", "bins", "kind", "granularity"} & set(changes):
            changes.setdefault("edges", ())  # derived again from the new bounds and bin count
        if kind != self.kind and "texts" not in changes:
            changes["texts"] = ()  # texts kept beside numbers (dates) belong to a numeric (date) column
        return replace(self, **changes, source="mixed", provenance=tuple(prov.items()))

    # ------------------------------------------------------------------ sizes
    @property
    def n_regular(self) -> int:
        if self.kind == "categorical":
            return len(self.values) + (1 if self.other else 0)
        return len(self.edges) - 1 + len(self.texts)

    @property
    def n_bins(self) -> int:
        """A numeric or date attribute's bins: its codes 0..n_bins-1, in order (its texts and missing code follow);
        0 for a categorical one."""
        return 0 if self.kind == "categorical" else len(self.edges) - 1

    @property
    def size(self) -> int:
        return self.n_regular + (1 if self.missing else 0)

    @property
    def other_code(self) -> int | None:
        return len(self.values) if (self.kind == "categorical" and self.other) else None

    def labels(self) -> list[str]:
        """Human-readable label of every code, in code order."""
        if self.kind == "categorical":
            out = list(self.values) + ([OTHER_LABEL] if self.other else [])
        elif self.kind == "numeric":
            last = len(self.edges) - 2
            out = [
                _whole_label(a, b, i == last) if self.integer else interval_label(a, b, i == last)
                for i, (a, b) in enumerate(zip(self.edges, self.edges[1:]))
            ]
            for i, p in self._point_bins().items():
                out[i] = f"{p:g}"
            out += list(self.texts)
        else:
            out = self._date_labels() + list(self.texts)
        if self.missing:
            out.append(MISSING_LABEL)
        return out

    def _point_bins(self) -> dict[int, float]:
        """Bin index -> the point it decodes to (``points``)."""
        if not self.points:
            return {}
        edges = np.asarray(self.edges, dtype=float)
        idx = np.clip(np.searchsorted(edges, self.points, side="right") - 1, 0, len(edges) - 2)
        return {int(i): float(p) for i, p in zip(idx, self.points)}

    def _date_labels(self) -> list[str]:
        fmt = DEFAULT_DATE_FORMAT[self._unit]
        edges = np.asarray(self.edges)
        first = _format_days(edges[:-1], fmt)
        last_unit = unit_start_days(unit_index(edges[1:], self._unit) - 1, self._unit)
        last = _format_days(last_unit, fmt)
        return [a if a == b else f"[{a}, {b}]" for a, b in zip(first, last)]

    # --------------------------------------------------------------- encoding
    def encode(self, column: pd.Series) -> tuple[np.ndarray, int]:
        """Codes for a raw column, and the number of clipped values.

        Raises :class:`DomainError` with a message naming the offending values.
        """
        is_missing = np.array(column.isna().to_numpy(), dtype=bool)
        if self.kind != "categorical":
            is_missing |= none_cells(column)  # "None" in numbers and dates: a missing cell, not an unparsable one
        present = ~is_missing
        clipped = 0
        if self.kind == "categorical":
            codes = np.full(len(column), self.n_regular if self.missing else 0, dtype=np.int64)
            raw = column[present]
            lookup = {v: i for i, v in enumerate(self.values)}
            # Hash the column once in C, then look up only its distinct values.
            uniq_idx, uniques = pd.factorize(raw, sort=False)
            uniq_code, blank = _lookup_codes(uniques, lookup)
            if blank.any():  # a cell of spaces (or an unlisted "None") is an empty cell
                is_missing[np.flatnonzero(present)[blank[uniq_idx]]] = True
                uniq_code[blank] = 0  # placeholder: set to the missing code below
            if self.other:
                uniq_code[uniq_code < 0] = len(self.values)
            mapped = uniq_code[uniq_idx] if len(uniq_code) else np.zeros(0, np.int64)
            unknown = mapped < 0
            if unknown.any():
                not_listed = [_canonical_text(u) for u, c in zip(uniques, uniq_code) if c < 0]
                shown = ", ".join(repr(b) for b in not_listed[:5])
                raise DomainError(
                    f"Column {self.name!r} has {int(unknown.sum())} value(s) not in its declared value list "
                    f"(e.g. {shown}). Add them to the schema, tick 'other' for it, or clean the column."
                )
            codes[present] = mapped
            if blank.any():
                codes[is_missing] = self.n_regular if self.missing else 0
            self._check_missing(is_missing)
            return codes, clipped
        if self.kind == "numeric":
            raw = parse_numbers(column[present], self.style)
            bad = raw.isna().to_numpy()
            what, bad_word = "numeric", "non-numeric"
            vals = raw.to_numpy(dtype=float)
        else:
            days = parse_dates(column[present], self.format)
            bad = np.isnan(days)
            what, bad_word = "a date", "unparsable"
            vals = unit_start_days(unit_index(days, self._unit), self._unit).astype(float)
            vals[bad] = np.nan
        text_rows, text_codes = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        if bad.any() and self.texts:  # a listed text: a code of its own after the bins
            rows = np.flatnonzero(present)  # aligned with bad and vals
            uniq_idx, uniques = pd.factorize(column.iloc[rows[bad]], sort=False)
            lookup = {t: self.n_bins + i for i, t in enumerate(self.texts)}
            found = np.array([lookup.get(_canonical_text(u), -1) for u in uniques], dtype=np.int64)[uniq_idx]
            listed = found >= 0
            if listed.any():
                text_rows, text_codes = rows[bad][listed], found[listed]
                keep = np.ones(len(rows), dtype=bool)
                keep[np.flatnonzero(bad)[listed]] = False
                present[text_rows] = False
                vals, bad = vals[keep], bad[keep]
        if bad.any():
            if self.unparsable == "reject":
                examples = ", ".join(repr(str(v)) for v in pd.unique(column[present][bad])[:5])
                hint = f" (format {self.format!r})" if self.kind == "datetime" else ""
                raise DomainError(
                    f"Column {self.name!r} is declared {what} but has {int(bad.sum())} {bad_word} value(s){hint} "
                    f"(e.g. {examples}). Declare it categorical, clean the column, or treat such cells as missing."
                )
            is_missing[np.flatnonzero(present)[bad]] = True
            present &= ~is_missing
            vals = vals[~bad]
        self._check_missing(is_missing)
        codes = np.full(len(column), self.n_regular if self.missing else 0, dtype=np.int64)
        top = self.upper if self.kind == "numeric" else self.edges[-1]
        outside = (vals < self.lower) | ~np.isfinite(vals)
        outside |= (vals > top) if self.kind == "numeric" else (vals >= top)
        n_out = int(outside.sum())
        if n_out:
            if self.out_of_bounds == "reject":
                raise DomainError(
                    f"Column {self.name!r} has {n_out} value(s) outside its public bounds "
                    f"[{self._bound_text(self._lower)}, {self._bound_text(self._upper)}] (infinite values count as "
                    "outside). Widen the bounds or choose 'clip'."
                )
            vals = np.clip(np.nan_to_num(vals, nan=self._lower, posinf=top, neginf=self._lower), self._lower, top)
            clipped = n_out
        idx = np.searchsorted(np.asarray(self.edges), vals, side="right") - 1
        codes[present] = np.clip(idx, 0, len(self.edges) - 2)
        codes[text_rows] = text_codes
        return codes, clipped

    def _check_missing(self, is_missing: np.ndarray) -> None:
        n_missing = int(is_missing.sum())
        if n_missing and not self.missing:
            raise DomainError(
                f"Column {self.name!r} has {n_missing} missing value(s) but its schema has no missing category: "
                "allow missing values for it, or clean the column."
            )

    def _bound_text(self, v: float) -> str:
        if self.kind == "datetime":
            return _format_days(np.array([v]), DEFAULT_DATE_FORMAT[self._unit])[0]
        return f"{v:g}"

    def decode(
        self,
        codes: np.ndarray,
        numeric: str = "interval",
        rng: np.random.Generator | None = None,
        count_noise: float | None = None,
    ) -> pd.Series:
        """Labels or values for codes.

        ``numeric`` chooses how a numeric or date bin is shown: ``"interval"`` or ``"bins"``
        (``[20, 25)``), ``"values"`` (the input's shape: a number drawn within the bin, a
        whole number for an integer attribute, a date in the attribute's format; needs
        ``rng``), ``"midpoint"`` or ``"uniform"`` (a real draw in the bin; needs ``rng``).
        Missing decodes to an empty value; "other" to :data:`OTHER_LABEL`.

        With ``count_noise`` (the standard deviation of the released one-way counts as a share of the rows, public:
        the run's σ over n), ``"values"`` places a value in its bin by the slope of the rows' density across the
        bins around it, shrunk by how much of it that noise could make (:meth:`_bin_slopes`); without it, and for
        ``"uniform"``, uniformly.
        """
        codes = np.asarray(codes, dtype=np.int64)
        if codes.size and (codes.min() < 0 or codes.max() >= self.size):
            raise DomainError(f"Codes for {self.name!r} must lie in 0..{self.size - 1}.")
        if numeric not in ("interval", "bins", "values", "midpoint", "uniform"):
            raise DomainError(
                f"Unknown numeric decoding {numeric!r}: use 'values', 'bins' ('interval'), 'midpoint' or 'uniform'."
            )
        missing = codes == self.n_regular if self.missing else np.zeros(codes.shape, bool)
        if self.kind == "categorical" or numeric in ("interval", "bins"):
            labels = np.array(self.labels(), dtype=object)
            out = labels[codes]
            out[missing] = None
            return pd.Series(out, dtype=object)
        if numeric != "midpoint" and rng is None:
            raise DomainError("Decoding bins as values drawn within each bin needs a random generator.")
        out = self._decode_bins(codes, missing, numeric, rng, count_noise)
        texts = (codes >= self.n_bins) & (codes < self.n_bins + len(self.texts))
        if texts.any():  # a kept text comes back as written
            out = out.astype(object)
            out[texts] = np.array(self.texts, dtype=object)[codes[texts] - self.n_bins]
        return out

    def _decode_bins(self, codes, missing, numeric: str, rng, count_noise: float | None = None) -> pd.Series:
        edges = np.asarray(self.edges)
        safe = np.minimum(codes, len(edges) - 2)
        lo, hi = edges[safe], edges[safe + 1]
        # "values": a value's place in its bin follows the slope of the released rows' density across the bins
        # around it (post-processing of the rows); "uniform" draws uniformly, as it says.
        slope = self._bin_slopes(codes, count_noise)[safe] if numeric == "values" and count_noise is not None else None
        if self.kind == "datetime":
            return self._decode_dates(lo, hi, missing, numeric, rng, slope)
        if numeric == "midpoint":
            vals = (lo + hi) / 2.0
        elif numeric == "values" and self.integer:
            whole_numbers = self._decode_integers(lo, hi, safe, missing, rng, slope)
            return styled_numbers(whole_numbers, self.style) if self.style else whole_numbers
        else:
            assert rng is not None  # refused above: only "midpoint" draws nothing
            vals = lo + (hi - lo) * _shaped(rng.random(codes.shape), slope)
            if numeric == "values":
                vals = self._round_in_bins(vals, lo, hi, safe == len(edges) - 2)
        points = self._point_bins()
        if points and numeric in ("values", "midpoint"):  # a point's bin decodes to the point
            point_of = np.full(len(edges) - 1, np.nan)
            point_of[list(points)] = list(points.values())
            vals = np.where(np.isnan(point_of[safe]), vals, point_of[safe])
        out = pd.Series(vals.astype(float))
        out[missing] = np.nan
        return out if not (self.style and numeric == "values") else styled_numbers(out, self.style)

    def _round_in_bins(self, vals, lo, hi, last) -> np.ndarray:
        """Values drawn within their bins, to three significant digits of the narrowest bin (public: from the
        edges), not 16 digits of float noise -- or to the decimals the column's style writes (".1": 4.8, not 4.827);
        rounding moves a value out of its bin only where the bin holds no number with that many decimals."""
        edges = np.asarray(self.edges, dtype=float)
        widths = np.diff(edges)
        real = widths > 1e-9 * max(1.0, float(np.abs(edges).max()))  # not a sliver of float error between two edges
        width = float(widths[real].min()) if np.any(real) else 0.0
        if not (math.isfinite(width) and width > 0):
            return vals
        written = style_decimals(self.style)
        decimals = (
            written if written is not None else int(np.clip(2 - math.floor(math.log10(width) + 1e-9), 0, 12))
        )  # 0.0999999999 is a tenth
        scale = 10.0**decimals
        out = np.round(vals * scale) / scale
        over = (out > hi) | ((out >= hi) & ~last)
        out = np.where(over, np.floor(vals * scale) / scale, out)
        return np.where(out < lo, np.ceil(vals * scale) / scale, out)

    def _bin_slopes(self, codes: np.ndarray, count_noise: float = 0.0) -> np.ndarray:
        """Per bin, the slope ``s`` of the linear density ``1 + s (u - 1/2)`` a value's place ``u`` in its bin (0 at
        the lower edge, 1 at the upper) is drawn from: the slope of the rows' density (rows per unit) between the
        middles of the neighbouring bins (one side at an end), relative to the bin's own, within [-2, 2] so the
        density stays non-negative.  A bin's rows stay in it and keep their count; only where in the bin they lie
        follows the bins around it (a heavy tail's rows lean toward its lower edge, as real rows do, instead of
        spreading evenly and pulling its mean and median up).

        The counts carry noise (``count_noise``: its standard deviation as a share of the rows), so a slope is
        shrunk by the share of it that noise alone would make: ``s · max(0, 1 - sd(s)² / s²)``, sd(s) from the two
        counts it is read from.  On a few hundred rows at ε = 1 that leaves the rows nearly uniform in their bins,
        on tens of thousands the slope stands.  Point bins and bins without width neither lean nor give a slope,
        nor does a neighbour less than half a bin's width (a code's day beside a year's bin: its density is the
        code's, not the bin's).  Read from ``codes`` and public σ alone: post-processing of the released rows."""
        edges = np.asarray(self.edges, dtype=float)
        k = len(edges) - 1
        slopes = np.zeros(max(k, 1))
        if k < 2:
            return slopes
        counts = np.bincount(codes[(codes >= 0) & (codes < k)], minlength=k)[:k].astype(float)
        sigma = max(0.0, float(count_noise)) * len(codes)  # the counts' noise, in rows of this table
        width = np.diff(edges)
        mid = (edges[:-1] + edges[1:]) / 2.0
        usable = width > 0
        usable[list(self._point_bins())] = False
        density = np.where(usable, counts / np.where(usable, width, 1.0), 0.0)

        def neighbour(j: int, i: int) -> bool:
            return 0 <= j < k and bool(usable[j]) and width[j] >= width[i] / 2

        for i in map(int, np.flatnonzero(usable & (counts > 0))):
            left = i - 1 if neighbour(i - 1, i) else i
            right = i + 1 if neighbour(i + 1, i) else i
            if left == right:
                continue
            span = mid[right] - mid[left]
            s = (density[right] - density[left]) / span * width[i] / density[i]
            sd = sigma * math.hypot(1.0 / width[right], 1.0 / width[left]) / span * width[i] / density[i]
            shrink = max(0.0, 1.0 - (sd / s) ** 2) if s != 0 else 0.0
            slopes[i] = float(np.clip(s * shrink, -2.0, 2.0))
        return slopes

    def _decode_integers(self, lo, hi, bin_idx, missing, rng, slope=None) -> pd.Series:
        last = bin_idx == len(self.edges) - 2
        first_int = np.ceil(lo)
        # Bins are [a, b) except the last, [a, b]: the whole numbers a bin holds.
        last_int = np.where(last, np.floor(hi), np.ceil(hi) - 1)
        empty = last_int < first_int
        fallback = np.clip(np.round((lo + hi) / 2.0), math.ceil(self._lower), math.floor(self._upper))
        width = np.maximum(last_int - first_int + 1, 1)
        vals = first_int + np.floor(_shaped(rng.random(lo.shape), slope) * width)
        vals = np.where(empty, fallback, np.minimum(vals, last_int))
        out = pd.Series(vals.astype(np.int64), dtype="Int64")
        out[missing] = pd.NA
        return out

    def _decode_dates(self, lo, hi, missing, numeric, rng, slope=None) -> pd.Series:
        if numeric == "midpoint":
            days = np.floor((lo + hi) / 2.0)
        elif _has_time(self.format) and self.hours and np.all(hi - lo >= 1.0):
            # a whole day within the bin, then a time of day from the released profile: midnight exactly, or an
            # hour and a uniform moment within it (a call log's business hours stay business hours)
            weights = np.asarray(self.hours, dtype=float) / float(sum(self.hours))
            slot = rng.choice(TIME_SLOTS, size=lo.shape, p=weights)
            moment = np.where(slot == 0, 0.0, (slot - 1 + rng.random(lo.shape)) / 24.0)
            days = lo + np.floor(_shaped(rng.random(lo.shape), slope) * (hi - lo)) + moment
        elif _has_time(self.format):
            days = lo + (hi - lo) * _shaped(rng.random(lo.shape), slope)
        else:
            days = lo + np.floor(_shaped(rng.random(lo.shape), slope) * (hi - lo))
        text = np.array(_format_days(days, self._date_format), dtype=object)
        text[missing] = None
        return pd.Series(text, dtype=object)

    # ---------------------------------------------------------------- json
    def to_dict(self) -> dict:
        d: dict = {"name": self.name, "kind": self.kind, "source": self.card_source, "missing": self.missing}
        if self.kind == "categorical":
            d["values"] = list(self.values)
            if self.other:
                d["other"] = True
            if self.vocabulary:
                d["vocabulary"] = list(self.vocabulary)
        elif self.kind == "numeric":
            d.update(lower=self.lower, upper=self.upper, edges=list(self.edges), out_of_bounds=self.out_of_bounds)
            if self.integer:
                d["integer"] = True
            if self.points:
                d["points"] = list(self.points)
            if self.style:
                d["style"] = self.style
        else:
            fmt = DEFAULT_DATE_FORMAT[self._unit]
            d.update(
                lower=_format_days(np.array([self.lower]), fmt)[0],
                upper=_format_days(np.array([self.upper]), fmt)[0],
                bins=self.bins,
                granularity=self.granularity,
                format=self.format,
                out_of_bounds=self.out_of_bounds,
            )
            if not self._even_date_edges():  # its own bins: each bin's first date, then the day after the last
                d["edges"] = _format_days(np.asarray(self.edges), "%Y-%m-%d")
            if self.hours:
                d["hours"] = list(self.hours)
        if self.kind != "categorical" and self.unparsable != "reject":
            d["unparsable"] = self.unparsable
        if self.missing_text:
            d["missing_text"] = self.missing_text
        if self.texts:
            d["texts"] = list(self.texts)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Attribute:
        if not isinstance(d, dict) or "name" not in d:
            raise DomainError("Each attribute in a schema must be an object with at least a 'name'.")
        extra = set(d) - ATTRIBUTE_KEYS
        if extra:
            raise DomainError(f"Attribute {d.get('name')!r}: unknown schema keys {sorted(extra)}.")
        kw = dict(d)
        for key in ("values", "edges", "points", "vocabulary", "hours", "texts"):
            if key in kw:
                if not isinstance(kw[key], (list, tuple)):
                    raise DomainError(f"Attribute {d['name']!r}: {key!r} must be a list.")
                kw[key] = tuple(kw[key])
        if isinstance(kw.get("source"), dict):
            kw["provenance"] = tuple(kw["source"].items())
            kw["source"] = "mixed"
        try:
            return cls(**kw)
        except TypeError as exc:  # wrong value types in hand-written JSON
            raise DomainError(f"Attribute {d.get('name')!r}: {exc}") from None


def check_missing_text(name: str, text: str, values) -> None:
    """Refuse a missing-value text that is also one of a column's values ("NA" for North America and for missing):
    the release could not tell them apart."""
    if text and text in tuple(values or ()):
        raise DomainError(
            f"Attribute {name!r}: {text!r} is one of its values, so it cannot also be how a missing cell is written: "
            "choose another missing_text or leave it empty."
        )


#: The keys an attribute's JSON may hold.
ATTRIBUTE_KEYS = frozenset(
    {
        "name",
        "kind",
        "values",
        "lower",
        "upper",
        "bins",
        "edges",
        "missing",
        "source",
        "out_of_bounds",
        "integer",
        "granularity",
        "format",
        "other",
        "unparsable",
        "points",
        "vocabulary",
        "hours",
        "style",
        "missing_text",
        "texts",
    }
)


# ------------------------------------------------------------------ dates
def _as_days(v, name: str) -> float:
    """A public date bound (ISO text, a timestamp, or days since 1970-01-01) as days since 1970-01-01."""
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        if not math.isfinite(float(v)):
            raise DomainError(f"Attribute {name!r}: date bounds must be finite.")
        return float(v)
    try:
        ts = pd.Timestamp(v)
    except (TypeError, ValueError):
        raise DomainError(f"Attribute {name!r}: {v!r} is not a date (write it as YYYY-MM-DD).") from None
    if ts is pd.NaT:
        raise DomainError(f"Attribute {name!r}: a date bound is missing.")
    if ts.tzinfo is not None:
        ts = ts.tz_convert(None)
    return (ts - _EPOCH) / pd.Timedelta(days=1)


def unit_index(days, granularity: str) -> np.ndarray:
    """The whole unit (day, month or year since 1970) each time (days since 1970-01-01, may be fractional) is in."""
    days = np.asarray(days, dtype=float)
    finite = np.isfinite(days)
    d = np.where(finite, np.floor(np.where(finite, days, 0.0)), 0).astype(np.int64).astype("datetime64[D]")
    if granularity == "day":
        out = d.astype(np.int64)
    elif granularity == "month":
        out = d.astype("datetime64[M]").astype(np.int64)
    else:
        out = d.astype("datetime64[Y]").astype(np.int64)
    return out


def equal_date_edges(lo: int, hi: int, bins: int, granularity: str) -> tuple[float, ...]:
    """The edges (days) of ``bins`` equal bins of whole units over units ``lo`` .. ``hi`` (the last may be shorter):
    each bin's first day, then the first day of the unit after ``hi``."""
    width = -(-(hi - lo + 1) // max(1, bins))  # whole units per bin
    starts = np.arange(lo, hi + 1, width, dtype=np.int64)
    return tuple(float(e) for e in unit_start_days(np.append(starts, hi + 1), granularity))


def unit_start_days(units, granularity: str) -> np.ndarray:
    """Days since 1970-01-01 at which each unit (as numbered by :func:`unit_index`) starts."""
    units = np.asarray(units, dtype=np.int64)
    if granularity == "day":
        return units.copy()
    dtype = "datetime64[M]" if granularity == "month" else "datetime64[Y]"
    return units.astype(dtype).astype("datetime64[D]").astype(np.int64)


#: A number as spreadsheets and reports write it: a currency sign before it ("$1,234.50", "-€3"), a percent sign
#: after it ("63.5%", "12 %"), thousands grouped with ','.  The number is kept as written (63.5, not 0.635).
#: Its parts (sign, currency sign, digits, percent sign) also say the style it is written in (:func:`style_votes`).
_DECORATED_NUMBER = re.compile(
    r"^\s*+(?P<sign>[+-]?)\s*+(?P<sym>[$€£¥]?)\s*+(?P<num>[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"\s*+(?P<pct>%?)\s*+$"
)
#: A negative amount as accounts write it, in parentheses ("(1,234.00)", "$(80.00)", "(12,5)"): read as the amount
#: with a minus sign ("-1,234.00", "-$80.00"), its style that of the amount.
_ACCOUNTING = re.compile(r"^\s*+([$€£]?)\s*+\(\s*+([$€£]?\s*+[.,]*+\d[\d.,]*+\s*+[%€$£]?)\s*+\)\s*+$")


#: The minus sign of typeset text (U+2212), as word processors, web pages and some spreadsheet locales write it:
#: read as '-' ("−3.5" is -3.5; it left a column of signed changes identifier-like text).  The release writes '-'.
_MINUS_SIGN = "\u2212"


#: A currency written as its ISO code before or after the amount ("USD 1,234", "1 234,50 EUR", "CHF 1'234.50"), as
#: finance and accounting exports write it: read as the amount (written back as the number, in the column's style).
_CURRENCY_CODES = "USD|EUR|GBP|CHF|JPY|CAD|AUD|NZD|SEK|NOK|DKK|PLN|CZK|INR|CNY|BRL|MXN|ZAR"
_CODE_BEFORE = re.compile(rf"^\s*+([+-]?)\s*+(?:{_CURRENCY_CODES})\s*+(?=[\d(.,+-])")
_CODE_AFTER = re.compile(rf"(?<=[\d)%])\s*+(?:{_CURRENCY_CODES})\s*+$")
#: Thousands grouped with an apostrophe, as Switzerland writes them ("1'234.50", "1’234.50"): read without it.
_APOSTROPHE_GROUPS = re.compile(r"(?<=\d)['\u2019](?=\d{3}(?:\D|$))")


#: What a cell must look like for :func:`_plain_text` to rewrite it: a code, signs, digits and number marks only.
_PLAIN_CANDIDATE = re.compile(  # possessive throughout: a hostile cell of 100,000 spaces is read in linear time
    rf"\s*+[+\-\u2212]?\s*+(?:(?:{_CURRENCY_CODES})\s*+)?[\d\s.,'\u2019()%$€£+\-\u2212]++(?:(?:{_CURRENCY_CODES})\s*+)?"
)


def _plain_text(text: pd.Series) -> pd.Series:
    """Cells with an ISO currency code (:data:`_CURRENCY_CODES`) and apostrophes between thousands
    (:data:`_APOSTROPHE_GROUPS`) taken out, and a typeset minus sign (:data:`_MINUS_SIGN`) written '-'.  Only cells
    shaped like a number are rewritten (one match each: a column of free text is read about as fast as before)."""
    text = text.astype(str)
    rewrite = text.str.fullmatch(_PLAIN_CANDIDATE).to_numpy(dtype=bool)
    if not rewrite.any():
        return text
    cells = text.to_numpy(dtype=object, copy=True)
    cells[rewrite] = [_plain_cell(c) for c in cells[rewrite]]
    return pd.Series(cells, index=text.index, dtype=object)


def _plain_cell(cell: str) -> str:
    """:func:`_plain_text` of one cell (the style votes read distinct cells one at a time)."""
    cell = _CODE_AFTER.sub("", _CODE_BEFORE.sub(r"\1", cell.replace(_MINUS_SIGN, "-")))
    return _APOSTROPHE_GROUPS.sub("", cell)


def _signed(text: pd.Series) -> pd.Series:
    """Cells with an accounting negative (:data:`_ACCOUNTING`) written with a minus sign instead, as
    :func:`_plain_text` reads them."""
    return _plain_text(text).str.replace(_ACCOUNTING, r"-\1\2", regex=True)


#: Python's text for no value (``str(None)``), which scripts write into CSV cells.  :func:`dpcore.data.read_table`
#: reads it as text, unlike ``NA``, ``NULL`` or ``N/A``: it is a value of a column of categories whose schema lists
#: it (sleep disorders "None", "Insomnia", "Sleep Apnea"; allergies "None", "Pollen") and a missing cell
#: everywhere else -- in numbers and dates, in the roles' counts, in categories that do not list it.  A rule on each
#: cell alone (and the public schema).
NONE_TEXT = "None"


def none_cells(column: pd.Series) -> np.ndarray:
    """Which cells of a column hold exactly :data:`NONE_TEXT` (read_table has dropped the spaces before a cell;
    one compared in C: 10 ms a million cells, where stripping each took 0.3 s)."""
    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_datetime64_any_dtype(column) or not len(column):
        return np.zeros(len(column), dtype=bool)
    return np.asarray(column.to_numpy(dtype=object) == NONE_TEXT, dtype=bool)


#: Digits with a leading zero ("08390", "007") are codes, not numbers (read as numbers they would come back as 8390
#: and 7): the roles count them as text, and the evaluation matches them as written.
LEADING_ZERO = re.compile(r"^\s*[+-]?0\d+\s*$")


#: A number written with a decimal comma, as most of continental Europe and Latin America write them ("73,4"), its
#: thousands grouped with '.' or a space ("32.346,26", "1 234,5"; a group never starts a number with 0), a currency
#: sign before or after it or a percent sign after ("12,50 €", "7,5 %": read as the number; written without them).
#: A cell that is a number in both conventions ("1,234", "1.234") is read as the column's style says
#: (:func:`parse_numbers`).
DECIMAL_COMMA = "dc"
_COMMA_DECIMAL = re.compile(
    r"^\s*+(?P<sign>[+-]?)\s*+(?P<sym>[$€£]?)\s*+"
    r"(?P<num>[1-9]\d{0,2}(?P<grp>[. \u00a0\u202f])\d{3}(?:(?P=grp)\d{3})*(?:,\d+)?|\d+(?:,\d+)?|,\d+)"
    r"\s*+(?P<post>[%€$£]?)\s*+$"
)


def _comma_decimal_values(text: pd.Series) -> np.ndarray:
    """The numbers of cells written with a decimal comma (NaN where a cell is not one)."""
    parts = _signed(text).str.extract(_COMMA_DECIMAL)
    ok = (parts["num"].notna() & ~((parts["sym"] != "") & (parts["post"] != ""))).to_numpy()
    out = np.full(len(text), np.nan)
    if ok.any():
        digits = parts["num"][ok].str.replace(r"[. \u00a0\u202f]", "", regex=True).str.replace(",", ".", regex=False)
        out[ok] = pd.to_numeric(parts["sign"][ok] + digits, errors="coerce").to_numpy(dtype=float)
    return out


def parse_numbers(column: pd.Series, style: str = "") -> pd.Series:
    """The numbers of a column as floats (NaN where a cell is not one): plain numbers, and numbers as spreadsheets
    export them — thousands grouped with ',' ("26,610.29"), a currency sign before ("$1,234.50") or a percent sign
    after ("63.5%"; kept as written, 63.5) — or with a decimal comma ("73,4", "32.346,26").  A cell that is a number
    either way ("1,234", "1.234") is read with a decimal point, unless ``style`` (the column's
    :data:`NUMBER_STYLES` entry, public: declared or chosen under DP) writes a decimal comma.  A number with a listed
    unit after it ("54.6 kg", "8GB", "73,4 kg"; :data:`UNIT_STYLES`) is that number whatever the unit and the style
    (a column is taken to hold one unit; the style says how the release writes it), but under a clock style.  One
    parser for roles, encoding, discovery and evaluation, so a column is read the same way everywhere; each cell is
    read on its own and the style, so one changed cell changes one number."""
    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        return _point_decimal(column)
    codes, uniques = pd.factorize(column, sort=False)  # a column holds fewer distinct texts: read each once
    text = pd.Series(uniques, dtype=object)
    if style in CLOCK_UNITS:  # only clock cells are numbers here: "15" is no time of day
        vals = _clock_values(text, style)
    else:
        comma = decimal_comma(style)
        vals = _decimal_values(text, comma)
        rest = np.isnan(vals)
        if rest.any():
            vals[rest] = _unit_values(text[rest], comma)
    return pd.Series(np.append(vals, np.nan)[codes], index=column.index)  # code -1 (missing) reads the NaN


def _point_decimal(column: pd.Series) -> pd.Series:
    """The numbers of cells written with a decimal point, plain or decorated (:data:`_DECORATED_NUMBER`)."""
    out = pd.to_numeric(column, errors="coerce")
    out = out.astype(float) if not pd.api.types.is_float_dtype(out) else out
    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        return out
    bad = out.isna().to_numpy() & column.notna().to_numpy()
    if bad.any():
        parts = _signed(column[bad]).str.extract(_DECORATED_NUMBER)
        ok = parts["num"].notna().to_numpy()
        if ok.any():
            fixed = pd.to_numeric(
                parts["sign"][ok] + parts["num"][ok].str.replace(",", "", regex=False), errors="coerce"
            ).to_numpy(float)
            vals = out.to_numpy(dtype=float, copy=True)
            vals[np.flatnonzero(bad)[ok]] = fixed
            out = pd.Series(vals, index=column.index)
    return out


#: Units written after a number: with a space ("54.6 kg", "1248 CC", "74 bhp", "3 days") or attached ("8GB",
#: "85k", "37.2°C").  A public list of units common in exported tables (body measures, lengths, data sizes,
#: engines, clinical readings, durations); a cell reads either way, and is written as its style says.
_SPACED_UNITS = (
    "kg", "g", "mg", "lb", "lbs", "oz", "cm", "mm", "m", "km", "in", "ft", "ml", "L", "sqft", "sq ft",
    "kmpl", "km/kg", "mpg", "CC", "cc", "bhp", "hp", "kW", "Nm", "km/h", "mph",
    "mmHg", "bpm", "mg/dL", "mmol/L", "kcal",
    "min", "mins", "hrs", "hours", "days", "weeks", "months", "years",
)  # fmt: skip
_ATTACHED_UNITS = ("GB", "MB", "KB", "TB", "k", "°C", "°F")
#: Units of a count of something, written in the singular for 1 ("1 day") and read so too.
_PLURAL_UNITS = ("mins", "hrs", "hours", "days", "weeks", "months", "years")
#: A number followed by a unit ("54.6 kg", "8GB", "1,248 CC", "73,4 kg"): the unit is what follows the last digit.
_UNIT_SUFFIX = re.compile(r"^(?P<body>.*\d)\s*+(?P<unit>[^\d\s+\-.,](?:[^\d]*[^\d\s])?)\s*+$")
#: Number styles with a unit: "# kg" writes "54.6 kg", "#GB" writes "8GB" (:data:`NUMBER_STYLES`).
UNIT_STYLES = tuple("# " + u for u in _SPACED_UNITS) + tuple("#" + u for u in _ATTACHED_UNITS)
_UNIT_OF_STYLE = {st: st[1:].lstrip() for st in UNIT_STYLES}
#: The unit style a written unit votes for and reads under (a plural unit's singular too: "1 day").
_STYLE_OF_UNIT = {**{u[:-1]: st for st, u in _UNIT_OF_STYLE.items() if u in _PLURAL_UNITS},
                  **{u: st for st, u in _UNIT_OF_STYLE.items()}}  # fmt: skip
_UNIT_ENDS = tuple(_STYLE_OF_UNIT)

#: How a column's numbers are written, for :attr:`Attribute.style`: "" plain (as drawn), "," thousands grouped,
#: "%" a percent sign after (the number as written: 63.5%), a currency sign before -- "$", "€" or "£" --,
#: grouped or not, as drawn or with two decimals (".2": "$1,234.50"), and a decimal comma ("dc": "1234,5"), its
#: thousands grouped with '.' (".dc": "1.234,5"), clock times or durations (:data:`CLOCK_UNITS`: "13:05",
#: "01:23:45"), a number with a unit after it (:data:`UNIT_STYLES`: "54.6 kg", "8GB"), and a plain number, grouped
#: or not, or a percentage, with one to three decimals (:data:`DECIMAL_STYLES`: ".1" writes "4.9" and "88.0", "%.1"
#: "63.5%").  A fixed public list:
#: the roles' exponential mechanism chooses among it (:func:`dpcore.ingest.private_roles`).  New entries go at the
#: end (a declared style keeps its meaning).
DECIMAL_STYLES = tuple(g + f".{d}" for g in ("", ",", "%") for d in (1, 2, 3))
#: A decimal comma with one to three decimals, ungrouped or grouped with '.' ("dc.1" writes "73,4", ".dc.2"
#: "32.346,26"): added 2026-11-29, after DECIMAL_STYLES.
DECIMAL_COMMA_STYLES = tuple(g + DECIMAL_COMMA + f".{d}" for g in ("", ".") for d in (1, 2, 3))
NUMBER_STYLES = (
    ("", ",", "%")
    + tuple(c + g + d for c in "$€£" for g in ("", ",") for d in ("", ".2"))
    + (DECIMAL_COMMA, ".dc")
    + ("h:mm", "h:mm:ss")
    + UNIT_STYLES
    + DECIMAL_STYLES
    + DECIMAL_COMMA_STYLES
)
#: Clock times and durations ("08:15", "1:23:45"), read under a clock style only, as a number of minutes ("h:mm")
#: or seconds ("h:mm:ss") that the schema bins like any other number, and written back the same way ("13:05").
CLOCK_UNITS = {"h:mm": (60, 1), "h:mm:ss": (3600, 60)}
_CLOCK = re.compile(r"^\s*(?P<sign>[+-]?)(?P<h>\d{1,3}):(?P<m>[0-5]\d)(?::(?P<s>[0-5]\d))?\s*$")


def _clock_values(text: pd.Series, style: str) -> np.ndarray:
    """Cells written as clock times or durations in ``style``, as minutes or seconds (NaN where a cell is not)."""
    parts = text.astype(str).str.extract(_CLOCK)
    seconds = style == "h:mm:ss"
    ok = (parts["h"].notna() & (parts["s"].notna() == seconds)).to_numpy()
    out = np.full(len(text), np.nan)
    if ok.any():
        hour, minute = CLOCK_UNITS[style]
        p = parts[ok]
        vals = p["h"].astype(float).to_numpy() * hour + p["m"].astype(float).to_numpy() * minute
        if seconds:
            vals = vals + p["s"].astype(float).to_numpy()
        out[ok] = np.where(p["sign"].to_numpy() == "-", -vals, vals)
    return out


def _decimal_values(text: pd.Series, comma: bool) -> np.ndarray:
    """Cells read as numbers with a decimal comma first when ``comma``, else with a decimal point first, each cell
    the other way when the first does not read it (NaN where neither does)."""
    first, second = (_comma_decimal_values, _point_values) if comma else (_point_values, _comma_decimal_values)
    vals = first(text)
    rest = np.isnan(vals)
    if rest.any():
        vals[rest] = second(text[rest])
    return vals


def _point_values(text: pd.Series) -> np.ndarray:
    return _point_decimal(text).to_numpy(dtype=float, copy=True)


def _unit_values(text: pd.Series, comma: bool) -> np.ndarray:
    """Cells written as a number and a listed unit (NaN where a cell is not one), the number read as
    :func:`_decimal_values` reads a cell without one."""
    out = np.full(len(text), np.nan)
    text = text.astype(str)
    maybe = text.str.rstrip().str.endswith(_UNIT_ENDS).to_numpy(dtype=bool)  # most text ends in no unit: skip it
    if not maybe.any():
        return out
    parts = text[maybe].str.extract(_UNIT_SUFFIX)
    ok = np.zeros(len(text), dtype=bool)
    ok[np.flatnonzero(maybe)] = parts["unit"].isin(_STYLE_OF_UNIT.keys()).to_numpy(dtype=bool)
    if ok.any():
        out[ok] = _decimal_values(parts["body"][ok[maybe]], comma)
    return out


def _style_parts(style: str) -> tuple[str, bool, int | None, bool]:
    """(currency sign, grouped, decimals -- None: as drawn --, percent) of a :data:`NUMBER_STYLES` entry."""
    if style not in NUMBER_STYLES:
        raise DomainError(f"A number style must be one of {[s for s in NUMBER_STYLES if s]} or empty, not {style!r}.")
    sym = style[0] if style and style[0] in "$€£" else ""
    decimals = int(style[-1]) if len(style) >= 2 and style[-2] == "." and style[-1].isdigit() else None
    return sym, "," in style or style.startswith(".dc"), decimals, style.startswith("%")


def style_decimals(style: str | None) -> int | None:
    """The decimals a :data:`NUMBER_STYLES` entry writes ("$,.2": 2, ".1": 1), None where it writes a number as
    drawn."""
    return _style_parts(style)[2] if style else None


def decimal_comma(style: str | None) -> bool:
    """Whether a :data:`NUMBER_STYLES` entry writes a decimal comma (and so reads "1,234" as 1.234)."""
    return bool(style) and DECIMAL_COMMA in str(style)


def style_votes(texts, counts) -> np.ndarray:
    """For each of :data:`NUMBER_STYLES`, how many cells are written in it (:func:`_style_votes`)."""
    return _style_votes(texts, counts)[0]


def _style_votes(texts, counts) -> tuple[np.ndarray, int]:
    """For each of :data:`NUMBER_STYLES`, how many cells are written in it, and how many cells voted at all: a cell
    votes for the style it is written in -- its currency sign and percent sign as written, grouped if it holds a
    thousands comma, with a currency sign two decimals only if it has exactly two -- and a plain number for "" (or
    "," grouped) alone, or, with one to three decimals, for the plain style with that many (:data:`DECIMAL_STYLES`:
    "4.9" and "88.0" vote ".1", "1,234.56" votes ",.2"; more decimals, as drawn: ""), a percentage likewise
    ("63.5%": "%.1", "7%": "%"). An amount under 1,000 with a currency sign and no comma votes for the grouped style
    too (`$80.00` is how `$,.2` writes 80): a column's amounts over 1,000 decide the grouping. A cell that is a
    number only with a decimal comma ("73,4", "0,125", "1.234,5", "1.234.567") votes "dc", or ".dc" if grouped with
    '.', and under 1,000 ungrouped both -- with one to three decimals, the styles with that many
    (:data:`DECIMAL_COMMA_STYLES`: "73,4" votes "dc.1" and ".dc.1"); a cell that reads with a decimal point too
    ("1,234", "1.234") votes as a point reads it (",", ".3"), so a column is read with a decimal comma only where
    its unambiguous cells say so; a whole number written plain ("68") votes for plain and for every decimal-comma
    style, in which it reads and is written alike (R's ``write.csv2`` writes "73,4", "68", "70,25": its cells are
    not split against plain). A number with a listed unit after it votes for that unit's style ("54.6 kg", "54.6kg":
    "# kg"; "1 day": "# days"). ``texts`` are distinct cells (text; numbers vote plain), ``counts`` how many cells
    hold each. A cell votes for each style at most once: one cell changed moves each vote by at most 1."""
    votes = np.zeros(len(NUMBER_STYLES))
    index = {s: i for i, s in enumerate(NUMBER_STYLES)}
    comma_styles = [index[st] for st in (DECIMAL_COMMA, ".dc") + DECIMAL_COMMA_STYLES]
    voters = 0
    for text, count in zip(texts, counts):
        if isinstance(text, (int, float, np.integer, np.floating)) and not isinstance(text, bool):
            if math.isfinite(float(text)):
                votes[0] += count
                voters += count
            continue
        cell = str(text)
        if cell[:1].isalpha() or cell[-1:].isalpha() or "'" in cell or "\u2019" in cell or _MINUS_SIGN in cell:
            cell = _plain_cell(cell)  # a currency code, Swiss groups, a typeset minus
        if "(" in cell:
            cell = _ACCOUNTING.sub(r"-\1\2", cell)
        m = _DECORATED_NUMBER.match(cell)
        if m is not None and not m["sym"] and not m["pct"]:  # the common case: a plain number, grouped or not
            places = len(m["num"].split(".", 1)[1]) if "." in m["num"] else 0
            grouped = "," if "," in m["num"] else ""
            votes[index[grouped + f".{places}"] if 1 <= places <= 3 else (1 if grouped else 0)] += count
            if not places and not grouped:  # "68" reads and is written alike with a decimal comma: it votes for
                votes[comma_styles] += count  # those too, so "73,4", "68", "70,25" (R's write.csv2) is not split
            voters += count
            continue
        chosen: list[str] = []  # distinct styles: a cell votes for each at most once
        c = None if m is not None else _COMMA_DECIMAL.match(cell)
        if m is not None and m["sym"] != "¥" and not (m["sym"] and m["pct"]):
            num = m["num"]
            decimals = len(num.split(".", 1)[1]) if "." in num else 0
            if m["pct"]:  # "63.5%": the percent style with its decimals (one to three; else as drawn)
                chosen.append("%" + (f".{decimals}" if 1 <= decimals <= 3 else ""))
            else:
                style = m["sym"] + ("," if "," in num else "") + (".2" if decimals == 2 else "")
                chosen.append(style)
                if "," not in num and float(num) < 1000:
                    chosen.append(m["sym"] + "," + style[1:])
        elif (k := _CLOCK.match(cell)) is not None:
            chosen.append("h:mm:ss" if k["s"] else "h:mm")
        elif c is None and (u := _UNIT_SUFFIX.match(cell)) is not None and u["unit"] in _STYLE_OF_UNIT:
            n = _DECORATED_NUMBER.match(u["body"]) or _COMMA_DECIMAL.match(u["body"])  # a plain number, either way
            if n is not None and not n["sym"] and not n.groupdict().get("pct") and not n.groupdict().get("post"):
                chosen.append(_STYLE_OF_UNIT[u["unit"]])
        elif c is not None and not (c["sym"] and c["post"]):  # a decimal comma or '.' groups, not a decimal point
            places = len(c["num"].split(",", 1)[1]) if "," in c["num"] else 0
            tail = f".{places}" if 1 <= places <= 3 else ""  # "73,4": the style with one decimal (DECIMAL_COMMA_STYLES)
            if c["grp"] == ".":
                chosen.append(".dc" + tail)
            else:
                chosen.append(DECIMAL_COMMA + tail)  # ungrouped, or grouped with spaces (read, written ungrouped)
                if c["grp"] is None and float(c["num"].replace(",", ".")) < 1000:
                    chosen.append(".dc" + tail)
        for style in chosen:
            votes[index[style]] += count
        voters += count if chosen else 0
    return votes, voters


def written_style(texts, counts) -> str:
    """The style most of a column's cells are written in, read exactly -- **NOT private**: for the data owner's
    proposal and the evaluation, which read the data anyway.  A styled entry needs the votes of half the cells that
    voted, else plain (a whole number votes for plain and every decimal-comma style: it is written alike in them)."""
    votes, voters = _style_votes(texts, counts)
    best = int(votes.argmax())
    return NUMBER_STYLES[best] if best > 0 and votes[best] >= 0.5 * voters else ""


def styled_numbers(values: pd.Series, style: str) -> pd.Series:
    """Numbers (floats or whole numbers; missing stays empty) written in ``style``: "-$1,234.50", "63.5%",
    "12,000", "1.234,5", "13:05", "54.6 kg", "1 day", "4.9" (".1").  A style without decimals writes a number with
    the digits it was drawn with (whole numbers none); a clock style writes minutes or seconds rounded to the unit."""
    sym, grouped, decimals, percent = _style_parts(style)
    cents = decimals is not None
    comma = decimal_comma(style)
    spec = ("," if grouped else "") + (f".{decimals}f" if cents else "")

    unit = _UNIT_OF_STYLE.get(style)
    gap = " " if style.startswith("# ") else ""

    def written(x: float) -> str:
        sign = "-" if x < 0 else ""
        if style in CLOCK_UNITS:
            t = int(round(abs(x)))
            sign = sign if t else ""
            return sign + (
                f"{t // 60:02d}:{t % 60:02d}" if style == "h:mm" else f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"
            )
        digits = format(abs(int(x)) if x.is_integer() and not cents else abs(x), spec)  # 7, not 7.0
        if comma:  # swap the separators: 1,234.5 -> 1.234,5
            digits = digits.replace(",", "\x00").replace(".", ",").replace("\x00", ".")
        if unit is not None:  # "54.6 kg", "8GB", "1 day"
            return sign + digits + gap + (unit[:-1] if unit in _PLURAL_UNITS and abs(x) == 1 else unit)
        return sign + sym + digits + ("%" if percent else "")

    out = np.full(len(values), None, dtype=object)
    for i, v in enumerate(values.to_numpy(dtype=object)):
        if not (v is None or v is pd.NA or (isinstance(v, float) and not math.isfinite(v))):
            out[i] = written(float(v))
    return pd.Series(out, index=values.index, dtype=object)


def parse_dates(column: pd.Series, fmt: str | None) -> np.ndarray:
    """Days since 1970-01-01 (float, NaN where a cell does not parse) of a column of dates or date text."""
    if len(column) == 0:
        return np.zeros(0)
    if pd.api.types.is_datetime64_any_dtype(column):
        ts = column
        if getattr(ts.dt, "tz", None) is not None:
            ts = ts.dt.tz_convert(None)
    elif fmt == "%Y" or (pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)):
        # Numbers read as dates (a year alone, format %Y): whole ones as their digits (2023.0 as 2023).
        vals = parse_numbers(column).to_numpy(dtype=float, na_value=np.nan)
        text = pd.Series(np.where(whole(vals), vals, np.nan), index=column.index).astype("Int64").astype(str)
        ts = to_datetimes(text, fmt)
    else:
        ts = to_datetimes(column.astype(str).str.strip(), fmt)
    return ((ts - _EPOCH) / pd.Timedelta(days=1)).to_numpy(dtype=float, na_value=np.nan)


def to_datetimes(text: pd.Series, fmt: str | None) -> pd.Series:
    """Timestamps of date text in ``fmt`` (NaT where a cell does not parse); a format with a UTC offset (%z) is
    read as UTC and returned without a zone, like every other date."""
    if fmt and "%z" in fmt:
        return pd.to_datetime(text, format=fmt, errors="coerce", utc=True).dt.tz_convert(None)
    return pd.to_datetime(text, format=fmt, errors="coerce") if fmt else pd.to_datetime(text, errors="coerce")


def _format_days(days, fmt: str) -> list[str]:
    secs = np.round(np.asarray(days, dtype=float) * 86400.0).astype(np.int64)
    return pd.Series(pd.to_datetime(secs, unit="s", utc="%z" in fmt)).dt.strftime(fmt).tolist()


#: The slots of a date's time-of-day profile (:attr:`Attribute.hours`): exactly midnight, then hours 0-23.
TIME_SLOTS = 25


def _shaped(r: np.ndarray, slope: np.ndarray | None) -> np.ndarray:
    """Uniform draws ``r`` in [0, 1) mapped through the inverse CDF of the density ``1 + s (u - 1/2)`` on [0, 1]
    (``s`` in [-2, 2], one per draw; None or 0: ``r`` itself).  F(u) = u + s (u² - u) / 2; the root is written
    2r / (b + sqrt(b² + 2sr)), b = 1 - s/2, which holds at s = 0 too."""
    if slope is None:
        return r
    b = 1.0 - slope / 2.0
    u = 2.0 * r / (b + np.sqrt(np.maximum(b * b + 2.0 * slope * r, 0.0)))
    return np.clip(np.nan_to_num(u, nan=0.0), 0.0, np.nextafter(1.0, 0.0))


def _has_time(fmt: str | None) -> bool:
    return fmt is not None and any(t in fmt for t in ("%H", "%I", "%M", "%S", "%f", "%p", "%T", "%X", "%c"))


def interval_label(a: float, b: float, closed: bool) -> str:
    return f"[{a:g}, {b:g}{']' if closed else ')'}"


def whole_span(a: float, b: float, closed: bool) -> tuple[int, int]:
    """The first and last whole number of a whole-number bin [a, b) ([a, b] when ``closed``: the last bin)."""
    return math.ceil(a), (math.floor(b) if closed else math.ceil(b) - 1)


def whole(vals: np.ndarray) -> np.ndarray:
    """Which of ``vals`` (floats, NaN for none) are whole numbers: finite and equal to their floor."""
    finite = np.isfinite(vals)
    return finite & (np.floor(np.where(finite, vals, 0.0)) == vals)


def _whole_label(a: float, b: float, closed: bool) -> str:
    """A whole-number bin's label: the number itself when the bin holds exactly one ('40' for [39.5, 40.5)); the
    whole numbers it holds, closed, when an edge is not whole ('[41, 43]' for [40.5, 44), never '[40.5, 44)');
    else the interval."""
    first, last = whole_span(a, b, closed)
    if first == last:
        return str(int(first))
    if not (float(a).is_integer() and float(b).is_integer()) and last > first:
        return f"[{int(first)}, {int(last)}]"
    return interval_label(a, b, closed)


def _canonical_text(v) -> str:
    """Text form used to match raw values against declared labels (1.0 -> '1')."""
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    if isinstance(v, str):
        return v.strip()
    return str(v)


def _lookup_codes(uniques, lookup: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """The code of each distinct raw value (-1 when not listed) by its canonical text, and which are blank (or
    :data:`NONE_TEXT` where it is not listed).

    Vectorised for numeric and text columns (the canonical text of a number is injective on distinct numbers,
    so the labels are turned into numbers once instead of every value into text)."""
    n = len(uniques)
    dtype = getattr(uniques, "dtype", None)
    if n and dtype is not None and pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
        numeric: dict[float, int] = {}
        for label, code in lookup.items():
            try:
                value = float(label)
            except ValueError:
                continue
            if _canonical_text(value) == label:
                numeric[value] = code
        codes = np.array(pd.Series(np.asarray(uniques, dtype=float)).map(numeric).fillna(-1), dtype=np.int64)
        return codes, np.zeros(n, dtype=bool)
    # NONE_TEXT is a missing cell unless the schema lists it
    empty = ("",) if NONE_TEXT in lookup else ("", NONE_TEXT)
    if n and pd.api.types.infer_dtype(uniques, skipna=True) == "string":
        text = pd.Series(np.asarray(uniques, dtype=object)).str.strip()
        codes = np.array(text.map(lookup).fillna(-1), dtype=np.int64)
        return codes, np.array(text.isin(empty), dtype=bool)
    texts = [_canonical_text(u) for u in uniques]
    codes = np.array([lookup.get(t, -1) for t in texts], dtype=np.int64)
    return codes, np.array([t in empty for t in texts], dtype=bool)


@dataclass(frozen=True)
class Domain:
    """An ordered tuple of attributes: the public schema of a table."""

    attributes: tuple[Attribute, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        attrs = tuple(self.attributes)
        if not attrs:
            raise DomainError("The schema has no attributes: include at least one column.")
        names = [a.name for a in attrs]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise DomainError(f"Attribute names must be unique; repeated: {dup}.")
        object.__setattr__(self, "attributes", attrs)

    @property
    def names(self) -> list[str]:
        return [a.name for a in self.attributes]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.attributes)

    @property
    def size(self) -> int:
        """Number of possible records (an exact Python integer; it can be huge)."""
        return math.prod(self.shape)

    @property
    def one_hot_size(self) -> int:
        """D, the length of a record's one-hot encoding."""
        return sum(self.shape)

    @property
    def inferred(self) -> list[str]:
        """Attributes with at least one field read off the private data without DP."""
        return [a.name for a in self.attributes if "inferred" in a.field_sources.values()]

    @property
    def discovered(self) -> list[str]:
        """Attributes with at least one field released under DP."""
        return [a.name for a in self.attributes if "dp" in a.field_sources.values()]

    def __len__(self) -> int:
        return len(self.attributes)

    def __getitem__(self, key: int | str) -> Attribute:
        if isinstance(key, str):
            return self.attributes[self.index(key)]
        return self.attributes[key]

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise DomainError(f"No attribute named {name!r}; the schema has {self.names}.") from None

    def project(self, names: Sequence[str]) -> Domain:
        return Domain(tuple(self[n] for n in names))

    def replace(self, attribute: Attribute) -> Domain:
        return Domain(tuple(attribute if a.name == attribute.name else a for a in self.attributes))

    # ------------------------------------------------------------ encoding
    def encode(self, df: pd.DataFrame) -> tuple[np.ndarray, dict[str, int]]:
        """Integer codes (n, p) for a raw table, and clipped counts per attribute."""
        missing_cols = [n for n in self.names if n not in df.columns]
        if missing_cols:
            raise DomainError(f"The table has no column(s) {missing_cols} that the schema describes.")
        codes = np.empty((len(df), len(self)), dtype=np.int64)
        clipped: dict[str, int] = {}
        for j, attr in enumerate(self.attributes):
            codes[:, j], c = attr.encode(df[attr.name])
            if c:
                clipped[attr.name] = c
        return codes, clipped

    def decode(
        self,
        codes: np.ndarray,
        numeric: str = "interval",
        rng: np.random.Generator | None = None,
        count_noise: float | Sequence[float] | None = None,
    ) -> pd.DataFrame:
        """Every attribute's :meth:`Attribute.decode`; ``count_noise``, one share for all or one per attribute."""
        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape[1] != len(self):
            raise DomainError(f"Expected codes with {len(self)} columns, got shape {codes.shape}.")
        noise: list[float | None] = (
            [None if count_noise is None else float(count_noise)] * len(self)
            if count_noise is None or isinstance(count_noise, (int, float))
            else [float(x) for x in count_noise]
        )
        if len(noise) != len(self):
            raise DomainError(f"count_noise needs one share per attribute ({len(self)}), got {len(noise)}.")
        return pd.DataFrame(
            {a.name: a.decode(codes[:, j], numeric, rng, noise[j]) for j, a in enumerate(self.attributes)}
        )

    def validate_codes(self, codes: np.ndarray) -> None:
        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape[1] != len(self):
            raise DomainError(f"Expected codes with {len(self)} columns, got shape {codes.shape}.")
        if codes.size:
            lo, hi = codes.min(axis=0), codes.max(axis=0)
            for j, a in enumerate(self.attributes):
                if lo[j] < 0 or hi[j] >= a.size:
                    raise DomainError(f"Column {a.name!r} has codes outside 0..{a.size - 1} (found {lo[j]}..{hi[j]}).")

    # ---------------------------------------------------------------- json
    def to_dict(self) -> dict:
        return {"format": "dpcore-schema/1", "attributes": [a.to_dict() for a in self.attributes]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, d) -> Domain:
        if isinstance(d, dict) and "attributes" in d:
            attrs = d["attributes"]
            if not isinstance(attrs, list):
                raise DomainError("'attributes' in a schema must be a list.")
            return cls(tuple(Attribute.from_dict(a) for a in attrs))
        if isinstance(d, dict) and d and all(isinstance(v, int) and not isinstance(v, bool) for v in d.values()):
            # The benchmark literature's format: {"age": 85, ...} = integer codes 0..size-1.
            return cls(
                tuple(Attribute(name, "categorical", tuple(str(i) for i in range(size))) for name, size in d.items())
            )
        raise DomainError(
            "Unrecognised schema JSON: expected {'attributes': [...]} (saved by dpcore) "
            "or {'column': size, ...} (integer-coded data)."
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Domain:
        try:
            d = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise DomainError(f"The schema file is not valid JSON ({exc}).") from None
        return cls.from_dict(d)


def infer_attribute(
    column: pd.Series, name: str, *, max_categories: int = MAX_INFERRED_CATEGORIES, numeric_bins: int = 10
) -> Attribute:
    """Infer one attribute from the private column (every field marked ``"inferred"``: not private)."""
    present = column.dropna()
    has_missing = bool(column.isna().any())
    nunique = int(present.nunique())
    if nunique == 0:
        return Attribute(name, "categorical", (), missing=True, source="data")
    numbers = None
    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        numbers = present.to_numpy(dtype=float)
    elif not pd.api.types.is_bool_dtype(column):  # text cells (read_table reads CSV cells as text)
        nones = none_cells(present)  # missing cells in a column of numbers
        text = present[~nones].astype(str)
        parsed = parse_numbers(text)
        if len(text) and parsed.notna().all() and not text.str.match(r"^\s*[+-]?0\d").any():
            numbers = parsed.to_numpy(dtype=float)
            has_missing = has_missing or bool(nones.any())
    if numbers is not None:
        vals = numbers
        finite = vals[np.isfinite(vals)]
        if nunique > NUMERIC_AS_CATEGORICAL and finite.size and finite.max() > finite.min():
            return Attribute(
                name,
                "numeric",
                lower=float(finite.min()),
                upper=float(finite.max()),
                bins=numeric_bins,
                missing=has_missing,
                source="data",
            )
    if nunique > max_categories:
        raise DomainError(
            f"Column {name!r} has {nunique:,} distinct values: too many to treat as categories "
            f"(limit {max_categories:,}). It looks like an identifier or free text: drop it, "
            "or declare it numeric with bounds and bins."
        )
    labels = sorted({_canonical_text(v) for v in present.unique()}, key=_natural_key)
    return Attribute(name, "categorical", tuple(labels), missing=has_missing, source="data")


def _natural_key(s: str):
    try:
        return (0, float(s), s)
    except ValueError:
        return (1, 0.0, s)


def infer_domain(
    df: pd.DataFrame,
    columns: Iterable[str] | None = None,
    *,
    max_categories: int = MAX_INFERRED_CATEGORIES,
    numeric_bins: int = 10,
) -> Domain:
    """A schema read off the private table: convenient, *not private*.

    Every field is marked ``"inferred"``.  Raises :class:`DomainError` for a
    column that cannot sensibly be categorical (too many distinct values).
    """
    cols = list(df.columns) if columns is None else list(columns)
    return Domain(
        tuple(infer_attribute(df[c], str(c), max_categories=max_categories, numeric_bins=numeric_bins) for c in cols)
    )


def merge_declared(inferred: Domain, declared: Domain) -> Domain:
    """Use the declared definition wherever one exists, the inferred one elsewhere."""
    names = set(declared.names)
    return Domain(tuple(declared[a.name] if a.name in names else a for a in inferred.attributes))
