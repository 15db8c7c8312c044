"""``dpcore mechanisms``: the registered mechanisms and their parameters (``--markdown``: the reference section
of docs/mechanisms.md, generated from the registry so the guide never falls behind the code)."""

from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("mechanisms", help="list the registered mechanisms and their parameters")
    p.add_argument("--markdown", action="store_true", help="print the reference section of docs/mechanisms.md")


def run(args) -> int:
    from ..mechanisms import registry

    if getattr(args, "markdown", False):
        print(reference_markdown(), end="")
        return 0
    for m in registry.all_mechanisms():
        print(f"{m.name:<12} {m.title}  [{m.paper}; privacy {m.privacy}; output {m.output}]")
        for p in m.parameters:
            print(f"    --param {p.name}=<{p.kind}> default {p.default!r}: {p.help}")
    return 0


def reference_markdown() -> str:
    """Every mechanism's description, accounting and parameter table, from the registry."""
    from ..mechanisms import registry

    out = ["## Reference (generated from the registry: `dpcore mechanisms --markdown`)", ""]
    for m in registry.all_mechanisms():
        privacy = (
            "holds whatever the solver returns"
            if m.privacy == "robust"
            else "needs every solve to be certified optimal"
        )
        head = f"*Source:* {m.paper}. *Output:* {m.output}. *Privacy:* {privacy}."
        if m.recommended:
            head += f" *Recommended for {m.output}.*"
        out += [
            f"### `{m.name}` — {m.title}",
            "",
            head,
            "",
            m.summary,
            "",
            f"*Accounting:* {m.accounting}",
            "",
            "| parameter | default | range | what it does |",
            "|---|---|---|---|",
        ]
        for p in m.parameters:
            name = f"`{p.name}`" + (" (advanced)" if p.advanced else "")
            default = "auto" if p.default is None else _text(p.default)
            if p.kind == "choice":
                rng = ", ".join(str(c) for c in p.choices)
            elif p.kind == "bool":
                rng = "true, false"
            else:
                rng = f"{_text(p.low) if p.low is not None else '−∞'} – {_text(p.high) if p.high is not None else '∞'}"
            out.append(f"| {name} | {default} | {rng} | {p.help.replace('|', chr(92) + '|')} |")
        out.append("")
    return "\n".join(out)


def _text(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)
