"""Column roles: what each column of a table is, decided from the data or from what the user confirms.

Every column gets a :class:`Role`: ``"categorical"``, ``"numeric"`` (integer or real),
``"datetime"`` (a strftime format and a public granularity: year, month or day) or
``"excluded"`` with the reason (empty, constant, identifier-like, free text, mixed types).

A role reads the data, so it is private like everything else read off the data.  Two ways:

* :func:`propose_roles` -- decided from exact counts, **for the data owner's eyes only** (the
  app shows it in the roles table).  What the user confirms or edits there is a public
  choice: pass it as ``roles=`` (see :func:`confirmed`) and it counts as declared.
* :func:`private_roles` -- the same decisions made from **noisy** counts, released under
  zCDP and charged to the schema's share of ε; what the CLI and the API use when the user
  confirms nothing.  Its roles have provenance ``"dp"``.

Both apply one rule, :func:`decide_role`, to a :class:`ColumnStats` (exact or noisy), so
they differ only in the noise.

**The statistics and their sensitivity** (replace-one neighbours: one row changes, so one
cell of every column changes).  Per column: ``present`` (non-missing cells), ``numeric``
(cells that parse as a number), ``non_integer`` (numbers that are not whole), ``date`` (cells
that parse in the chosen date format), ``long_text`` (cells of more than
:data:`LONG_TEXT_CHARS` characters), ``distinct`` (distinct non-missing values) and ``mode``
(cells holding the most frequent value).  The five cell counts are sums of a function of
each cell alone: one changed cell moves each by at most 1.  ``mode`` is the largest of the
value counts, each of which moves by at most 1, so it moves by at most 1.  ``distinct``
moves by at most 1 too: replacing value a by b takes a's count down (a disappears only if
it was held once: -1) and b's up (b appears only if it was absent: +1), so the change is
-1, 0 or +1.  (A count of *values held once* is different: the same change can turn a's
count from 2 to 1 and create b, moving it by 2 -- which is why the rule reads ``distinct``
and never a singleton count.)  So one changed row moves the vector of the seven statistics
of p columns by at most 1 in each of 7p coordinates: L2 sensitivity sqrt(7p).  Discrete
Gaussian noise of scale σ on every coordinate is 7p/(2σ²)-zCDP ([CKS20]: the same ρ as the
continuous Gaussian mechanism; Rényi divergences add over independent coordinates); the
date format is picked per column by the exponential mechanism over :data:`DATE_FORMATS`
with score = parse count (sensitivity 1), ε_f²/8-zCDP each (Cesar & Rogers 2021).  A fixed
public share of the roles' ρ (:data:`DATE_FORMAT_SHARE`) goes to the format choices, the
rest to the counts.  Half of that share picks, per column too, how its numbers are written
(:data:`dpcore.domain.NUMBER_STYLES`: plain, "$1,234.50", "63.5%"...) by the same exponential mechanism
with score = the cells written in the style (:func:`dpcore.domain.style_votes`, sensitivity 1), plain
given a public head start (:func:`style_head_start`) so a small or plain table stays plain; the draw
comes from a stream of its own, so the other draws are those of a run without it.  The style is chosen first and
the column's numbers counted as it reads them (a decimal comma reads "1,234" as 1.234; each count still a sum over
cells of a function of the cell and the released style, sensitivity 1), like the date count in the chosen format.

The header is public (it is not protected by the release), so a name such as ``id`` or
``case_number`` may mark an identifier at no cost, and one that names a year (``visit_year``, ``YearBuilt``:
:func:`year_header`) lets its whole numbers in 1900-2099 count as dates in the format ``%Y`` -- one more
format for the exponential mechanism, its count a sum over cells like the others (sensitivity 1).  Such a
column is read as years (a date by year) when that count possibly reaches TYPE_RATE of its cells, so its
bounds come from the dates' one-bin-per-year histogram and it comes back as 2023, not as a draw from the
power-of-two range [1024, 2047] numbers are located in.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from .domain import (
    LEADING_ZERO,
    MISSING_LABEL,
    MISSING_TOKENS,
    NONE_TEXT,
    NUMBER_STYLES,
    OTHER_LABEL,
    _canonical_text,
    none_cells,
    parse_dates,
    parse_numbers,
    style_votes,
    to_datetimes,
    whole,
    written_style,
)
from .errors import BudgetError, DataError

ROLES = ("categorical", "numeric", "datetime", "excluded")
#: The words a user's role text may name a date column with (``date:%d/%m/%Y``): :meth:`Role.parse`.
DATE_ROLE_WORDS = ("date", "datetime", "time", "timestamp")
#: The strftime formats a date column may have (day/month orders with '-', '/', '.'; with or without
#: time; ISO first; English month names as spreadsheets and statistics packages write them: 01-Jan-2020,
#: Jan-1-1995, January 1, 2020).  A cell counts as a date in a format only if it has that format's exact shape.
DATE_FORMATS = (
    "%Y-%m-%d",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%dT%H:%M",
    "%Y-%m-%dT%H:%M:%S%z",
    "%Y-%m-%d %H:%M:%S%z",
    "%Y-%m-%dT%H:%M:%SZ",
    "%Y/%m/%d",
    "%Y/%m/%d %H:%M:%S",
    "%Y-%m",
    "%d/%m/%Y",
    "%d/%m/%Y %H:%M:%S",
    "%d/%m/%Y %H:%M",
    "%d-%m-%Y",
    "%d.%m.%Y",
    "%d.%m.%Y %H:%M",
    "%m/%d/%Y",
    "%m/%d/%Y %H:%M:%S",
    "%m/%d/%Y %H:%M",
    "%m-%d-%Y",
    "%d-%b-%Y",
    "%d %b %Y",
    "%b-%d-%Y",
    "%b %d, %Y",
    "%d %B %Y",
    "%B %d, %Y",
    "%Y%m%d",  # 19580329: eight digits, a date whose year lies in YEAR_RANGE (registry and statistics exports)
    "%Y",  # a year alone: counted only for a column whose header names a year (:func:`year_header`)
    # Added later, at the end (the list's order breaks ties only): timestamps with fractions of a second as
    # JavaScript, APIs and databases write them, US times with AM/PM as spreadsheets and open-data portals export
    # them, and a month named before its year.
    "%Y-%m-%dT%H:%M:%S.%fZ",
    "%Y-%m-%dT%H:%M:%S.%f",
    "%Y-%m-%d %H:%M:%S.%f",
    "%m/%d/%Y %I:%M:%S %p",
    "%m/%d/%Y %I:%M %p",
    "%b %Y",
    "%B %Y",
    # Two-digit years, as spreadsheets' short date display exports them ("8/10/22", the US default; "10/08/22";
    # "05-Mar-21" from databases): 00-68 are 2000-2068, 69-99 1969-1999 (strptime's rule).  Not "%d.%m.%y": it
    # reads version numbers ("3.10.4") as dates.
    "%m/%d/%y",
    "%d/%m/%y",
    "%m/%d/%y %H:%M",
    "%d-%b-%y",
)
#: How many formats the list held before the two-digit years: a demo's fixed seed draws the format choice's noise
#: for those from the run's stream and for the later ones from a stream of their own (ADDED_FORMATS_STREAM), so
#: fixed-seed releases of tables without such dates stay as they were (:meth:`Randomness.exponential_mechanism`).
FORMATS_BEFORE_TWO_DIGIT_YEARS = DATE_FORMATS.index("%m/%d/%y")
#: The compact form: its cells are whole numbers too, so the rule reads it before reading them as numbers.
COMPACT_DATE = "%Y%m%d"
#: The seven statistics per column, in the order of the noisy vector.
STATISTICS = ("present", "numeric", "non_integer", "date", "distinct", "mode", "long_text")
#: L∞ sensitivity of each statistic under replace-one neighbours (see the module docstring).
SENSITIVITY = {"present": 1, "numeric": 1, "non_integer": 1, "date": 1, "distinct": 1, "mode": 1, "long_text": 1}
#: Share of the roles' ρ spent choosing date formats and number styles (the rest goes to the noisy counts).
DATE_FORMAT_SHARE = 0.25
#: The number styles' draws come from a stream derived from the run's (:meth:`Randomness.derived`) with this tag.
STYLE_STREAM = 1
#: The missing-value text's draw (:func:`missing_text_choice`) comes from the stream derived with this tag.
MISSING_TEXT_STREAM = 2
#: A demo's draws for the date formats added after the first FORMATS_BEFORE_TWO_DIGIT_YEARS come from this stream.
ADDED_FORMATS_STREAM = 3

# ---- the rule's public thresholds
#: Below this fraction of non-missing cells a column is "empty".
EMPTY_RATE = 0.01
#: A column whose most frequent value fills at least this fraction of its cells is "constant" (a rate, so the
#: decision survives noise; the same cut on the distinct count would need σ well below one value).
CONSTANT_RATE = 0.99
#: A column is numeric (a date) when at least this fraction of its cells parse as numbers (dates) ...
TYPE_RATE = 0.95
#: ... and mixed when between this fraction and TYPE_RATE do.
MIXED_RATE = 0.5
#: Numbers are whole when fewer than this fraction of them are not (a column is nearly always all whole or mostly
#: not: a loose cut keeps the decision right under noise).
NON_INTEGER_RATE = 0.25
#: ... and, among the numbers other than the most frequent value, fractions clearly (2σ) making up this share make
#: a column real even when the old rule says whole: a discount that is 0 on 80% of the rows and 0.05-0.2 otherwise
#: has 20% fractions overall, and was typed whole -- its fractions then came back as 0 or 1.
FRACTION_Z = 2.0
#: A column that is clearly at least MIXED_RATE numbers but not TYPE_RATE of them is numbers with texts beside them
#: (a lab value written "<0.5" under its assay's limit on 15% of the rows) when its numbers have decimals, or its
#: noisy distinct count is over this many values by MIXED_NUMBERS_Z·σ: kept as numbers, its frequent texts
#: released as values of their own (:func:`dpcore.tabular._wants_texts`).  As categories its numbers had each to
#: clear partition selection's threshold, and came back as "(other)"; or it was left out as free text for its many
#: distinct values.  Fewer whole numbers (a 1-5 scale with "Don't know") stay categories, which keep every answer.
MIXED_NUMBER_VALUES = 20
MIXED_NUMBERS_Z = 2.0
#: What a numeric (date) role with cells that are not numbers (dates) says of them (its reason).
_TEXTS_NOTE = (
    "cells that are not {} are read as missing, but for texts kept as values of their own (its frequent ones, "
    "released privately with its bounds where its role is decided privately; or declared as its texts)"
)
TEXT_CELLS_NOTE = _TEXTS_NOTE.format("numbers")
MIXED_NUMBERS_REASON = "numbers with texts beside them: " + TEXT_CELLS_NOTE
DATE_TEXT_NOTE = _TEXTS_NOTE.format("dates")
#: A column that is clearly at least MIXED_RATE dates in its format but not TYPE_RATE of them ("unknown" or "not
#: recorded" beside visit dates on 15% of the rows) is dates when its noisy distinct count is over
#: MIXED_NUMBER_VALUES by MIXED_NUMBERS_Z·σ, as numbers with texts are: its frequent texts are kept.  As text
#: its many distinct dates made it free text, left out whole; a few dates (three survey waves and "unknown") stay
#: categories, which keep each date as written.
MIXED_DATES_REASON = "dates with texts beside them: " + DATE_TEXT_NOTE
#: Whole-number columns with at most this many distinct values are categories (0/1 and 1/2 flags).  More values
#: (a 1-10 score, counts of priors) stay numbers: their bounds are cheap to locate (one histogram), while every
#: value of a category must clear partition selection's threshold on its own, and values that do not came back
#: as "(other)" -- text in a numeric column.
SMALL_INTEGER_CATEGORIES = 2
#: Text with at least this many distinct values per non-missing cell is identifier-like ...
IDENTIFIER_RATE = 0.9
#: ... or, when its header names an identifier, this many.
IDENTIFIER_HEADER_RATE = 0.5
#: Text with at least this many distinct values per cell has too many categories to be one (high cardinality).
HIGH_CARDINALITY_RATE = 0.5
#: A cell longer than this many characters is long text; a column with LONG_TEXT_RATE of them is free text.
LONG_TEXT_CHARS = 30
LONG_TEXT_RATE = 0.5
#: Above this noise (σ as a fraction of n) the counts cannot make the rule's finer decisions (constant, identifier,
#: free text): a column is then numeric (or a date) when its noisy count of numbers (dates) reaches MIXED_RATE of
#: its noisy present cells -- numbers stay numbers -- and categories otherwise (partition selection then keeps
#: only values that clear its threshold, so identifiers and free text leave with nothing released).
UNDECIDABLE_NOISE = 0.1
#: Up to this noise (σ / n) the share of numbers still decides the type under heavy noise (a text column is then
#: read as numbers with probability about 1%, and left out when no bounds can be located); above it, categories.
TYPED_NOISE_LIMIT = 0.2
UNDECIDABLE_REASON = (
    "kept as categories: the noise (σ ≈ {sigma:,.0f} rows) is too large to decide its role; confirm the role"
)
UNDECIDABLE_TYPED_REASON = (
    "decided under heavy noise (σ ≈ {sigma:,.0f} rows) from its share of {what}; confirm the role"
)
#: How many noise standard deviations a decision that needs a small absolute count (constant, few values)
#: must clear: with heavy noise the rule keeps the column rather than guessing.
#: Three: each decision errs with probability ≈ 0.13% (one-sided Gaussian tail), so a table of a dozen privately
#: typed columns rarely loses one (at two, 2.3% a decision: a 74-value age column read as "constant" one run in 60).
CONFIDENCE_SIGMAS = 3.0
#: A column counts as present -- and a type's cells as there at all -- where its noisy count reaches this many σ,
#: not CONFIDENCE_SIGMAS: at 3σ a smoker's cigarettes a day, present on 20% of 2,000 rows at σ ≈ 6% of them, was
#: dropped as empty in a third of releases. A column with no cells reaches 2σ in 2.3% of draws; it is then left out
#: later, when nothing stands out in it.
PRESENT_Z = 2.0

CONSTANT_REASON = "constant: one value in (nearly) every cell"
CONTACT_FLAG_REASON = "kept: its header names an identifier or contact details, but its values repeat (a flag)"
IDENTIFIER_HEADER_REASON = "identifier: its header names an identifier and values rarely repeat"
_ID_TOKENS = {"id", "ids", "uuid", "guid", "ssn", "key"}
_NUMBER_TOKENS = {"number", "no", "num", "nr"}
#: Words that name a record's reference on their own (Titanic's ``Ticket``: 681 distinct codes on 891 rows, most of
#: them numbers, came back as numbers spread over [0, 524287]): an identifier for the private role decision -- when
#: its values rarely repeat -- not by the header alone.
_REFERENCE_TOKENS = {"ticket", "voucher", "receipt"}
#: Words that, before a number word, make the header name a record's identifier by itself (``case_number``,
#: ``record no``, ``accountNum``): excluded at no cost.  Other "… number" headers (Adult's ``education-num``, a
#: count of years) go to the private role decision, which excludes them only when their values rarely repeat.
_ENTITY_TOKENS = {
    "account", "application", "booking", "card", "case", "claim", "contract", "customer", "document", "employee",
    "file", "invoice", "licence", "license", "line", "loan", "member", "order", "passport", "patient", "person",
    "policy", "record", "ref", "reference", "registration", "reservation", "row", "serial", "student", "ticket",
    "transaction", "user", "vehicle",
}  # fmt: skip
_DATE_LIKE = re.compile(
    r"^\d{8}$|^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}"
    r"(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?: ?[AaPp][Mm])?(?:Z|[+-]\d{2}:?\d{2})?)?$|^\d{4}-\d{1,2}$"
    r"|^\d{1,2}[- ][A-Za-z]{3,9}[- ](?:\d{2}){1,2}$|^[A-Za-z]{3,9}[- ]\d{1,2},?[- ]\d{4}$|^[A-Za-z]{3,9} \d{4}$"
)
_FORMAT_PIECES = {
    "%Y": r"\d{4}",
    "%y": r"\d{2}",
    "%m": r"\d{1,2}",
    "%d": r"\d{1,2}",
    "%H": r"\d{1,2}",
    "%M": r"\d{2}",
    "%S": r"\d{2}",
    "%z": r"[+-]\d{2}:?\d{2}",
    "%b": r"[A-Za-z]{3}",
    "%B": r"[A-Za-z]{3,9}",
    "%f": r"\d{1,9}",
    "%I": r"\d{1,2}",
    "%p": r"[AaPp][Mm]",
}


def _format_regex(fmt: str) -> re.Pattern:
    out, i = [], 0
    while i < len(fmt):
        piece = fmt[i : i + 2]
        if piece in _FORMAT_PIECES:
            out.append(_FORMAT_PIECES[piece])
            i += 2
        else:
            out.append(re.escape(fmt[i]))
            i += 1
    return re.compile("^" + "".join(out) + "$")


_FORMAT_RE = {f: _format_regex(f) for f in DATE_FORMATS}
_FORMAT_RE[COMPACT_DATE] = re.compile(r"^(19|20)\d{6}$")  # exactly eight digits, years 1900-2099


def date_granularity(fmt: str) -> str:
    """The finest public granularity a format shows: day, month or year."""
    if "%d" in fmt:
        return "day"
    return "month" if any(m in fmt for m in ("%m", "%b", "%B")) else "year"


#: Header words that name a person or free text (public: the header is not protected by the release).
_PERSON_TOKENS = {
    "name",
    "names",
    "surname",
    "forename",
    "firstname",
    "lastname",
    "fullname",
    "address",
    "street",
}
#: Header words that name contact details -- or a yes/no flag about them ("telephone: yes/none" in survey and credit
#: files).  The header alone does not exclude them: the private role decision does, when values rarely repeat.
_CONTACT_TOKENS = {"email", "mail", "phone", "telephone", "mobile", "fax"}
_TEXT_TOKENS = {
    "note",
    "notes",
    "comment",
    "comments",
    "description",
    "descriptions",
    "remark",
    "remarks",
    "narrative",
    "summary",
    "details",
    "desc",
}
#: "text" names free text only alone or after these words: ``score_text`` (COMPAS: Low/Medium/High) is a category.
_TEXT_PREFIXES = {"free", "full", "raw", "body", "open", "message", "response", "answer"}
HEADER_PERSON_REASON = "identifies a person: its header names one (a public rule; bring it back to keep it)"
HEADER_TEXT_REASON = "free text: its header says so (a public rule; bring it back to keep it)"
HEADER_ID_REASON = "identifier: its header names one (a public rule; bring it back to keep it)"


#: Header words that name a year (``visit_year``, ``YearBuilt``, ``birthyear``, ``yob``); ``years`` (a duration:
#: ``years_edu``) does not.
_YEAR_TOKENS = {"year", "yr", "yob"}
#: The years a year column's values are counted in: the date bounds' public grid (:data:`dpcore.discovery`'s
#: DATE_SEARCH), so that a column read as years can be located.
YEAR_RANGE = (1900, 2099)


YEAR_REASON = "years: its header names a year and its whole numbers lie in 1900-2099 (read as dates, by year)"
COMPACT_DATE_REASON = "dates written as eight digits, year first (19580329): read as dates, written back the same way"


def year_header(name: str) -> bool:
    """Whether a (public) header names a year: a word ``year``, ``yr`` or ``yob``, or one ending in ``year``
    (``birthyear``) or beginning ``yearof`` or ``yearbuilt``; not ``years`` (a duration) or ``yearly``.  Such a
    column's whole numbers in YEAR_RANGE count as dates in the format ``%Y`` (:func:`column_counts`): read as
    years, it gets the dates' one-bin-per-year bounds and comes back as 2023, not as a draw from the power-of-two
    range [1024, 2047]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name))
    tokens = [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]
    return any(t in _YEAR_TOKENS or t.endswith("year") or t.startswith(("yearof", "yearbuilt")) for t in tokens)


