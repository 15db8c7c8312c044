"""Public vocabularies: closed value sets the code knows (yes/no, true/false, a five-point agreement scale, the days
of the week, ...), used to complete a discovered category set.

Partition selection releases a value only when its noisy count clears a threshold that grows with the noise, so
on a small table the rare value of a flag (the 8% of orders ``returned = TRUE``, the 9% of patients
``diabetic = Y``) or the thin end of an answer scale (``Strongly disagree``) is not released, and its rows come
back as ``'(other)'`` -- a column of ``FALSE`` and ``'(other)'``.  When the released values of a column are all
words of one vocabulary and cover at least half of it -- alone, or with the other columns whose released values
are all its words (a battery of questions on one scale) -- the vocabulary's other words are added to the category set:
they are part of the code, not read from the data, and which words are added is a function of the released values
alone (post-processing: no privacy cost).  Their counts are then measured like every value's; an added word
measured under 1σ is fitted as empty (:data:`dpcore.mechanisms.decouple.WORD_Z`), so a four-point scale given a
``Neutral`` it never had gets few rows there (about 0.24σ on average).  A column whose released roles say most of
its cells are missing is not completed (:func:`dpcore.tabular._mostly_present`: a "yes"-or-blank checkbox's other
value is the blank, not "no").

Words are matched without regard to case or surrounding spaces, and added in the case the released values are
written in (``Yes`` -> ``No``, ``TRUE`` -> ``FALSE``).

Range labels that partition whole numbers (age groups, income brackets) are completed the same way, from the
labels themselves rather than a list: the gaps between released ranges (:func:`range_gaps`)."""

from __future__ import annotations

import math
import re

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip

#: The closed value sets, each a tuple of lower-case words.  Pairs whose letters stand for other things in real
#: tables (``F``/``M`` for sex, read as ``T``/``F``) are not listed.
VOCABULARIES: tuple[tuple[str, ...], ...] = (
    ("true", "false"),
    ("yes", "no"),
    ("y", "n"),
    ("positive", "negative"),
    ("pass", "fail"),
    ("present", "absent"),
    ("active", "inactive"),
    ("enabled", "disabled"),
    ("on", "off"),
    ("strongly disagree", "disagree", "neutral", "agree", "strongly agree"),
    ("strongly disagree", "disagree", "neither agree nor disagree", "agree", "strongly agree"),
    ("strongly disagree", "somewhat disagree", "neither agree nor disagree", "somewhat agree", "strongly agree"),
    ("very dissatisfied", "dissatisfied", "neutral", "satisfied", "very satisfied"),
    ("very unlikely", "unlikely", "neutral", "likely", "very likely"),
    ("never", "rarely", "sometimes", "often", "always"),
    ("very poor", "poor", "fair", "good", "excellent"),
    ("poor", "fair", "good", "very good", "excellent"),
    ("low", "medium", "high"),
    _WEEKDAYS,
    tuple(d[:3] for d in _WEEKDAYS),
    _MONTHS,
    tuple(m[:3] for m in _MONTHS),
    ("q1", "q2", "q3", "q4"),
)


def _key(value: str) -> str:
    return " ".join(str(value).split()).lower()


def _styled(word: str, like: list[str]) -> str:
    """``word`` written in the case of the released values ``like``: all upper, all lower, or capitalised -- every
    word (``Strongly Agree``) or the first only (``Strongly agree``), as the released values of several words show;
    one capitalised word (``Agree``) shows neither, and the first only is the default."""
    counts = {"upper": 0, "lower": 0, "title": 0, "first": 0, "capital": 0}
    for v in like:
        v = " ".join(v.split())
        if not any(c.isalpha() for c in v):
            continue
        if v.isupper() and len(v) > 1:
            counts["upper"] += 1
        elif v.islower():
            counts["lower"] += 1
        elif " " in v and v == v.title():
            counts["title"] += 1
        elif v == v[:1].upper() + v[1:].lower():
            counts["first" if " " in v else "capital"] += 1
    capital = counts["title"] + counts["first"] + counts["capital"]
    if counts["upper"] > max(counts["lower"], capital):
        return word.upper()
    if capital > counts["lower"]:
        return word.title() if counts["title"] > counts["first"] else word[:1].upper() + word[1:]
    return word


def completion(values) -> tuple[str, ...]:
    """The words to add to one released category set ``values`` on its own (:func:`completions` of it alone)."""
    return completions([values])[0]


def completions(value_lists) -> list[tuple[str, ...]]:
    """The words to add to each released category set of a table's columns (``value_lists``, one per column).

    A vocabulary completes a column whose released values are all its words when they cover at least half of it --
    or when the columns whose released values are all its words (a battery of questions on one answer scale) cover
    at least half of it together: of 45 five-point items on 3,000 rows, where only values held by 19% of the rows
    could be released, most came back as ``Agree``, ``Neutral`` and ``(other)``, some as ``Agree`` alone.  Where
    several vocabularies qualify for a column (``Agree``, ``Disagree`` and ``Strongly agree`` belong to two
    agreement scales), only the words every one of them adds.  A function of the released values alone."""
    keyed = [{_key(v) for v in values} for values in value_lists]
    qualifies: list[list[tuple[set[str], set[str]]]] = [[] for _ in keyed]  # (its words, the words seen of it)
    for vocabulary in VOCABULARIES:
        words = set(vocabulary)
        half = math.ceil(len(words) / 2)
        battery = [i for i, keys in enumerate(keyed) if keys and keys <= words]
        together = set().union(*(keyed[i] for i in battery)) if battery else set()
        for i in battery:
            if len(keyed[i]) >= half or (len(battery) >= 2 and len(together) >= half):
                qualifies[i].append((words, together if len(battery) >= 2 else keyed[i]))
    out: list[tuple[str, ...]] = []
    for values, keys, candidates in zip(value_lists, keyed, qualifies):
        gaps = range_gaps(values)
        if gaps:  # range labels are no vocabulary's words
            out.append(gaps)
            continue
        # a vocabulary whose words seen in the table are fewer than another's, all of them among that other's,
        # yields to it: a battery that released Neutral is on the Neutral scale, not on "Neither agree nor disagree"
        vocabularies = [w for w, seen in candidates if not any(seen < other for _, other in candidates)]
        missing: set[str] | None = None
        for words in vocabularies:
            rest = words - keys
            missing = rest if missing is None else missing & rest
        like = [str(v) for v in values]
        out.append(tuple(_styled(w, like) for w in sorted(missing)) if missing else ())
    return out


