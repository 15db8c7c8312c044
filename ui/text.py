"""Rendering user strings safely.

Column names, values and file names come from the user's file.  Streamlit never
renders raw HTML unless asked to (we never ask), but Markdown would still turn
``[x](url)``, ``**``, ``:red[...]`` or ``<...>`` in a column name into formatting.
So user strings go into dataframes, ``st.text`` or ``st.code``, and where one must
appear inside Markdown it passes through :func:`md_escape` first.
"""

from __future__ import annotations

import re

# Every ASCII punctuation character may be backslash-escaped in CommonMark; escaping
# all of them (including ':' for Streamlit's :color[] / :emoji: directives and '$'
# for LaTeX) leaves nothing in a user string that Markdown would act on.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=&\"'/])")


def md_escape(s: object, limit: int = 200) -> str:
    """A user string made inert inside Markdown (and shortened to ``limit`` chars)."""
    text = str(s)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = text.replace("\n", " ").replace("\r", " ")
    return _MD_SPECIAL.sub(r"\\\1", text)


def fmt_eps(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:.4g}"


def fmt_delta(x: float | None) -> str:
    if x is None:
        return "—"
    if x == 0:
        return "0"
    return f"{x:.3g}"


def fmt_int(x: int) -> str:
    return f"{int(x):,}"


def fmt_big(x: int) -> str:
    """A possibly huge exact integer: in full up to 15 digits, else as 10^k."""
    x = int(x)
    if x < 10**15:
        return f"{x:,}"
    digits = len(str(x)) - 1
    return f"{x / 10**digits:.2f} × 10^{digits}"


def fmt_bytes(nbytes: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= size:
            return f"{nbytes / size:.1f} {unit}"
    return f"{int(nbytes)} B"


def show_error(message: object) -> None:
    """A typed error's message on the page (user strings in it made inert)."""
    import streamlit as st

    st.error(md_escape(message, limit=2000), icon=":material/error:")


def show_warning(message: object) -> None:
    import streamlit as st

    st.warning(md_escape(message, limit=2000), icon=":material/warning:")