def _compact_date_count(nums: np.ndarray, counts: np.ndarray) -> int:
    """Cells holding a whole number that reads as a date in :data:`COMPACT_DATE` with its year in YEAR_RANGE
    (``nums``: the distinct values as numbers, NaN for none)."""
    lo, hi = YEAR_RANGE[0] * 10_000 + 101, YEAR_RANGE[1] * 10_000 + 1231
    ok = whole(nums) & (nums >= lo) & (nums <= hi)
    if not ok.any():
        return 0
    text = pd.Series(nums[ok].astype(np.int64).astype(str))
    parsed = pd.to_datetime(text, format=COMPACT_DATE, errors="coerce").notna().to_numpy()
    return int(counts[ok][parsed].sum())


def _year_count(nums: np.ndarray, counts: np.ndarray) -> int:
    """Cells holding a whole number in YEAR_RANGE (``nums``: the distinct values as numbers, NaN for none)."""
    ok = whole(nums) & (nums >= YEAR_RANGE[0]) & (nums <= YEAR_RANGE[1])
    return int(counts[ok].sum())


def header_role(name: str) -> Role | None:
    """A role the header alone decides, at no privacy cost: identifiers, names and contact details of people, and
    free text are excluded by default (the user can bring any of them back)."""
    if identifier_header(name, by_header_alone=True):
        return Role(str(name), "excluded", reason=HEADER_ID_REASON, source="declared")
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name))
    tokens = [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]
    if tokens and (tokens[-1] in _PERSON_TOKENS or "".join(tokens[-2:]) in _PERSON_TOKENS):
        return Role(str(name), "excluded", reason=HEADER_PERSON_REASON, source="declared")
    text = tokens[-1:] == ["text"] and (len(tokens) == 1 or tokens[-2] in _TEXT_PREFIXES)
    if tokens and (tokens[-1] in _TEXT_TOKENS or text):
        return Role(str(name), "excluded", reason=HEADER_TEXT_REASON, source="declared")
    return None