#: A range label: text, a whole number, a separator ("-", "–", "to", with text such as "$"), a whole number, text
#: ("18-24", "25 to 34 years", "$25,000-$49,999").
_NUMBER = r"\d{1,3}(?:,\d{3})+|\d+"
_RANGE = re.compile(rf"^(?P<pre>\D*?)(?P<lo>{_NUMBER})(?P<mid>\s*(?:-|–|to)\s*\D*?)(?P<hi>{_NUMBER})(?P<post>\D*)$")
#: An open top ("65+", "65 or over", "$150,000 or more") and an open bottom ("Under 18", "Less than $25,000").
_TOP = re.compile(rf"^\D*?(?P<lo>{_NUMBER})\s*(?:\+|(?:or more|or over|and over|or older|and older|plus)\b).*$", re.I)
_BOTTOM = re.compile(rf"^(?:under|less than|below|<)\s*\D*?(?P<hi>{_NUMBER})\D*$", re.I)
#: At most this many labels are added to one column from the gaps between its ranges.
MAX_RANGE_GAPS = 12


def range_gaps(values) -> tuple[str, ...]:
    """Labels for the gaps between a column's released range labels, written as they are: ``35-44`` between
    ``25-34`` and ``45-54``; ``$50,000-$74,999`` and ``$75,000-$99,999`` between ``$25,000-$49,999`` and
    ``$100,000-$149,999`` -- a gap a whole number of a neighbour's widths is cut into pieces of that width; an open
    top or bottom (``65+``, ``Under $25,000``) bounds a gap too (``55-64`` between ``45-54`` and ``65+``).  Only where
    at least two released labels parse as ranges in one style and none overlaps the next.  Where two of them meet
    end to start (``24`` then ``25``: the labels partition whole numbers) a gap no neighbour's width divides is one
    label; otherwise only gaps that divide are filled.  Partition selection releases a value only above a threshold
    (17% of a 1,200-row table's rows at ε = 1), so two or three of six age groups of ~17% came back as ``(other)``;
    their labels are now listed, measured like every value, and fitted as empty when measured under 1σ (a label the
    data never held).  Nothing is added past the outermost labels.  A function of the released values alone."""
    parsed, tops, bottoms = [], [], []
    for v in values:
        text = " ".join(str(v).split())
        m = _RANGE.match(text)
        if m:
            lo, hi = int(m["lo"].replace(",", "")), int(m["hi"].replace(",", ""))
            if lo <= hi:
                parsed.append((lo, hi, (m["pre"], m["mid"], m["post"], "," in m["lo"] + m["hi"])))
            continue
        top, bottom = _TOP.match(text), _BOTTOM.match(text)
        if top:
            tops.append(int(top["lo"].replace(",", "")))
        elif bottom:
            bottoms.append(int(bottom["hi"].replace(",", "")))
    styles = {p[2] for p in parsed}
    ends = len(parsed) + min(len(tops), 1) + min(len(bottoms), 1)  # ranges, and an open top and bottom
    if ends < 2 or len(styles) != 1 or len(tops) > 1 or len(bottoms) > 1:
        return ()
    (pre, mid, post, commas), finite = styles.pop(), sorted((lo, hi) for lo, hi, _ in parsed)
    ranges: list[tuple[int | None, int | None]] = [(None, b - 1) for b in bottoms]  # open ends: no width
    ranges += [(lo, hi) for lo, hi in finite] + [(t, None) for t in tops]
    gaps: list[tuple[int, int, list[int]]] = []  # (first, last, the widths of the ranges on either side)
    for (a_lo, a_hi), (b_lo, b_hi) in zip(ranges, ranges[1:]):
        if a_hi is None or b_lo is None or b_lo <= a_hi:  # an open end inside, or an overlap: not a partition
            return ()
        widths = [hi - lo + 1 for lo, hi in ((a_lo, a_hi), (b_lo, b_hi)) if lo is not None and hi is not None]
        gaps.append((a_hi + 1, b_lo - 1, widths))
    meets = any(first == last + 1 for first, last, _ in gaps)

    def label(lo: int, hi: int) -> str:
        return f"{pre}{lo:,}{mid}{hi:,}{post}" if commas else f"{pre}{lo}{mid}{hi}{post}"

    added: list[str] = []
    for start, stop, widths in gaps:
        if start > stop:
            continue
        gap = stop - start + 1
        piece = next((w for w in widths if w <= gap and gap % w == 0), None)
        if piece is None and not meets:
            continue
        piece = piece or gap
        added += [label(lo, lo + piece - 1) for lo in range(start, stop + 1, piece)]
    return tuple(added) if 0 < len(added) <= MAX_RANGE_GAPS else ()
