"""User strings inside Markdown: nothing in them becomes markup or a link (ui/text.py)."""

from __future__ import annotations

import re

import pytest

from ui.text import md_escape

#: GitHub's autolink literals, as the Markdown renderer of Streamlit (remark-gfm) finds them in a text node -- the
#: text after every backslash escape is undone (checked in Chromium: an escaped ``https\:\/\/x\.y`` is a link).
AUTOLINKS = (
    re.compile(r"(?i)https?://[\w-]"),
    re.compile(r"(?i)(?<![\w])www\.[\w-]"),
    re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
)


def text_node(markdown: str) -> str:
    """What CommonMark makes of an escaped string: every backslash before ASCII punctuation removed."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


@pytest.mark.parametrize(
    "name",
    [
        "https://evil.example/login",
        "see HTTP://Evil.Example now",
        "www.evil.example",
        "mail boss@evil.example",
        "[click](https://evil.example)",
    ],
)
def test_bare_addresses_in_a_user_string_do_not_become_links(name):
    shown = text_node(md_escape(name))
    assert not any(p.search(shown) for p in AUTOLINKS), shown
    # ... and the string reads the same: only invisible word joiners were added.
    assert shown.replace("\u2060", "") == name


def test_markup_characters_are_escaped():
    assert md_escape("**bold** :red[x] <b>") == r"\*\*bold\*\* \:red\[x\] \<b\>"
    assert md_escape("a\nb") == "a b"
    assert md_escape("x" * 300, limit=10) == "x" * 9 + "…"