def identifier_header(name: str, by_header_alone: bool = False) -> bool:
    """Whether a (public) header names an identifier: ``id``, ``person_id``, ``caseNumber``, ``record_no``.

    ``by_header_alone``: only the headers that are identifiers whatever their values (``…id``, ``uuid``, ``ssn``,
    ``key``, and a number word after a record's noun such as ``case`` or ``account``); ``education-num`` names
    one only for the private role decision (excluded when its values rarely repeat)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name))
    tokens = [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]
    if not tokens:
        return False
    if tokens[-1] in _ID_TOKENS:
        return True
    numbered = len(tokens) >= 2 and tokens[-1] in _NUMBER_TOKENS
    if not by_header_alone and tokens[-1] in _REFERENCE_TOKENS:
        return True
    return numbered and (not by_header_alone or tokens[-2] in _ENTITY_TOKENS)


def contact_header(name: str) -> bool:
    """Whether a (public) header names contact details (``email``, ``phone``, ``telephone``): an identifier when
    its values rarely repeat, a flag when they do."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name))
    tokens = [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]
    return bool(tokens) and (tokens[-1] in _CONTACT_TOKENS or "".join(tokens[-2:]) in _CONTACT_TOKENS)


# ---------------------------------------------------------------------------- roles
#: A confirmed numeric (date) role's suffix saying its cells hold texts beside the numbers (dates) (:attr:`Role.texts`).
TEXTS_SUFFIX = "+texts"


