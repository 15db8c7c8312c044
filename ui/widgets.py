"""Widgets: mechanism parameters from their declared list, and number inputs that are checked, never clamped.

**Inputs validate.**  A browser-side ``min_value``/``max_value`` makes Streamlit quietly keep the previous value
when someone types one outside the range, so a run would go ahead with a number nobody sees.  The number inputs
here carry no browser-side bounds: the value typed is the value checked, on the server, and an invalid one shows
its message right under the control and is reported to the page (:class:`InputChecks`), which then runs nothing.

Use on any page::

    checks = widgets.InputChecks()
    eps = checks.number("Privacy loss ε", key=..., low=0, low_open=True, high=100, help=text.glossary("epsilon"))
    params = widgets.parameter_form(mech, checks=checks)
    if not checks.ok:
        st.button("Run", disabled=True); st.caption(checks.summary())

Mechanism parameters become one widget each, labelled in plain words (:func:`ui.text.label`) with the
parameter's help and the glossary in the tooltip; values persist per mechanism under
``keep:param:<mechanism>:<name>``.
"""

from __future__ import annotations

import math
from typing import Any

import streamlit as st

from dpcore.mechanisms.base import Param

from . import state
from .text import cite, fmt_number, help_for, label, md_escape

PRIVACY_BADGE = {
    "robust": ("privacy holds even if the solver fails", "green"),
    "oracle-dependent": ("privacy depends on exact solving", "orange"),
}
OUTPUT_TEXT = {
    "rows": "synthetic rows",
    "answers": "noisy answers (no rows)",
    "synopsis": "a synopsis",
    "model": "a model",
}


# ------------------------------------------------------------------ checked numbers
def check_number(
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    integer: bool = False,
    optional: bool = False,
) -> str | None:
    """Why ``value`` is not acceptable (a sentence for the user), or None when it is."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None if optional else "Enter a number."
    if isinstance(value, bool):
        return "Enter a number."
    try:
        num = float(value)
    except (TypeError, ValueError):
        return f"“{md_escape(value, 40)}” is not a number."
    if not math.isfinite(num):
        return "Enter a finite number."
    if integer and not num.is_integer():
        return f"Enter a whole number (not {fmt_number(num)})."
    lo_bad = low is not None and (num <= low if low_open else num < low)
    hi_bad = high is not None and (num >= high if high_open else num > high)
    if lo_bad or hi_bad:
        return f"{fmt_number(num)} is outside the allowed range: {range_text(low, high, low_open, high_open)}."
    return None


def range_text(low, high, low_open: bool = False, high_open: bool = False) -> str:
    if low is not None and high is not None:
        return f"{fmt_number(low)} {'<' if low_open else '≤'} value {'<' if high_open else '≤'} {fmt_number(high)}"
    if low is not None:
        return f"{'above' if low_open else 'at least'} {fmt_number(low)}"
    if high is not None:
        return f"{'below' if high_open else 'at most'} {fmt_number(high)}"
    return "any number"


class InputChecks:
    """The invalid inputs of one script run of a page: each shows its message under its control; the page asks
    :attr:`ok` before it lets anything run."""

    def __init__(self) -> None:
        self.errors: list[tuple[str, str]] = []

    @property
    def ok(self) -> bool:
        return not self.errors

    def add(self, what: str, message: str) -> None:
        self.errors.append((what, message))

    def summary(self) -> str:
        names = ", ".join(dict.fromkeys(md_escape(w, 60) for w, _ in self.errors))
        return f"Nothing runs until {'this input is' if len(self.errors) == 1 else 'these inputs are'} fixed: {names}."

    def number(
        self,
        label_text: str,
        *,
        key: str,
        low: float | None = None,
        high: float | None = None,
        low_open: bool = False,
        high_open: bool = False,
        integer: bool = False,
        optional: bool = False,
        help: str | None = None,
        disabled: bool = False,
        step: float | None = None,
        format: str | None = None,
        placeholder: str | None = None,
        container=None,
    ) -> float | int | None:
        """A number input checked on the server; returns its value, or None when it is invalid (or empty and
        optional).  Its initial value comes from ``st.session_state[key]`` (set it with ``state.default``)."""
        where = container if container is not None else st
        current = st.session_state.get(key)
        # an int input cannot hold a float nor a float input an int (choices restored from JSON): same number
        if integer and isinstance(current, float) and current.is_integer():
            st.session_state[key] = int(current)
        elif not integer and isinstance(current, int) and not isinstance(current, bool):
            st.session_state[key] = float(current)
        bounds = range_text(low, high, low_open, high_open)
        tip = (help + "\n\n" if help else "") + f"Allowed: {bounds}."
        value = where.number_input(
            label_text,
            key=key,
            help=tip,
            disabled=disabled,
            step=step if step is not None else (1 if integer else None),
            format=format if format is not None else (None if integer else "%g"),
            placeholder=placeholder,
        )
        error = (
            None
            if disabled
            else check_number(
                value, low=low, high=high, low_open=low_open, high_open=high_open, integer=integer, optional=optional
            )
        )
        if error is not None:
            where.error(error, icon=":material/error:")
            self.add(label_text, error)
            return None
        if value is None:
            return None
        return int(value) if integer else float(value)


class ParamValues(dict):
    """A mechanism's parameter values; :attr:`errors` lists the invalid ones (then nothing may run)."""

    errors: list[tuple[str, str]]


