"""Widgets generated from a mechanism's declared parameter list (no per-mechanism code).

Each :class:`~dpcore.mechanisms.base.Param` becomes one widget whose label is the
parameter's name and whose tooltip is its help text; bounds become the widget's
bounds.  Values persist per mechanism under ``keep:param:<mechanism>:<name>``.
"""

from __future__ import annotations

import streamlit as st

from dpcore.mechanisms.base import Param

from . import state

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


def param_key(mechanism: str, p: Param, prefix: str = "") -> str:
    return f"{state.KEEP}param:{prefix}{mechanism}:{p.name}"


def _initial(p: Param, overrides: dict | None):
    value = (overrides or {}).get(p.name, p.default)
    if p.kind == "int" and value is not None:
        return int(value)
    if p.kind == "float" and value is not None:
        return float(value)
    return value


def param_widget(mechanism: str, p: Param, *, prefix: str = "", overrides: dict | None = None, disabled: bool = False):
    """Render one parameter's widget and return its value (None = automatic, for optional ones)."""
    key = param_key(mechanism, p, prefix)
    state.default(key, _initial(p, overrides))
    label = p.name
    help_text = p.help + ("" if not p.optional else " Leave empty for the automatic choice.")
    if p.kind == "bool":
        return st.checkbox(label, key=key, help=help_text, disabled=disabled)
    if p.kind == "choice":
        return st.selectbox(label, list(p.choices), key=key, help=help_text, disabled=disabled, format_func=str)
    if p.kind == "int":
        return st.number_input(
            label,
            key=key,
            help=help_text,
            step=1,
            disabled=disabled,
            min_value=None if p.low is None else int(p.low),
            max_value=None if p.high is None else int(p.high),
            placeholder="automatic" if p.optional else None,
        )
    # float
    return st.number_input(
        label,
        key=key,
        help=help_text,
        disabled=disabled,
        format="%g",
        step=_float_step(p),
        min_value=None if p.low is None else float(p.low),
        max_value=None if p.high is None else float(p.high),
        placeholder="automatic" if p.optional else None,
    )


def _float_step(p: Param) -> float:
    d = p.default if isinstance(p.default, (int, float)) and p.default else (p.high or 1.0)
    step = abs(float(d)) / 10.0
    if p.log:
        step = abs(float(d)) / 4.0
    return float(f"{step:.1g}") if step > 0 else 0.01


def parameter_form(mech_cls, *, prefix: str = "", overrides: dict | None = None, disabled: bool = False) -> dict:
    """Every parameter of a mechanism: basic ones first, advanced ones in an expander."""
    values = {}
    basic = [p for p in mech_cls.parameters if not p.advanced]
    advanced = [p for p in mech_cls.parameters if p.advanced]
    if not mech_cls.parameters:
        st.caption("This mechanism has no parameters besides ε and δ.")
    cols = st.columns(2) if len(basic) > 1 else [st.container()]
    for i, p in enumerate(basic):
        with cols[i % len(cols)]:
            values[p.name] = param_widget(mech_cls.name, p, prefix=prefix, overrides=overrides, disabled=disabled)
    if advanced:
        with st.expander(f"Advanced parameters of {mech_cls.title}"):
            for p in advanced:
                values[p.name] = param_widget(mech_cls.name, p, prefix=prefix, overrides=overrides, disabled=disabled)
    return values


def privacy_badge(mech_cls) -> None:
    text, color = PRIVACY_BADGE.get(mech_cls.privacy, (mech_cls.privacy, "gray"))
    st.badge(
        text, color=color, icon=":material/verified_user:" if mech_cls.privacy == "robust" else ":material/warning:"
    )


def mechanism_label(mech_cls) -> str:
    return f"{mech_cls.title} — {OUTPUT_TEXT.get(mech_cls.output, mech_cls.output)}"