def split_texts_suffix(text: str) -> tuple[str, bool]:
    """``text`` without a trailing :data:`TEXTS_SUFFIX` ("real:.1+texts" -> "real:.1"), and whether it had one."""
    text = text.strip()
    if text.lower().endswith(TEXTS_SUFFIX):
        return text[: -len(TEXTS_SUFFIX)].rstrip(), True
    return text, False


@dataclass(frozen=True)
class Role:
    """What a column is.  ``source`` is the role's provenance: "declared" (the user's choice), "dp" (decided from
    noisy counts) or "inferred" (from exact counts: the data owner's proposal, never published as is).
    ``stats`` holds the counts the decision used (exact for a proposal, noisy for a private role)."""

    name: str
    role: str
    integer: bool = False
    format: str | None = None
    granularity: str | None = None
    reason: str = ""
    source: str = "declared"
    stats: dict | None = field(default=None, compare=False)
    #: numeric: how its numbers are written (:data:`dpcore.domain.NUMBER_STYLES`; "" plain)
    style: str = ""
    #: how the release writes its missing cells ("" empty, or one of :data:`dpcore.domain.MISSING_TOKENS`): chosen
    #: with private roles (:func:`missing_text_choice`), read exactly for a proposal (:func:`exact_missing_text`),
    #: declared with a confirmed role
    missing_text: str = ""
    #: numeric (datetime): some of its cells are texts beside its numbers ("<0.5" under an assay's limit) or dates
    #: ("unknown"): proposed from exact counts (:func:`propose_roles`), a fact the owner states by confirming the
    #: role; its frequent texts are then sought privately with its bounds (a private role says so by its released
    #: counts instead).  No text is named.
    texts: bool = False

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise DataError(f"Column {self.name!r}: role must be one of {ROLES}, not {self.role!r}.")
        if self.source not in ("declared", "dp", "inferred"):
            raise DataError(f"Column {self.name!r}: a role's source must be declared, dp or inferred.")
        if self.style not in NUMBER_STYLES:
            raise DataError(f"Column {self.name!r}: a number style must be one of {NUMBER_STYLES}.")
        if self.role != "numeric" and self.style:
            object.__setattr__(self, "style", "")  # a style is how numbers are written
        if self.missing_text not in MISSING_TOKENS:
            raise DataError(
                f"Column {self.name!r}: {self.missing_text!r} is not a missing-cell text the release writes; use one "
                f"of {[t for t in MISSING_TOKENS if t]} (or none: empty)."
            )
        if self.role == "excluded" and self.missing_text:
            object.__setattr__(self, "missing_text", "")
        if self.role not in ("numeric", "datetime") and self.texts:
            object.__setattr__(self, "texts", False)  # texts beside numbers (dates) belong to a numeric (date) column
        if self.role == "datetime":
            fmt = self.format or "%Y-%m-%d"
            gran = self.granularity or date_granularity(fmt)
            if gran not in ("year", "month", "day"):
                raise DataError(f"Column {self.name!r}: date granularity must be year, month or day.")
            object.__setattr__(self, "format", fmt)
            object.__setattr__(self, "granularity", gran)

    @property
    def kept(self) -> bool:
        return self.role != "excluded"

    @property
    def label(self) -> str:
        """Short text for a table or a CLI line: ``numeric (integer)``, ``date (%d/%m/%Y, month)``."""
        if self.role == "numeric":
            return f"numeric ({'integer' if self.integer else 'real'}{', with texts' if self.texts else ''})"
        if self.role == "datetime":
            return f"date ({self.format}, {self.granularity}{', with texts' if self.texts else ''})"
        if self.role == "excluded":
            return f"excluded: {self.reason}" if self.reason else "excluded"
        return self.role

    def to_dict(self, with_stats: bool = False) -> dict:
        d: dict[str, Any] = {"name": self.name, "role": self.role, "source": self.source}
        if self.role == "numeric":
            d["integer"] = self.integer
            if self.style:
                d["style"] = self.style
        if self.role == "datetime":
            d.update(format=self.format, granularity=self.granularity)
        if self.texts:
            d["texts"] = True
        if self.reason:
            d["reason"] = self.reason
        if self.missing_text:
            d["missing_text"] = self.missing_text
        if with_stats and self.stats is not None:
            d["stats"] = dict(self.stats)
        return d

    @classmethod
    def parse(cls, name: str, value) -> Role:
        """A user's role choice: a Role, a dict (as :meth:`to_dict`) or text: ``categorical``, ``numeric``,
        ``integer``, ``real`` (optionally with how the release writes the numbers, ``real:# kg``, ``integer:$,.2``:
        :data:`dpcore.domain.NUMBER_STYLES`; and ``+texts`` where some cells are texts beside the numbers,
        ``real:.1+texts``), ``date``/``datetime`` (optionally ``date:%d/%m/%Y`` or
        ``date:%Y-%m:month``; ``+texts`` as for numbers, ``date:%Y-%m-%d+texts``), ``excluded``.  Always
        ``source="declared"``."""
        if isinstance(value, Role):
            return replace(value, name=name, source="declared", stats=None)
        if isinstance(value, dict):
            keys = ("role", "integer", "format", "granularity", "reason", "style", "missing_text", "texts")
            kw = {k: value[k] for k in keys if k in value}
            if "role" not in kw:
                raise DataError(f"Column {name!r}: a role object needs a 'role'.")
            return cls(name, source="declared", **kw)
        if not isinstance(value, str):
            raise DataError(f"Column {name!r}: a role is text such as 'numeric' or 'excluded', not {value!r}.")
        text, texts = split_texts_suffix(value)  # "real+texts": numbers with texts beside them
        head, _, rest = text.partition(":")
        key = head.strip().lower()
        if texts and key not in ("numeric", "number", "real", "float", "integer", "int", *DATE_ROLE_WORDS):
            raise DataError(
                f"Column {name!r}: {TEXTS_SUFFIX!r} is for numbers and dates (real+texts, integer+texts, "
                "date:%Y-%m-%d+texts): texts beside them kept as values of their own."
            )
        if key in ("categorical", "category", "categories"):
            return cls(name, "categorical")
        if key in ("numeric", "number", "real", "float"):
            return cls(name, "numeric", integer=False, style=rest.strip(), texts=texts)
        if key in ("integer", "int"):
            return cls(name, "numeric", integer=True, style=rest.strip(), texts=texts)
        if key in DATE_ROLE_WORDS:
            fmt, gran = rest, None
            if rest and rest.rsplit(":", 1)[-1].strip() in ("year", "month", "day"):
                fmt, _, gran = rest.rpartition(":")
            return cls(name, "datetime", format=fmt.strip() or None, granularity=gran, texts=texts)
        if key in ("excluded", "exclude", "drop", "skip", "ignore"):
            return cls(name, "excluded", reason="excluded by the user")
        raise DataError(
            f"Column {name!r}: unknown role {value!r}; use categorical, numeric, integer, real, date or excluded."
        )


