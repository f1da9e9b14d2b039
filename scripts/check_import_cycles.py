"""Fail on import cycles between the modules of the `pictura` package.

Reads every `.py` file under `pictura/` with `ast` (nothing is imported) and builds two graphs
of edges `importer -> imported module`:

- **module-level**: imports that run when the module is imported (top level, and inside
  module-level `if`/`try`/`with` blocks and class bodies);
- **with deferred**: the same plus imports inside function bodies, which only hide a cycle
  until the function runs.

Imports under `if TYPE_CHECKING:` never run and are left out. `from a.b import c` is an edge to
`a.b.c` when that is a module of the package, else to `a.b`. Entering a subpackage from outside
it runs its `__init__` first, so an import of `pictura.modules.gae` from `pictura.eval` is also
an edge to `pictura.modules`; from inside `pictura.modules` it is not (that `__init__` is
already running). Each strongly connected component of either graph is a cycle; the script prints
its modules, the edges inside it and its elementary cycles (up to `--max-cycles` each).

A component listed in `KNOWN_CYCLES` (or one inside a listed component) is printed as known and
does not fail; any other fails with exit status 1. A listed entry that no longer matches any
component is printed as fixed, so it can be removed. Usage:

    python scripts/check_import_cycles.py            # from the repository root
    python scripts/check_import_cycles.py --strict   # known cycles fail too
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "pictura"

MODULE_LEVEL = "module-level"
WITH_DEFERRED = "with deferred"


@dataclass(frozen=True)
class KnownCycle:
    """A cycle present when this check was added, allowed until it is broken."""

    name: str
    graph: str  # MODULE_LEVEL or WITH_DEFERRED: the graph where the component shows
    modules: frozenset[str]


def _known(name: str, graph: str, *modules: str) -> KnownCycle:
    return KnownCycle(name, graph, frozenset(f"{PACKAGE}.{m}" for m in modules))


# Cycles that predate this check, allowed until they are broken (none is left).
KNOWN_CYCLES: tuple[KnownCycle, ...] = ()


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(
    node: ast.Import | ast.ImportFrom, importer: str, is_package: bool, modules: set[str]
) -> set[str]:
    """The package modules one import statement loads."""
    targets: set[str] = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.name
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                targets.add(name)
        return targets
    base = node.module or ""
    if node.level:
        anchor = importer.split(".")
        if not is_package:
            anchor = anchor[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        if submodule in modules:
            targets.add(submodule)
        elif base in modules:
            targets.add(base)
    return targets


def import_edges(
    path: Path, root: Path, modules: set[str], type_checking: bool = False
) -> tuple[set[str], set[str]]:
    """(module-level targets, function-level targets) of one file; with `type_checking`, imports
    under `if TYPE_CHECKING:` count as function-level."""
    importer = module_name(path, root)
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module_level: set[str] = set()
    deferred: set[str] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                if type_checking:
                    for guarded in child.body:
                        visit_statement(guarded, True)
                for other in child.orelse:
                    visit_statement(other, in_function)
                continue
            visit_statement(child, in_function)

    def visit_statement(child: ast.AST, in_function: bool) -> None:
        if isinstance(child, ast.Import | ast.ImportFrom):
            targets = _imported(child, importer, is_package, modules) - {importer}
            (deferred if in_function else module_level).update(targets)
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            visit(child, True)
        else:
            visit(child, in_function)

    visit(tree, False)
    return _with_packages(module_level, importer), _with_packages(deferred, importer) - module_level


def _with_packages(targets: set[str], importer: str) -> set[str]:
    """Targets plus the packages entered from outside on the way to them."""
    importer_packages = {importer.rsplit(".", i)[0] for i in range(importer.count(".") + 1)}
    entered = set(targets)
    for target in targets:
        parts = target.split(".")
        for depth in range(1, len(parts)):
            package = ".".join(parts[:depth])
            if package not in importer_packages:
                entered.add(package)
    return entered - {importer}


def build_graphs(
    package_dir: Path, type_checking: bool = False
) -> tuple[dict[str, set[str]], dict[str, set[str]], int, int]:
    files = sorted(package_dir.rglob("*.py"))
    root = package_dir.parent
    modules = {module_name(f, root) for f in files}
    module_graph: dict[str, set[str]] = {m: set() for m in modules}
    full_graph: dict[str, set[str]] = {m: set() for m in modules}
    n_module_level = n_deferred = 0
    for f in files:
        top, deferred = import_edges(f, root, modules, type_checking)
        name = module_name(f, root)
        module_graph[name] |= top
        full_graph[name] |= top | deferred
        n_module_level += len(top)
        n_deferred += len(deferred)
    return module_graph, full_graph, n_module_level, n_deferred


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return sorted(components)


def elementary_cycles(graph: dict[str, set[str]], component: list[str], limit: int) -> list[list[str]]:
    """Simple cycles inside one component, each starting at its smallest module."""
    members = set(component)
    cycles: list[list[str]] = []
    for start in component:
        # Cycles through `start` whose other modules all sort after it: each cycle once.
        path = [start]
        iters = [iter(sorted(t for t in graph[start] if t in members and t >= start))]
        while iters and len(cycles) < limit:
            advanced = False
            for child in iters[-1]:
                if child == start:
                    cycles.append(path + [start])
                    if len(cycles) >= limit:
                        break
                elif child not in path:
                    path.append(child)
                    iters.append(iter(sorted(t for t in graph[child] if t in members and t >= start)))
                    advanced = True
                    break
            if not advanced:
                iters.pop()
                path.pop()
    return cycles


def _short(module: str) -> str:
    return module.removeprefix(f"{PACKAGE}.")


def report(
    graph_name: str, graph: dict[str, set[str]], max_cycles: int, strict: bool
) -> tuple[int, set[KnownCycle]]:
    """Print the components of one graph; return (how many fail, the known entries matched)."""
    failures = 0
    matched: set[KnownCycle] = set()
    for component in strongly_connected(graph):
        known = next((k for k in KNOWN_CYCLES if k.graph == graph_name and set(component) <= k.modules), None)
        if known is not None:
            matched.add(known)
        status = "NEW CYCLE" if known is None else f"known ({known.name})"
        if known is not None and strict:
            status = f"CYCLE, --strict ({known.name})"
        if known is None or strict:
            failures += 1
        print(f"[{graph_name}] {status}: {len(component)} modules: {', '.join(map(_short, component))}")
        members = set(component)
        for module in component:
            inside = sorted(t for t in graph[module] if t in members)
            print(f"    {_short(module)} -> {', '.join(map(_short, inside))}")
        cycles = elementary_cycles(graph, component, max_cycles)
        more = " (first ones)" if len(cycles) >= max_cycles else ""
        print(f"    {len(cycles)} elementary cycles{more}:")
        for cycle in cycles:
            print(f"      {' -> '.join(map(_short, cycle))}")
    return failures, matched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package-dir", type=Path, default=ROOT / PACKAGE)
    parser.add_argument("--max-cycles", type=int, default=20, help="elementary cycles printed per component")
    parser.add_argument("--strict", action="store_true", help="known cycles fail too")
    parser.add_argument(
        "--type-checking",
        action="store_true",
        help="count imports under `if TYPE_CHECKING:` as deferred (type-only dependencies; not for CI)",
    )
    args = parser.parse_args(argv)

    module_graph, full_graph, n_top, n_deferred = build_graphs(args.package_dir, args.type_checking)
    print(
        f"{len(module_graph)} modules; {n_top} module-level and {n_deferred} function-level "
        "(deferred) import edges inside the package, TYPE_CHECKING imports "
        + ("counted as deferred" if args.type_checking else "excluded")
    )
    failures = 0
    matched: set[KnownCycle] = set()
    for graph_name, graph in ((MODULE_LEVEL, module_graph), (WITH_DEFERRED, full_graph)):
        graph_failures, graph_matched = report(graph_name, graph, args.max_cycles, args.strict)
        failures += graph_failures
        matched |= graph_matched
    for known in KNOWN_CYCLES:
        if known not in matched:
            print(f"fixed: known cycle '{known.name}' ({known.graph}) is gone; remove it from KNOWN_CYCLES")
    if failures:
        print(
            f"{failures} import cycle(s) fail; break them or (for a cycle that predates this check) "
            "list them in KNOWN_CYCLES"
        )
        return 1
    print("no new import cycles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
