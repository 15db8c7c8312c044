"""The public schema: attributes, their value sets, numeric bins; encode and decode.

A differentially private release is only private if everything *not* protected by
noise is public.  The value set of each attribute is such a thing: if it is read off
the private table, the release card reveals (for example) which rare countries occur.
So every attribute records where its definition came from:

* ``source="declared"`` -- written by the data owner from public knowledge
  (a codebook, a standard, the bundled sample's documentation);
* ``source="data"`` -- inferred from the private table by :func:`infer_domain`.
  This is allowed for convenience, but the UI and the release card warn that it is
  *not private*.

Encoding maps a raw table to integer codes ``0..size-1`` per attribute.  Missing
values become an explicit category (the last code) when the attribute declares
``missing=True``.  Numeric attributes are binned with public bounds and either a
bin count (equal width) or explicit edges; values outside the bounds are clipped and
counted, or rejected, as the attribute says.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from .errors import DomainError

MISSING_LABEL = "(missing)"
KINDS = ("categorical", "numeric")
SOURCES = ("declared", "data")
#: Above this many distinct values a text column is not turned into a categorical
#: attribute without an explicit choice: it is probably an identifier or free text.
MAX_INFERRED_CATEGORIES = 1000
#: Numeric columns with at most this many distinct values are inferred categorical.
NUMERIC_AS_CATEGORICAL = 20


@dataclass(frozen=True)
class Attribute:
    """One column of the public schema.

    Categorical: ``values`` lists the labels (strings) in code order.
    Numeric: ``lower``/``upper`` bound the column publicly and ``edges`` (derived
    from ``bins`` when not given) cut it into ``len(edges) - 1`` intervals; the
    last interval is closed on the right.
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
    out_of_bounds: str = "clip"  # numeric: "clip" or "reject"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise DomainError("Every attribute needs a non-empty name.")
        if self.kind not in KINDS:
            raise DomainError(f"Attribute {self.name!r}: kind must be one of {KINDS}, not {self.kind!r}.")
        if self.source not in SOURCES:
            raise DomainError(f"Attribute {self.name!r}: source must be one of {SOURCES}.")
        if self.out_of_bounds not in ("clip", "reject"):
            raise DomainError(f"Attribute {self.name!r}: out_of_bounds must be 'clip' or 'reject'.")
        if self.kind == "categorical":
            vals = tuple(str(v) for v in self.values)
            if not vals and not self.missing:
                raise DomainError(f"Attribute {self.name!r}: a categorical attribute needs at least one value.")
            if len(set(vals)) != len(vals):
                dup = sorted({v for v in vals if vals.count(v) > 1})[:5]
                raise DomainError(f"Attribute {self.name!r}: repeated values {dup}; list each value once.")
            if MISSING_LABEL in vals:
                raise DomainError(
                    f"Attribute {self.name!r}: {MISSING_LABEL!r} is reserved; tick 'missing' instead of listing it."
                )
            object.__setattr__(self, "values", vals)
        else:
            self._check_numeric()

    def _check_numeric(self) -> None:
        name = self.name
        if self.edges:
            edges = tuple(float(e) for e in self.edges)
            if len(edges) < 2 or any(not math.isfinite(e) for e in edges):
                raise DomainError(f"Attribute {name!r}: give at least two finite bin edges.")
            if any(b <= a for a, b in zip(edges, edges[1:])):
                raise DomainError(f"Attribute {name!r}: bin edges must be strictly increasing.")
            lower, upper = edges[0], edges[-1]
            if self.lower is not None and not math.isclose(float(self.lower), lower):
                raise DomainError(f"Attribute {name!r}: the first edge must equal the lower bound.")
            if self.upper is not None and not math.isclose(float(self.upper), upper):
                raise DomainError(f"Attribute {name!r}: the last edge must equal the upper bound.")
        else:
            if self.lower is None or self.upper is None:
                raise DomainError(f"Attribute {name!r}: a numeric attribute needs public lower and upper bounds.")
            lower, upper = float(self.lower), float(self.upper)
            if not (math.isfinite(lower) and math.isfinite(upper)) or upper <= lower:
                raise DomainError(
                    f"Attribute {name!r}: bounds must be finite with lower < upper (got {lower}, {upper})."
                )
            bins = self.bins if self.bins is not None else 10
            if not isinstance(bins, (int, np.integer)) or not 1 <= int(bins) <= 10_000:
                raise DomainError(f"Attribute {name!r}: the bin count must be an integer from 1 to 10000.")
            edges = tuple(float(e) for e in np.linspace(lower, upper, int(bins) + 1))
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "lower", edges[0])
        object.__setattr__(self, "upper", edges[-1])
        object.__setattr__(self, "bins", len(edges) - 1)
        object.__setattr__(self, "values", ())

    # ------------------------------------------------------------------ sizes
    @property
    def n_regular(self) -> int:
        return len(self.values) if self.kind == "categorical" else len(self.edges) - 1

    @property
    def size(self) -> int:
        return self.n_regular + (1 if self.missing else 0)

    def labels(self) -> list[str]:
        """Human-readable label of every code, in code order."""
        if self.kind == "categorical":
            out = list(self.values)
        else:
            out = [
                interval_label(a, b, i == len(self.edges) - 2)
                for i, (a, b) in enumerate(zip(self.edges, self.edges[1:]))
            ]
        if self.missing:
            out.append(MISSING_LABEL)
        return out

    # --------------------------------------------------------------- encoding
    def encode(self, column: pd.Series) -> tuple[np.ndarray, int]:
        """Codes for a raw column, and the number of clipped values.

        Raises :class:`DomainError` with a message naming the offending values.
        """
        is_missing = column.isna().to_numpy()
        n_missing = int(is_missing.sum())
        if n_missing and not self.missing:
            raise DomainError(
                f"Column {self.name!r} has {n_missing} missing value(s) but its schema has no missing category: "
                "allow missing values for it, or clean the column."
            )
        codes = np.full(len(column), self.n_regular if self.missing else 0, dtype=np.int64)
        present = ~is_missing
        clipped = 0
        if self.kind == "categorical":
            raw = column[present]
            lookup = {v: i for i, v in enumerate(self.values)}
            # Hash the column once in C, then canonicalise only its distinct values.
            uniq_idx, uniques = pd.factorize(raw, sort=False)
            uniq_text = [_canonical_text(u) for u in uniques]
            uniq_code = np.array([lookup.get(t, -1) for t in uniq_text], dtype=np.int64)
            mapped = uniq_code[uniq_idx] if len(uniq_code) else np.zeros(0, np.int64)
            unknown = mapped < 0
            if unknown.any():
                bad = [t for t, c in zip(uniq_text, uniq_code) if c < 0]
                shown = ", ".join(repr(b) for b in bad[:5])
                raise DomainError(
                    f"Column {self.name!r} has {int(unknown.sum())} value(s) not in its declared value list "
                    f"(e.g. {shown}). Add them to the schema or clean the column."
                )
            codes[present] = mapped
        else:
            raw = pd.to_numeric(column[present], errors="coerce")
            bad = raw.isna().to_numpy()
            if bad.any():
                examples = ", ".join(repr(str(v)) for v in pd.unique(column[present][bad])[:5])
                raise DomainError(
                    f"Column {self.name!r} is declared numeric but has {int(bad.sum())} non-numeric value(s) "
                    f"(e.g. {examples}). Declare it categorical or clean the column."
                )
            vals = raw.to_numpy(dtype=float)
            outside = (vals < self.lower) | (vals > self.upper) | ~np.isfinite(vals)
            n_out = int(outside.sum())
            if n_out:
                if self.out_of_bounds == "reject":
                    raise DomainError(
                        f"Column {self.name!r} has {n_out} value(s) outside its public bounds "
                        f"[{self.lower:g}, {self.upper:g}] (infinite values count as outside). "
                        "Widen the bounds or choose 'clip'."
                    )
                vals = np.clip(
                    np.nan_to_num(vals, nan=self.lower, posinf=self.upper, neginf=self.lower), self.lower, self.upper
                )
                clipped = n_out
            idx = np.searchsorted(np.asarray(self.edges), vals, side="right") - 1
            codes[present] = np.clip(idx, 0, len(self.edges) - 2)
        return codes, clipped

    def decode(self, codes: np.ndarray, numeric: str = "interval", rng: np.random.Generator | None = None) -> pd.Series:
        """Labels for codes.

        ``numeric`` chooses how a numeric bin is shown: ``"interval"`` (``[20, 25)``),
        ``"midpoint"`` (a representative value) or ``"uniform"`` (a uniform draw in the
        bin; needs ``rng``).  Missing decodes to an empty value.
        """
        codes = np.asarray(codes, dtype=np.int64)
        if codes.size and (codes.min() < 0 or codes.max() >= self.size):
            raise DomainError(f"Codes for {self.name!r} must lie in 0..{self.size - 1}.")
        missing = codes == self.n_regular if self.missing else np.zeros(codes.shape, bool)
        if self.kind == "categorical" or numeric == "interval":
            labels = np.array(self.labels(), dtype=object)
            out = labels[codes]
            out[missing] = None
            return pd.Series(out, dtype=object)
        edges = np.asarray(self.edges)
        safe = np.minimum(codes, len(edges) - 2)
        lo, hi = edges[safe], edges[safe + 1]
        if numeric == "midpoint":
            vals = (lo + hi) / 2.0
        elif numeric == "uniform":
            if rng is None:
                raise DomainError("Decoding numeric bins as uniform draws needs a random generator.")
            vals = lo + (hi - lo) * rng.random(codes.shape)
        else:
            raise DomainError(f"Unknown numeric decoding {numeric!r}: use 'interval', 'midpoint' or 'uniform'.")
        out = pd.Series(vals.astype(float))
        out[missing] = np.nan
        return out

    # ---------------------------------------------------------------- json
    def to_dict(self) -> dict:
        d: dict = {"name": self.name, "kind": self.kind, "source": self.source, "missing": self.missing}
        if self.kind == "categorical":
            d["values"] = list(self.values)
        else:
            d.update(lower=self.lower, upper=self.upper, edges=list(self.edges), out_of_bounds=self.out_of_bounds)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Attribute":
        if not isinstance(d, dict) or "name" not in d:
            raise DomainError("Each attribute in a schema must be an object with at least a 'name'.")
        known = {"name", "kind", "values", "lower", "upper", "bins", "edges", "missing", "source", "out_of_bounds"}
        extra = set(d) - known
        if extra:
            raise DomainError(f"Attribute {d.get('name')!r}: unknown schema keys {sorted(extra)}.")
        kw = dict(d)
        for key in ("values", "edges"):
            if key in kw:
                if not isinstance(kw[key], (list, tuple)):
                    raise DomainError(f"Attribute {d['name']!r}: {key!r} must be a list.")
                kw[key] = tuple(kw[key])
        try:
            return cls(**kw)
        except TypeError as exc:  # wrong value types in hand-written JSON
            raise DomainError(f"Attribute {d.get('name')!r}: {exc}") from None