def confirmed(roles) -> dict[str, Role]:
    """Roles the user confirmed or edited (a list of :class:`Role` or a name -> choice mapping), as declared."""
    if isinstance(roles, dict):
        return {str(k): Role.parse(str(k), v) for k, v in roles.items()}
    return {r.name: Role.parse(r.name, r) for r in roles}


# ---------------------------------------------------------------------------- statistics
@dataclass
class ColumnStats:
    """The seven statistics of one column (exact, or noisy with ``sigma`` > 0) and the chosen date format."""

    name: str
    n: int
    present: float
    numeric: float
    non_integer: float
    date: float
    distinct: float
    mode: float
    long_text: float
    date_format: str | None = None
    sigma: float = 0.0
    #: Exact statistics only: the smallest count of a present value (None when unknown or noisy).  Never part of
    #: the noisy vector or of :meth:`to_dict`.
    rarest: int | None = None
    #: Exact statistics only: the number style most cells are written in (:func:`dpcore.domain.written_style`; ""
    #: when unknown).  Never part of the noisy vector or of :meth:`to_dict`.
    style: str = field(default="", init=False)

    def vector(self) -> np.ndarray:
        return np.array([getattr(self, s) for s in STATISTICS], dtype=np.int64)

    def to_dict(self) -> dict:
        d = {s: getattr(self, s) for s in STATISTICS}
        d.update(n=self.n, date_format=self.date_format, noise_sigma=self.sigma)
        return d


def _distinct_present(column: pd.Series, none_is_value: bool = False) -> tuple[pd.Index, np.ndarray]:
    """The distinct non-missing values of a column, as the schema tells values apart (their canonical text:
    text stripped, 1.0 = 1; a blank cell is missing), and their counts.  :data:`~dpcore.domain.NONE_TEXT` is a
    missing cell for the roles' counts (so a column of numbers with ``None`` cells is still one) and a value for a
    category set's (``none_is_value``)."""
    present = column[column.notna()]
    empty = ("",) if none_is_value else ("", NONE_TEXT)
    if pd.api.types.is_numeric_dtype(present) or pd.api.types.is_datetime64_any_dtype(present):
        codes, uniques = pd.factorize(present, sort=False)  # canonical text is injective on distinct values
    elif pd.api.types.infer_dtype(present, skipna=True) == "string":
        present = present.astype(str).str.strip()
        codes, uniques = pd.factorize(present[~present.isin(empty)], sort=False)
    else:  # mixed Python objects (Parquet): canonicalise the distinct values, then merge equal texts
        raw_codes, raw_uniques = pd.factorize(present, sort=False)
        texts = pd.Series([_canonical_text(u) for u in raw_uniques], dtype=object)
        text_codes, uniques = pd.factorize(texts, sort=False)
        codes = text_codes[raw_codes] if len(raw_codes) else raw_codes
        keep = ~np.isin(np.asarray(uniques, dtype=object), empty)
        remap = np.where(keep, np.cumsum(keep) - 1, -1)
        codes = remap[codes] if len(codes) else codes
        codes, uniques = codes[codes >= 0], uniques[keep]
    counts = np.bincount(codes, minlength=len(uniques)) if len(uniques) else np.zeros(0, np.int64)
    return uniques, counts


def column_counts(column: pd.Series, distinct=None, style: str = "") -> tuple[dict[str, int], dict[str, int]]:
    """Exact counts of one column: the statistics (with ``date`` = 0) and the parse count of every date format.

    Works on the column's distinct values weighted by their counts (``distinct``: :func:`_distinct_present` of the
    column, when the caller has it), so a long column with few values is cheap.  Numbers are read as ``style``
    (public: chosen before, :func:`private_roles`) writes them: with a decimal comma, "1,5" is 1.5 and "1.234" 1234.
    """
    uniques, counts = _distinct_present(column) if distinct is None else distinct
    stats = dict.fromkeys(STATISTICS, 0)
    stats["present"] = int(counts.sum())
    stats["distinct"] = len(uniques)
    stats["mode"] = int(counts.max()) if len(counts) else 0
    fmt_counts = dict.fromkeys(DATE_FORMATS, 0)
    if not len(uniques):
        return stats, fmt_counts
    if pd.api.types.is_bool_dtype(column):
        return stats, fmt_counts
    if pd.api.types.is_datetime64_any_dtype(column):
        ts = pd.Series(uniques)
        midnight = (ts.dt.normalize() == ts).to_numpy()
        fmt_counts["%Y-%m-%d"] = int(counts[midnight].sum())
        fmt_counts["%Y-%m-%d %H:%M:%S"] = int(counts[~midnight].sum())
        stats["date"] = stats["present"]
        return stats, fmt_counts
    years = year_header(str(column.name))
    if pd.api.types.is_numeric_dtype(column):
        vals = np.asarray(uniques, dtype=float)
        stats["numeric"] = stats["present"]
        stats["non_integer"] = int(counts[~whole(vals)].sum())
        if years:
            fmt_counts["%Y"] = _year_count(vals, counts)
        fmt_counts[COMPACT_DATE] = _compact_date_count(vals, counts)
        return stats, fmt_counts
    text = pd.Series(uniques, dtype=object).astype(str)
    nums = parse_numbers(text, style).to_numpy(dtype=float, copy=True)
    # Digits with a leading zero are codes (domain.LEADING_ZERO): counted as text, such a column stays categorical,
    # its labels as written.
    nums[text.str.match(LEADING_ZERO.pattern).to_numpy(dtype=bool)] = np.nan
    is_num = ~np.isnan(nums)
    stats["numeric"] = int(counts[is_num].sum())
    stats["non_integer"] = int(counts[is_num & ~whole(nums)].sum())
    stats["long_text"] = int(counts[text.str.len().to_numpy() > LONG_TEXT_CHARS].sum())
    if years:
        fmt_counts["%Y"] = _year_count(nums, counts)
    maybe = text.str.match(_DATE_LIKE.pattern).to_numpy(dtype=bool)
    if maybe.any():
        cand, cand_counts = text[maybe], counts[maybe]
        for fmt, rx in _FORMAT_RE.items():
            if fmt == "%Y":  # a year alone is a number unless the header names a year (above)
                continue
            fits = cand.str.match(rx.pattern).to_numpy(dtype=bool)
            if fits.any():
                parsed = to_datetimes(cand[fits], fmt).notna().to_numpy()
                fmt_counts[fmt] = int(cand_counts[fits][parsed].sum())
    return stats, fmt_counts


def exact_stats(df: pd.DataFrame, columns=None) -> list[ColumnStats]:
    """Exact statistics of each column (NOT private: for :func:`propose_roles` and the tests), with the rarest
    value's count."""
    out = []
    for name in list(df.columns) if columns is None else list(columns):
        found = _distinct_present(df[name])
        style = written_style(*found)
        stats, fmts = column_counts(df[name], found, style)
        best = max(DATE_FORMATS, key=lambda f: fmts[f])  # first format wins ties: ISO before day/month orders
        stats["date"] = fmts[best]
        counts = found[1]
        rarest = int(counts.min()) if len(counts) else None
        exact = ColumnStats(str(name), len(df), date_format=best if fmts[best] else None, rarest=rarest, **stats)
        exact.style = style
        out.append(exact)
    return out


