"""`scripts/check_import_cycles.py`: the cycles it finds in a hand-made package, no new cycle in
`pictura` (the cycles it lists as known are printed, not failed), and `pictura`'s layers import
only earlier layers."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "check_import_cycles.py"


@pytest.fixture(scope="module")
def checker():
    spec = importlib.util.spec_from_file_location("check_import_cycles", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their string annotations through it
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def _write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "toy"


TOY = {
    "toy/__init__.py": "from toy.a import A\n",
    # a <-> b only through a function-level import
    "toy/a.py": "import toy.b\nA = 1\n",
    "toy/b.py": "def f():\n    from toy.a import A\n    return A\n",
    # c <-> d only through TYPE_CHECKING: no cycle
    "toy/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toy.d import D\nC = 1\n",
    "toy/d.py": "from toy.c import C\nD = C\n",
    # e <-> f at module level, one of them by a relative import
    "toy/e.py": "from . import f\nE = 1\n",
    "toy/f.py": "from .e import E\n",
    # entering the subpackage runs its __init__, which imports x, which imports y
    "toy/sub/__init__.py": "from toy.sub.x import X\n",
    "toy/sub/x.py": "from toy.y import Y\nX = Y\n",
    "toy/sub/z.py": "Z = 1\n",
    "toy/y.py": "try:\n    from toy.sub.z import Z\nexcept ImportError:\n    Z = 0\nY = Z\n",
}


def test_cycles_of_a_hand_made_package(checker, tmp_path, capsys):
    package = _write_package(tmp_path, TOY)
    module_graph, full_graph, n_top, n_deferred = checker.build_graphs(package)
    # y -> sub.z enters toy.sub from outside: an edge to toy.sub as well
    assert module_graph["toy.y"] == {"toy.sub", "toy.sub.z"}
    assert module_graph["toy.sub.x"] == {"toy.y"}  # toy is its own package: no edge to toy
    assert module_graph["toy.c"] == set()
    assert module_graph["toy.b"] == set() and full_graph["toy.b"] == {"toy.a"}
    assert (n_top, n_deferred) == (9, 1)

    assert checker.strongly_connected(module_graph) == [
        ["toy.e", "toy.f"],
        ["toy.sub", "toy.sub.x", "toy.y"],
    ]
    assert checker.strongly_connected(full_graph) == [
        ["toy.a", "toy.b"],
        ["toy.e", "toy.f"],
        ["toy.sub", "toy.sub.x", "toy.y"],
    ]
    assert checker.elementary_cycles(full_graph, ["toy.sub", "toy.sub.x", "toy.y"], 10) == [
        ["toy.sub", "toy.sub.x", "toy.y", "toy.sub"]
    ]

    _, type_graph, _, _ = checker.build_graphs(package, type_checking=True)
    assert ["toy.c", "toy.d"] in checker.strongly_connected(type_graph)

    assert checker.main(["--package-dir", str(package)]) == 1
    out = capsys.readouterr().out
    assert out.count("NEW CYCLE") == 5  # two in the module-level graph, three with deferred imports
    assert "toy.a -> toy.b -> toy.a" in out


def test_elementary_cycles_lists_each_cycle_once(checker):
    graph = {"a": {"b", "c"}, "b": {"a", "c"}, "c": {"a"}}
    cycles = checker.elementary_cycles(graph, ["a", "b", "c"], 10)
    assert sorted(cycles) == [["a", "b", "a"], ["a", "b", "c", "a"], ["a", "c", "a"]]


def test_pictura_has_no_new_import_cycle(checker, capsys):
    status = checker.main([])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "NEW CYCLE" not in out


LAYERS = ("maps", "sim", "render", "envs", "modules", "eval", "callbacks")
"""`pictura`'s subpackages in layer order (CONTRIBUTING.md); the command line comes last."""
COMMAND_LINE = ("pictura.cli", "pictura.__main__", "pictura.modules.cli", "pictura.tools")


def _layer(module: str) -> int | None:
    if any(module == c or module.startswith(c + ".") for c in COMMAND_LINE):
        return len(LAYERS)
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def test_pictura_layers_import_only_earlier_layers(checker):
    """Every import inside `pictura`, deferred ones included, goes to the same or an earlier
    layer: maps < sim < render < envs < modules < eval < callbacks < command line."""
    _, full_graph, _, _ = checker.build_graphs(SCRIPT.parent.parent / "pictura")
    assert _layer("pictura.modules.ppo") < _layer("pictura.eval.policies") < _layer("pictura.modules.cli")
    upward = [
        f"{importer} -> {imported}"
        for importer, targets in sorted(full_graph.items())
        for imported in sorted(targets)
        if None not in (_layer(importer), _layer(imported)) and _layer(imported) > _layer(importer)
    ]
    assert upward == []
