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
written in (``Yes`` -> ``No``, ``TRUE`` -> ``FALSE``)."""

from __future__ import annotations

import math

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