# ---------------------------------------------------------------------------- the rule
def whole_numbers(st: ColumnStats) -> bool:
    """Whether a numeric column's numbers are whole: fewer than NON_INTEGER_RATE of them are fractions, and the
    fractions do not clearly (by FRACTION_Z·σ, and at least σ or one) make up that share of the numbers other than the
    most frequent value -- a column that is mostly exact zeros with decimals otherwise (discounts, rain in mm, a
    cost) is real.  Under either rule the fractions must also reach (FRACTION_Z + 1)·σ: with σ above ~9% of the rows
    (1,000 rows of 14 columns at ε = 1: σ ≈ 106) noise alone passed the first rule's quarter of the numbers in about 1%
    of draws, and a 0-2 slope column came back as draws such as 1.256.  Reads the column's statistics (exact or
    noisy) only."""
    if st.non_integer >= max(NON_INTEGER_RATE * max(st.numeric, 1.0), (FRACTION_Z + 1.0) * st.sigma):
        return False
    rest = max(st.numeric - st.mode, 0.0)
    return st.non_integer - FRACTION_Z * st.sigma < max(NON_INTEGER_RATE * rest, st.sigma, 1.0)


def _written_date(name: str, st: ColumnStats) -> bool:
    """Whether whole numbers are written dates by their chosen format: years under a header that names a year
    (``%Y``), or eight digits year first (``%Y%m%d``).  Public: the header and the released format."""
    return (st.date_format == "%Y" and year_header(name)) or st.date_format == COMPACT_DATE


def mixed_dates(st: ColumnStats, clearly) -> bool:
    """Whether a column is dates with texts beside them (:data:`MIXED_DATES_REASON`): clearly at least MIXED_RATE
    of its cells dates in its chosen format, and its noisy distinct count over MIXED_NUMBER_VALUES by
    MIXED_NUMBERS_Z·σ.  Years and eight-digit dates, which are whole numbers too, only where they are written
    dates (:func:`_written_date`).  ``clearly``: the rule's confidence test of a count against a rate."""
    if not st.date_format or not clearly(st.date, MIXED_RATE):
        return False
    if st.date_format in ("%Y", COMPACT_DATE) and not _written_date(st.name, st):
        return False
    return st.distinct - MIXED_NUMBERS_Z * st.sigma > MIXED_NUMBER_VALUES


def decide_role(st: ColumnStats) -> Role:
    """The role of one column from its statistics (exact or noisy).

    With noise (``sigma`` > 0) every rate is read through a confidence margin of CONFIDENCE_SIGMAS·σ cells, in
    the direction that keeps the column as it looks: a column keeps its type (numeric, date) unless clearly not
    of it, and is excluded (constant, identifier, free text) only when clearly so; it counts as empty unless
    clearly present.  With exact counts the margin is 0.  The decisions are reliable when σ is a few percent of
    n; :func:`dpcore.tabular.prepare_table` warns when it is not."""
    name, n = st.name, max(1, st.n)
    named = identifier_header(name) or contact_header(name)
    if st.sigma > UNDECIDABLE_NOISE * n:
        present = max(st.present, 1.0)
        if named and st.distinct >= IDENTIFIER_HEADER_RATE * present:
            # The header names an identifier and the noisy distinct count says its values rarely repeat: too
            # noisy to be sure, but a number or category read from an identifier is noise either way.
            return Role(name, "excluded", reason=IDENTIFIER_HEADER_REASON)
        if st.sigma > TYPED_NOISE_LIMIT * n:
            return Role(name, "categorical", reason=UNDECIDABLE_REASON.format(sigma=st.sigma))
        if st.numeric >= MIXED_RATE * present:
            integer = whole_numbers(st)
            # Years under a header that names one, and eight-digit dates, read as dates as below: as numbers they
            # were binned over [1024, 2047] and came back as years like 1127 (1,000 rows, six columns, ε = 1).
            if integer and _written_date(name, st) and st.date >= MIXED_RATE * present:
                return Role(name, "datetime", format=st.date_format,
                            reason=UNDECIDABLE_TYPED_REASON.format(sigma=st.sigma, what="dates"))  # fmt: skip
            return Role(name, "numeric", integer=integer,
                        reason=UNDECIDABLE_TYPED_REASON.format(sigma=st.sigma, what="numbers"))  # fmt: skip
        if st.date_format and st.date >= MIXED_RATE * present:
            return Role(name, "datetime", format=st.date_format,
                        reason=UNDECIDABLE_TYPED_REASON.format(sigma=st.sigma, what="dates"))  # fmt: skip
        return Role(name, "categorical", reason=UNDECIDABLE_REASON.format(sigma=st.sigma))
    margin = CONFIDENCE_SIGMAS * st.sigma
    there = PRESENT_Z * st.sigma  # a count that says its cells are there at all
    present = st.present
    if present < max(EMPTY_RATE * n, there) or present <= 0:
        if st.sigma == 0 and present == 0:
            reason = "empty: no values"
        elif present < EMPTY_RATE * n:
            reason = "empty: nearly every cell is missing"
        else:
            reason = (f"empty or nearly: too few cells present to tell from none at this noise (σ ≈ {st.sigma:,.0f} "
                      "rows); confirm its role to keep it")  # fmt: skip
        return Role(name, "excluded", reason=reason)

    def clearly(count: float, rate: float) -> bool:  # the rate's lower confidence bound reaches ``rate``
        return count - margin >= rate * (present + margin)

    def possibly(count: float, rate: float) -> bool:  # the rate's upper confidence bound reaches ``rate``
        return count + margin >= rate * max(present - margin, 0.0)

    # One value: the distinct count clearly under 1.5 -- and the mode's count possibly filling the cells, so that a
    # 3-value column whose noisy distinct count fell 3σ short (0.13% a column) is not dropped as constant -- or
    # the mode clearly filling them.
    constant = (st.distinct + margin < 1.5 and possibly(st.mode, CONSTANT_RATE)) or clearly(st.mode, CONSTANT_RATE)
    identifier = named and clearly(st.distinct, IDENTIFIER_HEADER_RATE)
    # A type needs its cells clearly present too: on a sparse column (a "yes"-or-blank checkbox on 30% of 2,000
    # rows at σ ≈ 5% of them) the margin alone made a noisy count of 0 numbers "possibly" 95% of the few present
    # cells, and the column was typed a number and left out when no range of numbers stood out.
    if possibly(st.numeric, TYPE_RATE) and st.numeric >= there:
        if constant:
            return Role(name, "excluded", reason=CONSTANT_REASON)
        if identifier:
            return Role(name, "excluded", reason=IDENTIFIER_HEADER_REASON)
        integer = whole_numbers(st)
        if integer and st.distinct + margin <= SMALL_INTEGER_CATEGORIES:
            return Role(name, "categorical", reason="whole numbers with few distinct values")
        if integer and _written_date(name, st) and possibly(st.date, TYPE_RATE):
            reason = YEAR_REASON if st.date_format == "%Y" else COMPACT_DATE_REASON
            return Role(name, "datetime", format=st.date_format, reason=reason)
        note = "" if st.numeric >= present else TEXT_CELLS_NOTE
        return Role(name, "numeric", integer=integer, reason=note)
    if st.date_format and possibly(st.date, TYPE_RATE) and st.date >= there:
        if constant:
            return Role(name, "excluded", reason=CONSTANT_REASON)
        note = "" if st.date >= present else DATE_TEXT_NOTE
        return Role(name, "datetime", format=st.date_format, reason=note)
    if constant:
        return Role(name, "excluded", reason=CONSTANT_REASON)
    if identifier:
        return Role(name, "excluded", reason=IDENTIFIER_HEADER_REASON)
    if clearly(st.long_text, LONG_TEXT_RATE):
        return Role(name, "excluded", reason="free text: long strings")
    if mixed_dates(st, clearly):  # before the identifier-like rule: timestamps rarely repeat, as a pure column's
        return Role(name, "datetime", format=st.date_format, reason=MIXED_DATES_REASON)
    if clearly(st.distinct, IDENTIFIER_RATE):
        return Role(name, "excluded", reason="identifier-like: nearly one distinct value per row")
    if clearly(st.numeric, MIXED_RATE):
        integer = whole_numbers(st)  # numbers with decimals are measurements, never a scale's answers
        if not integer or st.distinct - MIXED_NUMBERS_Z * st.sigma > MIXED_NUMBER_VALUES:
            return Role(name, "numeric", integer=integer, reason=MIXED_NUMBERS_REASON)
    if clearly(st.distinct, HIGH_CARDINALITY_RATE):
        return Role(name, "excluded", reason="free text: too many distinct values to be categories")
    if st.numeric >= MIXED_RATE * present or (st.date_format and st.date >= MIXED_RATE * present):
        return Role(name, "categorical", reason="mixed numbers (or dates) and text: kept as categories")
    if named:
        return Role(name, "categorical", reason=CONTACT_FLAG_REASON)
    return Role(name, "categorical")