# ------------------------------------------------------------------ mechanism parameters
def param_key(mechanism: str, p: Param, prefix: str = "") -> str:
    return f"{state.KEEP}param:{prefix}{mechanism}:{p.name}"


def _initial(p: Param, overrides: dict | None):
    value = (overrides or {}).get(p.name, p.default)
    if p.kind == "int" and value is not None:
        return int(value)
    if p.kind == "float" and value is not None:
        return float(value)
    return value


def param_widget(
    mechanism: str,
    p: Param,
    *,
    prefix: str = "",
    overrides: dict | None = None,
    disabled: bool = False,
    checks: InputChecks | None = None,
):
    """Render one parameter's widget and return its value (None = automatic, for optional ones, or invalid:
    then ``checks`` holds the message)."""
    key = param_key(mechanism, p, prefix)
    state.default(key, _initial(p, overrides))
    text = label(p.name)
    help_text = help_for(p.name, p.help) + ("" if not p.optional else "\n\nLeave empty for the automatic choice.")
    if p.kind == "bool":
        return st.checkbox(text, key=key, help=help_text, disabled=disabled)
    if p.kind == "choice":
        if st.session_state.get(key) not in p.choices:
            st.session_state[key] = p.default
        return st.selectbox(text, list(p.choices), key=key, help=help_text, disabled=disabled, format_func=str)
    checks = checks if checks is not None else InputChecks()
    before = len(checks.errors)
    value = checks.number(
        text,
        key=key,
        low=p.low,
        high=p.high,
        integer=p.kind == "int",
        optional=p.optional,
        help=help_text,
        disabled=disabled,
        step=1 if p.kind == "int" else _float_step(p),
        placeholder="automatic" if p.optional else None,
    )
    if len(checks.errors) > before:
        # hand back what was typed (or "" for an empty box): validate_params refuses it, so even a page that
        # forgot to look at the errors cannot run with a default in its place
        raw = st.session_state.get(key)
        return "" if raw is None else raw
    return value


def _float_step(p: Param) -> float:
    d = p.default if isinstance(p.default, (int, float)) and p.default else (p.high or 1.0)
    step = abs(float(d)) / 10.0
    if p.log:
        step = abs(float(d)) / 4.0
    return float(f"{step:.1g}") if step > 0 else 0.01


def parameter_form(
    mech_cls,
    *,
    prefix: str = "",
    overrides: dict | None = None,
    disabled: bool = False,
    checks: InputChecks | None = None,
) -> ParamValues:
    """Every parameter of a mechanism: basic ones first, advanced ones in an expander.  Invalid values are
    listed in the result's ``errors`` (and in ``checks`` when given): do not run with them."""
    checks = checks if checks is not None else InputChecks()
    before = len(checks.errors)
    values = ParamValues()
    basic = [p for p in mech_cls.parameters if not p.advanced]
    advanced = [p for p in mech_cls.parameters if p.advanced]
    if not mech_cls.parameters:
        st.caption("This mechanism has no settings besides ε and δ.")
    cols = st.columns(2) if len(basic) > 1 else [st.container()]
    for i, p in enumerate(basic):
        with cols[i % len(cols)]:
            values[p.name] = param_widget(
                mech_cls.name, p, prefix=prefix, overrides=overrides, disabled=disabled, checks=checks
            )
    if advanced:
        with st.expander(f"Advanced settings of {mech_cls.title}"):
            for p in advanced:
                values[p.name] = param_widget(
                    mech_cls.name, p, prefix=prefix, overrides=overrides, disabled=disabled, checks=checks
                )
    values.errors = checks.errors[before:]
    return values


def privacy_badge(mech_cls) -> None:
    text, color = PRIVACY_BADGE.get(mech_cls.privacy, (mech_cls.privacy, "gray"))
    st.badge(
        text, color=color, icon=":material/verified_user:" if mech_cls.privacy == "robust" else ":material/warning:"
    )


def mechanism_label(mech_cls) -> str:
    return f"{mech_cls.title} — {OUTPUT_TEXT.get(mech_cls.output, mech_cls.output)}"


def source_line(mech_cls) -> str:
    """Where a mechanism comes from, by paper key ([GGHRW14] ...), never an internal file number."""
    return cite(getattr(mech_cls, "paper", "") or "")
