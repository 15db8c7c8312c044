"""Load and validate tables into a :class:`Dataset` (integer codes + public domain).

Reading is defensive: CSV with any common delimiter (``,`` ``;`` tab ``|``, or runs of spaces when no line holds
one of those and every line splits into as many fields), UTF-8
(with or without BOM) or Latin-1, and Parquet.  Every failure is a
:class:`~dpcore.errors.DataError` that says what to fix.

Reading never refuses a reasonable file: a repeated header name becomes ``name``, ``name_2``, ``name_3`` and an
empty one ``column_5`` (its 1-based position); the renames are kept in ``df.attrs["renamed"]`` as
``[{"original": ..., "name": ...}]`` so the CLI and the app can report them.  Loading never drops a row because
of what it holds: ``n`` is the file's row count (a value that does not fit its column's role becomes a missing
cell later, at encoding, never a dropped row).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import warnings
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from .domain import MISSING_TOKENS, Domain
from .errors import DataError, DomainError

# Cells read as missing (:data:`dpcore.domain.MISSING_TOKENS`, by :func:`_read_missing_marks`): pandas' defaults but
# ``None`` (an empty cell, ``NA``, ``N/A``, ``NULL``, ``NaN``...) and ``?``, the UCI convention (the bundled Adult
# sample uses it).  ``None`` is read as text: a category of its own in many tables (sleep disorders "None",
# "Insomnia"; allergies "None", "Pollen"), a missing cell in numbers and dates and wherever a schema does not list
# it (:data:`dpcore.domain.NONE_TEXT`).
DELIMITERS = [",", ";", "\t", "|"]
#: Hard cap on rows read, to keep a hostile upload from exhausting memory.
MAX_ROWS = 20_000_000
#: Hard cap on columns (a file with more is almost surely not a table, or its delimiter was misread).
MAX_COLUMNS = 10_000


@dataclass
class Dataset:
    """A private table as integer codes over a public domain.

    ``codes[i, j]`` is record i's code for attribute j.  ``n`` is public under the
    replace-one neighbour relation used throughout ([NRW19] and [VTBSW20]).
    """

    codes: np.ndarray
    domain: Domain
    name: str = "data"
    clipped: dict[str, int] = field(default_factory=dict)
    #: SHA-256 of the source file's bytes (set by the loaders): the privacy ledger's key, so a new schema,
    #: binning or workload on the same file still counts against the same total.
    source_id: str | None = None

    def __post_init__(self) -> None:
        self.codes = np.ascontiguousarray(self.codes, dtype=np.int64)
        self.domain.validate_codes(self.codes)
        if self.codes.shape[0] == 0:
            raise DataError("The table has no rows.")

    @property
    def n(self) -> int:
        return int(self.codes.shape[0])

    @property
    def ledger_key(self) -> str:
        """The key this table's spends are recorded under: the source bytes' digest, else (a table built in
        memory) the digest of its codes, whatever the schema."""
        if self.source_id:
            return self.source_id
        h = hashlib.sha256(np.asarray(self.codes.shape, dtype=np.int64).tobytes())
        h.update(self.codes.tobytes())
        return h.hexdigest()

    @property
    def fingerprint(self) -> str:
        """A short id of this exact table+schema, for the per-dataset privacy ledger."""
        h = hashlib.sha256(self.codes.tobytes())
        h.update(self.domain.to_json(indent=None).encode())
        return h.hexdigest()[:16]

    def project(self, names: list[str]) -> Dataset:
        idx = [self.domain.index(n) for n in names]
        return Dataset(self.codes[:, idx], self.domain.project(names), self.name, source_id=self.source_id)

    def decode(self, numeric: str = "interval") -> pd.DataFrame:
        return self.domain.decode(self.codes, numeric)


# ---------------------------------------------------------------- reading
def _read_bytes(source) -> tuple[bytes, str]:
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            raise DataError(f"File not found: {path}")
        if path.is_dir():
            raise DataError(f"{path} is a folder; give a CSV or Parquet file.")
        return path.read_bytes(), path.name
    if isinstance(source, (bytes, bytearray)):
        return bytes(source), "upload"
    if hasattr(source, "read"):
        data = source.read()
        if isinstance(data, str):
            data = data.encode("utf-8")
        return data, getattr(source, "name", "upload")
    raise DataError("Give a file path, bytes or a file object.")


def _from_unicode_bom(raw: bytes, name: str) -> bytes:
    """UTF-16 and UTF-32 text with a byte-order mark (Excel's "Unicode Text" export: UTF-16, tab-separated) as
    UTF-8 bytes; anything else unchanged."""
    for bom, enc in (
        (b"\xff\xfe\x00\x00", "utf-32"),
        (b"\x00\x00\xfe\xff", "utf-32"),
        (b"\xff\xfe", "utf-16"),
        (b"\xfe\xff", "utf-16"),
    ):
        if raw.startswith(bom):
            try:
                return raw.decode(enc).encode("utf-8")
            except UnicodeDecodeError:
                raise DataError(f"{name}: starts like {enc.upper()} text but does not decode as it.") from None
    return raw


def _decode_text(raw: bytes) -> tuple[str, str]:
    """The text and the encoding it decodes with (UTF-8, with or without a byte-order mark; Windows-1252; Latin-1)."""
    for enc in ("utf-8-sig", "cp1252", "latin-1"):
        try:
            return raw.decode(enc), enc
        except UnicodeDecodeError:
            continue
    raise DataError("Could not decode the file as UTF-8 or Latin-1 text.")  # latin-1 never fails; kept for clarity


def _decoded(raw: bytes, name: str, what: str) -> tuple[bytes, str, str]:
    """(bytes, text, encoding) of a text file: UTF-16 or -32 with a byte-order mark as UTF-8 bytes, then decoded
    (:func:`_decode_text`); a binary file is refused ("this looks like a binary file, not ``what``")."""
    raw = _from_unicode_bom(raw, name)
    if b"\x00" in raw[:4096]:
        raise DataError(f"{name}: this looks like a binary file, not {what}.")
    text, encoding = _decode_text(raw)
    return raw, text, encoding


def read_text_file(source, what: str) -> str:
    """A small text file the user gives beside a table (a CSV codebook), decoded as tables are; a binary file is
    refused with ``what`` in the message."""
    raw, name = _read_bytes(source)
    return _decoded(raw, name, f"a {what} (CSV text)")[1]


#: Runs of spaces as the delimiter (statistics packages' .dat/.txt exports: ``'OBS' 'GPA' 'TUCE'``).
WHITESPACE = r"\s+"


def _sniff_delimiter(text: str) -> str:
    sample = "\n".join(text.splitlines()[:50])
    try:
        found = csv.Sniffer().sniff(sample, delimiters="".join(DELIMITERS)).delimiter
    except csv.Error:
        header = text.splitlines()[0] if text else ""
        counts = {d: header.count(d) for d in DELIMITERS}
        best = max(counts, key=lambda d: counts[d])
        found = best if counts[best] else ","
    header = text.lstrip("\r\n").split("\n", 1)[0]
    return WHITESPACE if found not in header and _space_separated(text) else found


def _space_separated(text: str) -> bool:
    """Whether the first 50 lines hold no common delimiter and split on runs of spaces into the same number (two
    or more) of fields each: a space-separated table, not one column of text."""
    lines = [line for line in text.lstrip("\r\n").splitlines()[:50] if line.strip()]
    if len(lines) < 2 or any(d in line for line in lines for d in DELIMITERS):
        return False
    widths = {len(line.split()) for line in lines}
    return len(widths) == 1 and widths.pop() >= 2


def _header_fields(text: str, delim: str) -> list[str]:
    first = text.lstrip("\r\n").split("\n", 1)[0].rstrip("\r")
    if delim == WHITESPACE:  # names may be quoted, 'OBS' or "OBS", with no spaces inside
        return [f[1:-1] if len(f) > 1 and f[0] == f[-1] and f[0] in "'\"" else f for f in first.split()]
    fields = next(csv.reader(io.StringIO(first), delimiter=delim), [])
    # Every name in single quotes ('popul'\t'TVnews': statsmodels' and some statistics exports): the quotes are
    # quoting, not part of the names.  A header where only some names carry them keeps them as they are.
    if len(fields) > 1 and all(len(f) > 1 and f[0] == f[-1] == "'" for f in fields):
        fields = [f[1:-1] for f in fields]
    return fields


def read_table(source, filename: str | None = None, min_columns: int = 2) -> pd.DataFrame:
    """Read a CSV or Parquet table (path, bytes or file object) into a DataFrame.  ``min_columns``: 1 for a release
    read back (a table whose other columns were all left out is still a release of that one column)."""
    raw, name = _read_bytes(source)
    name = filename or name
    digest = source_digest(raw)
    if not raw or not raw.strip():
        raise DataError(f"{name}: the file is empty. Upload a table with a header row and data rows.")
    if raw[:4] == b"PAR1" or str(name).lower().endswith((".parquet", ".pq")):
        try:
            df = pd.read_parquet(io.BytesIO(raw))
        except Exception as exc:  # noqa: BLE001 -- pyarrow raises many types for corrupt files
            raise DataError(f"{name}: not a readable Parquet file ({type(exc).__name__}).") from None
    else:
        raw, text, encoding = _decoded(raw, name, "CSV text. Upload CSV or Parquet")
        delim = _sniff_delimiter(text)
        header = _header_fields(text, delim)
        del text  # the parser reads the bytes: a decoded copy in a StringIO took 4 bytes a character
        if encoding == "utf-8-sig":
            raw, encoding = raw.removeprefix(b"\xef\xbb\xbf"), "utf-8"
        raw = raw.lstrip(b"\r\n")
        if len(header) > MAX_COLUMNS:
            raise DataError(
                f"{name}: the header has {len(header):,} fields (limit {MAX_COLUMNS:,}). Check the delimiter, "
                "or split the table."
            )
        names, renamed = unique_column_names(header)
        try:
            with warnings.catch_warnings():
                # pandas only *warns* when data rows are longer than the header: make it an error.
                warnings.simplefilter("error", pd.errors.ParserWarning)
                df = pd.read_csv(
                    io.BytesIO(raw),
                    encoding=encoding,
                    sep=delim,
                    header=0,
                    names=names or None,
                    na_values=[""],  # the other missing texts are read by _read_missing_marks
                    keep_default_na=False,
                    dtype=str,
                    skipinitialspace=True,
                    nrows=MAX_ROWS + 1,
                    on_bad_lines="error",
                    engine="c",
                    low_memory=True,  # in chunks: every column is text (dtype=str), so no type is guessed per chunk
                    index_col=False,
                )
        except pd.errors.EmptyDataError:
            raise DataError(f"{name}: the file has no header row.") from None
        except pd.errors.ParserWarning:
            raise DataError(
                f"{name}: some rows have more fields than the header ({len(header)}). "
                "Check the delimiter and quoting, or add the missing column names."
            ) from None
        except (pd.errors.ParserError, ValueError) as exc:
            msg = str(exc).splitlines()[0][:200]
            raise DataError(
                f"{name}: could not parse as CSV with delimiter "
                f"{'runs of spaces' if delim == WHITESPACE else repr(delim)} ({msg}). "
                "Check that every row has the same number of fields."
            ) from None
        df.attrs["renamed"] = renamed
        if len(df) > MAX_ROWS:
            raise DataError(f"{name}: more than {MAX_ROWS:,} rows; sample the table first.")
        _read_missing_marks(df)
    df = validate_table(df, name, min_columns)
    df.attrs["source_digest"] = digest
    df.attrs["name"] = Path(str(name)).stem[:80] or "table"
    return df


#: ``df.attrs`` key of a table read from CSV: which rows of each column held each missing-value text
#: (:func:`missing_marks`).
MISSING_MARKS = "missing_marks"


def _read_missing_marks(df: pd.DataFrame) -> None:
    """Make the cells holding a missing-value text ("?", "NA", "NULL"...: :data:`MISSING_TOKENS`) missing, and keep
    in ``df.attrs`` which rows of each column held each, the empty cell included (:class:`_Marks`).  Exact,
    private: read only by the exponential mechanism choosing how a release writes missing cells
    (:func:`dpcore.ingest.missing_text_choice`), or for the data owner's eyes
    (:func:`dpcore.ingest.exact_missing_text`)."""
    texts = [t for t in MISSING_TOKENS if t]
    held: dict[str, dict[str, bytes]] = {}
    for c in df.columns:
        col = df[c]
        masks = {"": col.isna().to_numpy()}
        hit = col.isin(texts).to_numpy()
        if hit.any():
            where = np.flatnonzero(hit)
            vals = col.to_numpy()[where]
            for t in pd.unique(vals):
                mask = np.zeros(len(df), dtype=bool)
                mask[where[vals == t]] = True
                masks[str(t)] = mask
            df[c] = col.mask(hit)
        kept = {t: np.packbits(m).tobytes() for t, m in masks.items() if m.any()}
        if kept:
            held[str(c)] = kept
    df.attrs[MISSING_MARKS] = _Marks(len(df), held)


class _Marks(int):
    """Which rows of each column held each missing-value text (packed bits), for ``df.attrs``.  Immutable, so every
    copy of the table's ``attrs`` (pandas deep-copies them on nearly every operation, a column read included)
    shares it instead of copying a dict per column; an ``int`` (the number of rows), so ``attrs`` stay JSON (pyarrow
    and Streamlit serialise them, and would drop them all with a warning).  A table read back from Arrow or Parquet
    gets the plain number: no marks."""

    columns: dict[str, dict[str, bytes]]

    def __new__(cls, rows: int, columns: dict[str, dict[str, bytes]]) -> _Marks:
        obj = super().__new__(cls, rows)
        obj.columns = columns
        return obj

    def __copy__(self) -> _Marks:
        return self

    def __deepcopy__(self, memo) -> _Marks:
        return self


def missing_marks(df: pd.DataFrame) -> dict[str, dict[str, np.ndarray]] | None:
    """For each column, which of its rows held each missing-value text ("" an empty cell), as packed bits (uint8,
    :func:`numpy.packbits` of the rows; :func:`numpy.unpackbits` with ``count=len(df)`` gives them back), in a table
    read from CSV (private, exact); None where the table was not read so (built in memory, Parquet) or has lost or
    gained rows since.  Packed, a group's rows are or-ed and counted without a byte a row per column."""
    marks = df.attrs.get(MISSING_MARKS)
    if not isinstance(marks, _Marks) or int(marks) != len(df):
        return None
    return {c: {t: np.frombuffer(b, dtype=np.uint8) for t, b in v.items()} for c, v in marks.columns.items()}


def table_digest(df: pd.DataFrame) -> str:
    """SHA-256 of a table built in memory (no source bytes): its header and cell values, row order included.
    The ledger keys such a table by this; the same rows read from a file are keyed by the file's bytes."""
    h = hashlib.sha256("\x1f".join(map(str, df.columns)).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()


def source_digest(raw: bytes) -> str:
    """SHA-256 (hex) of a file's bytes: the identity of a private table in the privacy ledger."""
    return hashlib.sha256(raw).hexdigest()


def unique_column_names(header) -> tuple[list[str], list[dict]]:
    """Header names made unique and non-empty, and the renames made.

    A repeated name keeps its first occurrence and becomes ``name_2``, ``name_3`` after it; an empty name
    becomes ``column_<1-based position>``; a generated name never collides with a name already in the header.
    The header is public (it is not protected by the release), so renaming it costs nothing.
    """
    original = [str(h).strip() for h in header]
    taken = set(original)
    out: list[str] = []
    used: set[str] = set()
    renamed: list[dict] = []
    seen_count: dict[str, int] = {}
    for pos, h in enumerate(original, start=1):
        if not h or h.startswith("Unnamed:"):
            base, k = f"column_{pos}", 1
            cand = base
        elif h in used:
            base = h
            k = seen_count.get(h, 1) + 1
            cand = f"{h}_{k}"
        else:
            base, k, cand = h, 1, h
        while cand in used or (cand != h and cand in taken):
            k += 1
            cand = f"{base}_{k}"
        if cand != h:
            seen_count[base] = k
            renamed.append({"original": h, "name": cand})
        else:
            seen_count.setdefault(h, 1)
        used.add(cand)
        out.append(cand)
    return out, renamed


def validate_table(df: pd.DataFrame, name: str = "table", min_columns: int = 2) -> pd.DataFrame:
    """Check a table's shape and make its column names unique and non-empty (renames in ``df.attrs``)."""
    if df.shape[1] == 0:
        raise DataError(f"{name}: no columns found.")
    if df.shape[1] > MAX_COLUMNS:
        raise DataError(f"{name}: {df.shape[1]:,} columns (limit {MAX_COLUMNS:,}); split the table.")
    earlier = list(df.attrs.get("renamed", []))
    names, renamed = unique_column_names(df.columns)
    df.columns = names
    df.attrs["renamed"] = earlier + renamed
    if df.shape[1] == 1 and min_columns > 1:
        raise DataError(
            f"{name}: only one column found ({df.columns[0][:60]!r}). Synthetic data needs at least two "
            "attributes; if the file has more, check its delimiter (supported: comma, semicolon, tab, pipe, runs "
            "of spaces)."
        )
    if len(df) == 0:
        raise DataError(f"{name}: the file has a header but no data rows.")
    return df


def load_dataset(table, domain: Domain, name: str = "data") -> Dataset:
    """Encode a raw table with a schema. ``table`` is a DataFrame, a path or bytes."""
    df = table if isinstance(table, pd.DataFrame) else read_table(table)
    codes, clipped = domain.encode(df)
    return Dataset(codes, domain, name, clipped, source_id=df.attrs.get("source_digest"))


def load_domain(source) -> Domain:
    raw, _ = _read_bytes(source)
    return Domain.from_json(raw)


def load_pgm(csv_path, domain_path=None) -> Dataset:
    """The integer-coded format of the benchmark literature: ``x.csv`` + ``x-domain.json``."""
    csv_path = Path(csv_path)
    if domain_path is None:
        domain_path = csv_path.with_name(csv_path.stem + "-domain.json")
    domain = load_domain(domain_path)
    df = read_table(csv_path)
    missing = [c for c in domain.names if c not in df.columns]
    if missing:
        raise DataError(f"{csv_path.name}: columns {missing} named in the domain file are missing.")
    # Cells are read as text (read_table); an integer code is digits only, each distinct cell checked once (a coded
    # column holds a few distinct texts: 8 million cells checked one by one took 4 s).
    codes = np.empty((len(df), len(domain.names)), dtype=np.int64)
    for j, name in enumerate(domain.names):
        inverse, distinct = pd.factorize(df[name], sort=False)
        texts = pd.Series(distinct, dtype=object).astype(str)
        if (inverse < 0).any() or not texts.str.fullmatch(r"\s*[+-]?\d+\s*").all():
            raise DataError(f"{csv_path.name}: integer-coded data must contain only integer codes.")
        codes[:, j] = pd.to_numeric(texts).to_numpy(dtype=np.int64)[inverse]
    try:
        return Dataset(codes, domain, csv_path.stem, source_id=df.attrs.get("source_digest"))
    except DomainError as exc:
        raise DataError(f"{csv_path.name}: {exc}") from None


# -------------------------------------------------------------- bundled data
def bundled_path(name: str = "adult_census.csv") -> Path:
    return Path(str(resources.files("dpcore.datasets").joinpath(name)))


def bundled_adult_table() -> pd.DataFrame:
    return read_table(bundled_path("adult_census.csv"))


def bundled_adult_domain() -> Domain:
    """The declared public schema of the bundled Adult sample (from the UCI codebook)."""
    return Domain.from_dict(json.loads(bundled_path("adult_census.schema.json").read_text()))


def bundled_adult() -> Dataset:
    return load_dataset(bundled_adult_table(), bundled_adult_domain(), "adult_census")


def load_any(data: str | Path, domain: str | Path | None = None) -> Dataset:
    """CLI helper: ``adult`` (bundled), a pgm pair, or a table with a schema JSON.

    Without a schema the domain is inferred from the data (marked not private).
    """
    from .domain import infer_domain

    if str(data) in ("adult", "adult_census", "bundled"):
        return bundled_adult()
    path = Path(data)
    if domain is not None:
        dom = load_domain(domain)
        if all(
            a.kind == "categorical" and a.values == tuple(str(i) for i in range(a.size - a.missing))
            for a in dom.attributes
        ):
            try:
                return load_pgm(path, domain)
            except DataError:
                pass
        return load_dataset(path, dom, path.stem)
    sibling = path.with_name(path.stem + "-domain.json")
    if sibling.exists():
        return load_pgm(path, sibling)
    df = read_table(path)
    return load_dataset(df, infer_domain(df), path.stem)