#: Noted on a proposed role that one changed row could flip (issue 24, finding 3).
FRAGILE_NOTE = "⚠ one changed row could change this proposal: confirm it only if you know it to be true"


def _decision(role: Role) -> tuple:
    return (role.role, role.integer, role.format)


def one_row_could_flip(st: ColumnStats, rarest: int | None = None) -> bool:
    """Whether a single changed row could change the role :func:`decide_role` gives these exact statistics.

    One row moves each statistic by at most 1 (the module docstring), all at once; the rule is re-run on every
    move of one statistic by ±1 and on every joint move of all seven by ±1 (142 neighbours of the statistics) --
    enough to catch a decision sitting on one of the rule's cuts (constant, few values, identifier, integer, type
    rates).  The date format is decided from the same counts, so it is covered by the ``date`` moves.  Moves one
    row cannot make are skipped: ``distinct`` falls only when some value is held once (``rarest``, the smallest
    value count, when known), ``present`` rises only when some cell is missing."""
    base = _decision(decide_role(st))
    moves: list[dict[str, int]] = []
    for name in STATISTICS:
        moves += [{name: +1}, {name: -1}]
    for signs in itertools.product((-1, 1), repeat=len(STATISTICS)):
        moves.append(dict(zip(STATISTICS, signs)))
    for move in moves:
        if move.get("distinct", 0) < 0 and rarest is not None and rarest > 1:
            move = {**move, "distinct": 0}
        if move.get("present", 0) > 0 and st.present >= st.n:
            move = {**move, "present": 0}
        shifted = {k: max(0, getattr(st, k) + d) for k, d in move.items()}
        if _decision(decide_role(replace(st, **shifted))) != base:
            return True
    return False


# ---------------------------------------------------------------------------- the two ways
def propose_roles(df: pd.DataFrame, columns=None) -> list[Role]:
    """Roles read off the data with exact counts: **NOT private** -- for the data owner's eyes only (the app's roles
    table).  Each role carries its exact ``stats`` and ``source="inferred"``; what the user confirms becomes
    declared (:func:`confirmed`), i.e. the user states it is a public fact.  A proposal one changed row could flip
    says so in its reason (:data:`FRAGILE_NOTE`), so it is never confirmed unmarked."""
    out = []
    for st in exact_stats(df, columns):
        role = decide_role(st)
        if one_row_could_flip(st, st.rarest):
            role = replace(role, reason=f"{FRAGILE_NOTE}" + (f"; {role.reason}" if role.reason else ""))
        style = st.style if role.role == "numeric" else ""  # how its numbers are written, confirmed with the role
        # texts beside its numbers (dates), confirmed with the role likewise; a column of numbers (dates) only --
        # its exact counts say so -- is not read again
        typed = {"numeric": st.numeric, "datetime": st.date}.get(role.role, st.present)
        date_format = role.format if role.role == "datetime" else None
        beside = typed < st.present and exact_texts(df[st.name], style, len(df), date_format)
        out.append(replace(role, source="inferred", stats=st.to_dict(), style=style, texts=beside))
    texts = exact_missing_text(df, out)  # how the file writes a missing cell, confirmed with the role likewise
    return [replace(r, missing_text=texts.get(r.name, "")) for r in out]


def exact_texts(column: pd.Series, style: str, n: int, date_format: str | None = None) -> bool:
    """Whether a column of numbers (of dates in ``date_format``) holds texts beside them (:func:`text_cells`), one
    of them on at least EXACT_TEXT_SHARE of the rows and EXACT_TEXT_MIN_ROWS (exact: the proposal, for the owner's
    eyes, as for :func:`exact_missing_text`; a few rows' typo is not proposed)."""
    cells = text_cells(column, style, date_format)
    if cells.empty:
        return False
    top = int(cells.astype(str).str.strip().value_counts().iloc[0])
    return top >= max(EXACT_TEXT_MIN_ROWS, EXACT_TEXT_SHARE * n)


def text_cells(column: pd.Series, style: str = "", date_format: str | None = None) -> pd.Series:
    """A numeric column's present cells that are not numbers (read as ``style`` writes them), or with
    ``date_format`` a date column's that are not dates in it, and not "None" (a missing cell in numbers and dates):
    the candidates for its texts.  Each cell on its own, so one changed row changes at most one of them."""
    present = column[column.notna().to_numpy() & ~none_cells(column)]
    if pd.api.types.is_numeric_dtype(present) or pd.api.types.is_datetime64_any_dtype(present):
        return present.iloc[:0]
    if date_format is not None:
        words = present[np.isnan(parse_dates(present, date_format))]
    else:
        words = present[parse_numbers(present, style).isna().to_numpy()]
    # blanks, missing-cell texts and the schema's own labels cannot be texts of a column (Attribute refuses them):
    # such cells stay missing
    reserved = (*MISSING_TOKENS, NONE_TEXT, MISSING_LABEL, OTHER_LABEL)
    return words[~words.astype(str).str.strip().isin(reserved).to_numpy()]


@dataclass
class PrivateRoles:
    """What :func:`private_roles` released: the roles, the noisy statistics and the privacy it cost."""

    roles: list[Role]
    stats: list[ColumnStats]
    rho: float
    sigma: float
    epsilon_format: float


def role_noise(rho: float, n_columns: int, format_share: float = DATE_FORMAT_SHARE) -> tuple[float, float]:
    """(σ of the discrete Gaussian on the counts, ε of each column's date-format choice, of its number-style choice
    and of the table's two missing-value text choices) for ``n_columns`` columns at ρ-zCDP: ρ·(1 - share) = 7p/(2σ²)
    and ρ·share = (2p + 2)·ε_f²/8 (two choices a column, and the missing-value text of the table's numbers and of
    its words: :func:`missing_text_choice`)."""
    if rho <= 0 or n_columns < 1:
        raise BudgetError("Deciding roles privately needs ρ > 0 and at least one column.")
    l2_squared = sum(SENSITIVITY[s] ** 2 for s in STATISTICS) * n_columns
    sigma = math.sqrt(l2_squared / (2.0 * rho * (1.0 - format_share)))
    eps_format = math.sqrt(8.0 * rho * format_share / (2 * n_columns + 2))
    return sigma, eps_format


#: How unlikely a missing-value text other than the empty cell may be chosen for columns that write none (each of
#: the others at most this / their number).
MISSING_TEXT_FALSE_RATE = 0.01


