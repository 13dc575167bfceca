"""The package's shape: rules a reader relies on that no behaviour test would notice breaking.

Imports run one way: no circle (imports inside functions count: they are circles deferred, not
gone), and once grader/ is cut into subpackages, only downwards through the layers below. No
function in grader/ is longer than a screen (80 lines).
"""

import ast
from pathlib import Path

import pytest

from grader.spec import exercises

GRADER = Path(__file__).resolve().parent.parent / "grader"

# downwards only: a module may import from its own subpackage or from a lower layer, never from a higher
# one or a sibling (course and classroom both stand on judge, neither on the other)
LAYERS = {
    "errors": 0,  # grader/errors.py: every layer raises these
    "lazy": 0,  # grader/lazy.py: each layer's submodules on first use
    "spec": 1,  # the contract, the exercises and their kinds, inputs and float64 references
    "compile": 2,  # toolchain, the CPU backend, the scan and the link check (not "build": setuptools' folder)
    "run": 3,  # the native runner, sandbox, protocol, worker, timing
    "judge": 4,  # the staged verdict, calibration, report, the access profile
    "classroom": 5,  # batch, merge, LMS formats
    "course": 5,  # the notebooks' helpers
}
TOP = {"grader", "grader.__main__", "grader.cli"}  # the public API and the CLI, above every layer
MAX_LINES = 80


def _modules() -> dict[str, Path]:
    mods = {}
    for path in GRADER.rglob("*.py"):
        name = ".".join(path.relative_to(GRADER.parent).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = path
    return mods


def _imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the grader modules it imports, anywhere in its text (functions included)."""
    graph = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    found.add(sub if sub in mods else base)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        graph[name] = {m for m in found if m in mods and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _layer(module: str) -> str | None:
    """The layer a module belongs to: its subpackage, errors, or TOP; None for any other flat module."""
    if module in TOP:
        return "top"
    part = module.split(".")[1]
    return part if part in LAYERS else None


def test_no_import_cycle():
    cycles = _cycles(_imports(_modules()))
    assert not cycles, "grader's imports go round in circles (move the shared piece down, or pass a callable):\n" + (
        "\n".join(" <-> ".join(c) for c in cycles)
    )


def test_imports_run_down_the_layers():
    mods = _modules()
    subpackages = {m.split(".")[1] for m in mods if m.count(".") >= 2 and m.split(".")[1] in LAYERS}
    if not subpackages:
        pytest.skip("grader/ is still flat: no layer subpackage (spec, compile, run, judge, ...) exists yet")
    unplaced = sorted(m for m in mods if _layer(m) is None)
    assert not unplaced, f"modules in no layer (put each in one of {sorted(LAYERS)}): {unplaced}"
    rank = LAYERS | {"top": len(LAYERS)}
    upwards = sorted(
        f"{a} ({_layer(a)}) imports {b} ({_layer(b)})"
        for a, targets in _imports(mods).items()
        for b in targets
        if _layer(a) != _layer(b) and rank[_layer(a)] <= rank[_layer(b)]
    )
    assert not upwards, "imports that run up (or across) the layers:\n" + "\n".join(upwards)


def _long_functions() -> dict[str, int]:
    found = {}
    for path in sorted(GRADER.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES:
                    found[f"{path.relative_to(GRADER.parent)}:{node.name}"] = lines
    return found


def test_no_function_over_80_lines():
    long = _long_functions()
    assert not long, f"functions over {MAX_LINES} lines (split them into named steps): " + ", ".join(
        f"{k} ({v})" for k, v in sorted(long.items())
    )


# the specs name the exercises; the kinds say what each family does; nothing else names one
SPEC_MODULES = {GRADER / "spec" / "exercises.py", GRADER / "spec" / "kinds.py"}


def _string_constants(path: Path):
    """The module's string constants, less the C names of the contract's launchers (`gemm_relu` is a
    launcher of that name as well as an exercise)."""
    tree = ast.parse(path.read_text(), str(path))
    c_names = {
        id(node.args[0])
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Launcher" and node.args
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in c_names:
            yield node


def test_no_exercise_names():
    """An exercise's behaviour comes from its spec and its kind (grader.spec.kinds), never from a comparison
    with its name elsewhere: a new rung is one spec, plus one kind at most."""
    names = set(exercises.EXERCISES)
    found = [
        f"{path.relative_to(GRADER.parent)}:{node.lineno}: {node.value!r}"
        for path in sorted(GRADER.rglob("*.py"))
        if path not in SPEC_MODULES
        for node in _string_constants(path)
        if node.value in names
    ]
    assert not found, "exercise names outside grader/spec/exercises.py and grader/spec/kinds.py:\n" + "\n".join(found)
