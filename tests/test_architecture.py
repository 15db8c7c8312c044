"""The house rules of the code's structure: the engine never imports the UI, and there are no import circles
(imports inside functions count too)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dpcore"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every module this file imports, at any depth of the file (absolute names)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            for alias in node.names:  # `from . import x` may import a submodule
                found.add(f"{target}.{alias.name}")
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        graph[name] = {m for m in _imports(path) if m in modules and m != name}
    return graph


def test_the_engine_never_imports_the_ui():
    for path in PACKAGE.rglob("*.py"):
        bad = {m for m in _imports(path) if m.split(".")[0] in ("streamlit", "ui", "pages")}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_no_import_circles():
    graph = _graph()
    # A package's __init__ is imported implicitly by its submodules; an edge from a package to its own
    # submodules (re-exports) is not a circle through other modules, so leave those edges out.
    for name in graph:
        graph[name] = {m for m in graph[name] if not m.startswith(name + ".")}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt]
                raise AssertionError("import circle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_papers_are_cited_by_key_never_by_seed_number():
    """The house cites papers as [GGHRW14], [VTBSW20], [NRW19], [HRS12], [NRVW20] (docs/references.md), never by
    the number of the file they were handed over in ("seed 004 §7")."""
    import re

    pattern = re.compile(r"\b[Ss]eeds? ?0\d\d\b")
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "ui").rglob("*.py"), *(ROOT / "pages").rglob("*.py"), ROOT / "app.py"]
    files += [ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")]
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in files for m in pattern.finditer(p.read_text())]
    assert not found, found