def missing_text_head_start(epsilon: float) -> float:
    """Rows' worth of head start for the empty cell in the choice of a group's missing-value text at ε (public):
    with no row holding another text, each of the K - 1 others wins with probability at most exp(-ε·h/2) ≤
    MISSING_TEXT_FALSE_RATE / (K - 1) (K = 19: ~1,300 rows at ε = 0.012, ~500 at ε = 0.03)."""
    return 2.0 * math.log((len(MISSING_TOKENS) - 1) / MISSING_TEXT_FALSE_RATE) / epsilon


#: The groups of columns that share one missing-value text: numbers and dates ("NA" in R's files), and words (R
#: writes an empty string as ""; UCI's Adult marks its words "?").
TEXT_GROUPS = {"numeric": "numbers", "datetime": "numbers", "categorical": "words"}


def _group_scores(marks: dict[str, dict[str, np.ndarray]], columns: list[str]) -> np.ndarray:
    """For each of :data:`~dpcore.domain.MISSING_TOKENS`, how many rows hold it in one of ``columns`` at least (their
    packed row sets or-ed: :func:`dpcore.data.missing_marks`): one changed row moves each count by at most 1
    (sensitivity 1), whatever it holds in how many cells."""
    scores = np.zeros(len(MISSING_TOKENS))
    for i, t in enumerate(MISSING_TOKENS):
        rows = [marks[c][t] for c in columns if t in marks.get(c, {})]
        scores[i] = np.bitwise_count(np.bitwise_or.reduce(rows)).sum() if rows else 0  # rows, still packed
    return scores


def _groups(roles) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in roles:
        if r.role in TEXT_GROUPS:
            out.setdefault(TEXT_GROUPS[r.role], []).append(r.name)
    return out


#: A proposal names a missing-value text only where at least this share of the rows (and EXACT_TEXT_MIN_ROWS) hold it:
#: a few rows' "NULL" is not the file's way of writing a missing cell, and confirming it would publish them.
EXACT_TEXT_SHARE = 0.01
EXACT_TEXT_MIN_ROWS = 10


def exact_missing_text(df: pd.DataFrame, roles) -> dict[str, str]:
    """Column -> the missing-value text the most rows hold in its group's columns (:data:`TEXT_GROUPS`), the empty
    cell winning ties, and only where at least EXACT_TEXT_SHARE of the rows (and EXACT_TEXT_MIN_ROWS) hold it: exact,
    **NOT private** (for the data owner's eyes and ``schema_from_data``)."""
    from .data import missing_marks

    marks = missing_marks(df)
    if marks is None:
        return {}
    least = max(EXACT_TEXT_MIN_ROWS, EXACT_TEXT_SHARE * len(df))
    out: dict[str, str] = {}
    for columns in _groups(roles).values():
        scores = _group_scores(marks, columns)
        best = int(scores.argmax())  # the first of equals: "" leads the list
        out.update(dict.fromkeys(columns, MISSING_TOKENS[best] if scores[best] >= least else ""))
    return out


def missing_text_choice(df: pd.DataFrame, roles, epsilon: float, noise) -> dict[str, str]:
    """Column -> how the release writes its missing cells, chosen once for each group of the released ``roles``
    (:data:`TEXT_GROUPS`: numbers and dates, words) by the exponential mechanism at ``epsilon`` among
    :data:`~dpcore.domain.MISSING_TOKENS`: each text's score is the number of rows holding it in one of the group's
    columns at least (:func:`dpcore.data.missing_marks`; sensitivity 1), the empty cell given
    :func:`missing_text_head_start`.  The groups are read off roles already released, so choosing them is
    post-processing.  Nothing is drawn for a table not read from CSV (built in memory, Parquet: its missing cells
    carry no text) -- a public fact about how the table came, not about its rows."""
    from .data import missing_marks

    marks = missing_marks(df)
    if marks is None:
        return {}
    out: dict[str, str] = {}
    stream = noise.derived(MISSING_TEXT_STREAM)
    for _, columns in sorted(_groups(roles).items()):
        scores = _group_scores(marks, columns)
        scores[0] += missing_text_head_start(epsilon)  # MISSING_TOKENS[0] is the empty cell
        out.update(dict.fromkeys(columns, MISSING_TOKENS[stream.exponential_mechanism(scores, epsilon, 1.0)]))
    return out


#: How unlikely a style other than plain may be chosen for a column with no styled cell at all (each of the others
#: at most this / their number).
STYLE_FALSE_RATE = 0.01


def style_head_start(epsilon: float) -> float:
    """Cells' worth of head start for plain in the style choice at ε (public): with no cell written in another
    style, each of the other K - 1 styles of the list wins with probability at most exp(-ε·h/2) ≤ STYLE_FALSE_RATE /
    (K - 1).  A column's cells must outnumber it in one style for that style to be likely (K = 81 at ε = 0.03: ~600
    cells)."""
    return 2.0 * math.log((len(NUMBER_STYLES) - 1) / STYLE_FALSE_RATE) / epsilon


def private_roles(df: pd.DataFrame, rho: float, noise, columns=None) -> PrivateRoles:
    """Roles decided from noisy counts: ρ-zCDP over all the columns together (see the module docstring).

    ``noise`` is the run's :class:`~dpcore.privacy.samplers.Randomness`; every draw goes through it.  Roles have
    ``source="dp"`` and carry their noisy statistics (public: released under DP)."""
    names = list(df.columns) if columns is None else list(columns)
    if not names:
        return PrivateRoles([], [], 0.0, 0.0, 0.0)
    sigma, eps_format = role_noise(rho, len(names))
    n = len(df)
    stats, styles = [], []
    style_noise = noise.derived(STYLE_STREAM)  # its own stream: the other draws are a run's without styles
    added_formats = (FORMATS_BEFORE_TWO_DIGIT_YEARS, noise.derived(ADDED_FORMATS_STREAM))
    head = np.zeros(len(NUMBER_STYLES))
    head[0] = style_head_start(eps_format)
    for name in names:
        found = _distinct_present(df[name])
        votes = style_votes(found[0], found[1]) + head
        style = NUMBER_STYLES[style_noise.exponential_mechanism(votes, eps_format, 1.0)]
        styles.append(style)
        counts, fmts = column_counts(df[name], found, style)  # read as the released style writes (a decimal comma)
        scores = np.array([fmts[f] for f in DATE_FORMATS], dtype=float)
        fmt = DATE_FORMATS[noise.exponential_mechanism(scores, eps_format, 1.0, added=added_formats)]
        counts["date"] = fmts[fmt]
        stats.append(ColumnStats(str(name), n, date_format=fmt, **counts))
    true = np.concatenate([s.vector() for s in stats])
    noisy = true + noise.discrete_gaussian(sigma, true.size)
    k = len(STATISTICS)
    released = []
    for i, st in enumerate(stats):
        vals = noisy[i * k : (i + 1) * k]
        present, numeric, non_integer, date, distinct, mode, long_text = (int(v) for v in vals)  # STATISTICS' order
        released.append(
            ColumnStats(
                st.name, n, present, numeric, non_integer, date, distinct, mode, long_text, st.date_format, sigma
            )
        )
    roles = [
        replace(decide_role(st), source="dp", stats=st.to_dict(), style=style) for st, style in zip(released, styles)
    ]
    texts = missing_text_choice(df, roles, eps_format, noise)  # two choices more at the columns' ε (role_noise)
    roles = [replace(r, missing_text=texts.get(r.name, "")) for r in roles]
    return PrivateRoles(roles, released, float(rho), sigma, eps_format)