def interval_label(a: float, b: float, closed: bool) -> str:
    return f"[{a:g}, {b:g}{']' if closed else ')'}"


def _canonical_text(v) -> str:
    """Text form used to match raw values against declared labels (1.0 -> '1')."""
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    if isinstance(v, str):
        return v.strip()
    return str(v)


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
        return [a.name for a in self.attributes if a.source == "data"]

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

    def project(self, names: Sequence[str]) -> "Domain":
        return Domain(tuple(self[n] for n in names))

    def replace(self, attribute: Attribute) -> "Domain":
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
        self, codes: np.ndarray, numeric: str = "interval", rng: np.random.Generator | None = None
    ) -> pd.DataFrame:
        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape[1] != len(self):
            raise DomainError(f"Expected codes with {len(self)} columns, got shape {codes.shape}.")
        return pd.DataFrame({a.name: a.decode(codes[:, j], numeric, rng) for j, a in enumerate(self.attributes)})

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
    def from_dict(cls, d) -> "Domain":
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
    def from_json(cls, text: str | bytes) -> "Domain":
        try:
            d = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise DomainError(f"The schema file is not valid JSON ({exc}).") from None
        return cls.from_dict(d)


def infer_attribute(
    column: pd.Series, name: str, *, max_categories: int = MAX_INFERRED_CATEGORIES, numeric_bins: int = 10
) -> Attribute:
    """Infer one attribute from the private column (marked ``source='data'``)."""
    present = column.dropna()
    has_missing = bool(column.isna().any())
    nunique = int(present.nunique())
    if nunique == 0:
        return Attribute(name, "categorical", (), missing=True, source="data")
    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        vals = present.to_numpy(dtype=float)
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

    Every attribute is marked ``source="data"``.  Raises :class:`DomainError` for a
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


def with_source(attr: Attribute, source: str) -> Attribute:
    return replace(attr, source=source)
