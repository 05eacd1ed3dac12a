"""The architecture, from the source alone (no Spark, no project module imported but the
index registry): no import cycles, layers point one way, no index imports another index,
no index named in the layers that must work for any index, no Spark in the cores.

Every import statement counts: module-level, inside functions, methods, classes and
``if TYPE_CHECKING:`` blocks, ``import x`` and ``from x import y``, relative imports
resolved. A function-level import that dodges a cycle at run time is still a cycle.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from pathlib import Path

import pytest

import indexes

ROOT = Path(__file__).resolve().parents[1]
# bottom → top: a package may import only from itself and packages listed before it
LAYERS = ["tableformat", "writeclient", "metrics", "indexes", "workloads", "peers", "reports",
          "indexbench"]
PACKAGES = tuple(LAYERS)
# where no index is named: the table format, the workloads and the harness work for any
# index the registry holds
INDEX_NAME_FREE = ("indexbench", "tableformat", "writeclient", "metrics", "workloads")


@dataclass(frozen=True)
class Import:
    """One name an import statement brings in."""

    path: Path  # the importing file
    line: int
    # absolute dotted name: ``a.b`` for ``import a.b``, ``a.b.c`` for ``from a.b import c``
    target: str
    module: str | None  # the project module ``target`` resolves to; None: not the project's
    module_level: bool  # runs when the module is imported (not inside a function)

    @property
    def top(self) -> str:
        return self.target.split(".")[0]

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


@cache
def modules() -> dict[str, Path]:
    """Every module of the project's packages: dotted name → file."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if "benchmarks" in path.relative_to(ROOT).parts:
                continue  # an index's asv benchmarks: the suite's, above every layer
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _resolve(target: str, known: dict[str, Path]) -> str | None:
    """The longest prefix of ``target`` that is a project module."""
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _nodes(node: ast.AST, in_function: bool = False):
    """Every node below ``node``, at any depth, and whether it is inside a function."""
    for child in ast.iter_child_nodes(node):
        yield child, in_function
        yield from _nodes(child, in_function or isinstance(child, FUNCTION))


def _parse(name: str, path: Path, known: dict[str, Path]) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node, in_function in _nodes(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                if node.level - 1 >= len(parts):
                    raise AssertionError(f"{path.relative_to(ROOT)}:{node.lineno}: relative "
                                         "import beyond the top-level package")
                base = ".".join(parts[: len(parts) - (node.level - 1)])
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            targets = [mod if a.name == "*" else f"{mod}.{a.name}" for a in node.names]
        else:
            continue
        out += [Import(path, node.lineno, t, _resolve(t, known), not in_function)
                for t in targets]
    return out


@cache
def imports() -> dict[str, list[Import]]:
    """Module → every import in it."""
    known = modules()
    return {name: _parse(name, path, known) for name, path in known.items()}


def graph() -> dict[str, dict[str, Import]]:
    """Module → the project modules it imports (each with its first import statement).
    An import of the module's own ancestor package (``from indexes import x`` in
    ``indexes/bloom/core.py``) is not an edge: the package is initialised before its
    modules, so a re-export is no cycle (the rule of the shared import_cycles.py tool)."""
    out: dict[str, dict[str, Import]] = {}
    for name, found in imports().items():
        edges = out.setdefault(name, {})
        for imp in found:
            m = imp.module
            if m is None or name.startswith(m + "."):
                continue
            edges.setdefault(m, imp)
    return out


def strongly_connected(g: dict[str, dict[str, Import]]) -> list[list[str]]:
    """Tarjan's strongly connected components."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
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
            out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def _one_cycle(g: dict[str, dict[str, Import]], comp: list[str]) -> list[str]:
    """A shortest cycle through the component's first module: each step with the file
    and line of its import."""
    start, members = comp[0], set(comp)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(g[v]):
            if w == start:
                path = paths[v] + [start]
                return [f"{a} -> {b} ({g[a][b].where()})" for a, b in pairwise(path)]
            if w in members and w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    raise AssertionError(f"no cycle through {start}")  # a component always has one


def test_no_import_cycles():
    g = graph()
    problems = []
    for name, edges in sorted(g.items()):
        if name in edges:
            problems.append(f"self-import: {name} ({edges[name].where()})")
    for comp in strongly_connected(g):
        if len(comp) > 1:
            problems.append("cycle: " + " <-> ".join(comp) + "\n    "
                            + "\n    ".join(_one_cycle(g, comp)))
    assert not problems, (f"{len(problems)} import cycle(s), function-level imports "
                          "counted:\n" + "\n".join(problems))


@pytest.mark.parametrize("package", LAYERS)
def test_layers_point_one_way(package):
    above = set(LAYERS[LAYERS.index(package) + 1:])
    bad = [f"{imp.where()} imports {imp.target} (layer {imp.top})"
           for name, found in sorted(imports().items())
           if name.split(".")[0] == package
           for imp in found if imp.top in above]
    assert not bad, f"{package} imports from a layer above it:\n" + "\n".join(bad)


# modules directly under indexes/ that are Spark code
SPARK_SHARED = ("counters.py",)
# scripts that run in another interpreter, never imported by the project: Hudi's writer
# runs in the Python of Hudi's own Spark runtime (peers/hudi_runtime.py), pyspark 3.5
FOREIGN_SCRIPTS = (ROOT / "peers" / "hudi_job.py",)


def _spark_free_roots() -> list[Path]:
    """Files that must not import pyspark, at any level: under ``indexes/`` the registry
    and the shared modules directly in it (but :data:`SPARK_SHARED`), and in every package
    its definition (``__init__.py``), cores (``core*.py``) and simulator (``sim*.py``) —
    the Spark adapters are the packages' other modules, loaded on use; and all of the
    table format, the simulator driver, the peers and the reports."""
    pkg = ROOT / "indexes"
    files = [p for p in pkg.glob("*.py") if p.name not in SPARK_SHARED]
    files += [p for p in pkg.glob("*/**/*.py")
              if p.name == "__init__.py" or p.name.startswith(("core", "sim"))]
    for folder in ("tableformat", "writeclient", "metrics", "indexbench/sim", "peers",
                   "reports"):
        files += (ROOT / folder).rglob("*.py")
    return sorted(set(files) - set(FOREIGN_SCRIPTS))


def test_a_foreign_script_is_never_imported():
    """A script that runs in another interpreter (:data:`FOREIGN_SCRIPTS`) is started as a
    file, never imported: nothing of the project imports it."""
    found = imports()
    names = {n for n, p in modules().items() if p in FOREIGN_SCRIPTS}
    bad = [imp.where() for imps in found.values() for imp in imps
           if imp.module in names or imp.target in names]
    assert names and not bad, bad


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def test_no_core_or_definition_imports_pyspark():
    """The roots import no pyspark anywhere, and nothing they load on import (module-level
    imports, transitively, with the packages around them) imports it at module level."""
    found, by_path = imports(), {p: n for n, p in modules().items()}
    roots = [by_path[p] for p in _spark_free_roots()]
    assert any(r.endswith(".core") for r in roots)  # the cores are among them
    bad = [f"{imp.where()} imports {imp.target}" for r in roots for imp in found[r]
           if imp.top == "pyspark"]
    loaded_by: dict[str, str | None] = dict.fromkeys(roots)  # module → who loads it
    queue = list(roots)
    while queue:
        v = queue.pop(0)
        for imp in found[v]:
            if imp.module_level and imp.module:
                for w in _ancestors(imp.module):  # a package runs before its modules
                    if w in found and w not in loaded_by:
                        loaded_by[w] = v
                        queue.append(w)

    def chain(m: str) -> str:
        out = [m]
        while loaded_by[out[-1]] is not None:
            out.append(loaded_by[out[-1]])
        return " <- ".join(out)

    bad += [f"{imp.where()} imports {imp.target} at module level; loaded by {chain(m)}"
            for m in sorted(set(loaded_by) - set(roots)) for imp in found[m]
            if imp.module_level and imp.top == "pyspark"]
    assert not bad, "pyspark imported where no Spark may be:\n" + "\n".join(bad)


def index_folders() -> dict[str, str]:
    """Index package (a package directly under ``indexes``) → its registered name(s), for
    every index of this repository in the registry (one registered from elsewhere with
    ``indexes.register`` is not ours to check). Other packages and the modules directly
    under ``indexes`` (``base``, ``hashing``, ``lookup``, the shared ``bucket``
    package...) are shared code."""
    out: dict[str, str] = {}
    for name in indexes.names():
        module = indexes._REGISTRY[name].partition(":")[0]
        parts = module.split(".")
        if parts[0] != "indexes":
            continue
        folder = ".".join(parts[:2])
        assert len(parts) >= 2 and modules().get(folder, ROOT).name == "__init__.py", (
            f"index {name!r}: {module} is not in a package directly under indexes/")
        out[folder] = f"{out[folder]}/{name}" if folder in out else name
    return out


def _folder_of(module: str, folders: dict[str, str]) -> str | None:
    top2 = ".".join(module.split(".")[:2])
    return top2 if top2 in folders else None


def test_no_index_imports_another_index():
    folders = index_folders()
    assert folders, "no index of the registry is a package under indexes/"
    bad = []
    for name, found in sorted(imports().items()):
        mine = _folder_of(name, folders)
        if mine is None:
            continue
        for imp in found:
            theirs = imp.module and _folder_of(imp.module, folders)
            if theirs and theirs != mine:
                bad.append(f"{imp.where()}: {folders[mine]} ({mine}) imports {imp.target} "
                           f"of {folders[theirs]}")
    assert not bad, ("an index imports another index; shared code belongs in indexes/ "
                     "(a top-level module or a shared package such as indexes/bucket/):\n"
                     + "\n".join(bad))


def test_no_index_named_outside_indexes():
    names = set(indexes.names())
    bad = []
    for package in INDEX_NAME_FREE:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            bad += [f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
                    for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and node.value in names]
    assert not bad, (f"index names as string literals in {', '.join(INDEX_NAME_FREE)} "
                     "(ask the index, or the registry, instead):\n" + "\n".join(bad))


def _index_packages() -> set[str]:
    """Every package directly under ``indexes/``: an index's folder, or code some
    indexes share (``indexes.bucket``, ``indexes.bloom_filter``) — none of it generic."""
    return {name for name, path in modules().items()
            if name.count(".") == 1 and name.startswith("indexes.")
            and path.name == "__init__.py"}


def test_no_generic_module_imports_an_index():
    """Outside ``indexes/``, the registry (``indexes``) and the generic modules directly
    in it (``indexes.base``, ``indexes.roles``, ``indexes.lookup`` …) are all there is of
    the indexes: an index's folder, or a package indexes share, is reached only through
    the registry and the roles it declares."""
    packages = _index_packages()
    assert {"indexes.bloom", "indexes.bucket"} <= packages
    bad = [f"{imp.where()} imports {imp.target}"
           for name, found in sorted(imports().items()) if name.split(".")[0] != "indexes"
           for imp in found
           if imp.module and ".".join(imp.module.split(".")[:2]) in packages]
    assert not bad, ("generic code imports an index's folder (ask the registry and "
                     "indexes.roles instead):\n" + "\n".join(bad))


GENERIC = ("indexbench", "tableformat", "writeclient", "metrics", "workloads", "peers",
           "reports")


def _declared_by_one_index() -> dict[str, str]:
    """Every name exactly one registered index declares — a metric column, a parameter
    (name and Hudi key), a simulator option (name and flag), a figure file, a table
    service (name and operation) — to the index declaring it. A name several indexes
    declare is shared, not one index's."""
    from indexes import roles

    owners: dict[str, set[str]] = {}
    for n in indexes.names():
        c = indexes.index_class(n)
        names = [m.name for m in c.METRICS]
        names += [x for p in c.PARAMS for x in (p.name, p.key)]
        if roles.plays(c, roles.SimulatorOptions):
            names += [x for o in c.SIM_OPTIONS for x in (o.name, o.flag)]
        if roles.plays(c, roles.DeclaredFigures):
            names += [f.file for f in c.FIGURES]
        names += [x for s in roles.services(c) for x in (s.name, s.operation)]
        if roles.plays(c, roles.StreamPanels):
            names += [t[0] for t in (*c.STREAM_CACHE, *c.STREAM_EVENTS)]
        if roles.plays(c, roles.RescalePanels):
            names += [t[0] for t in c.RESCALE_PANELS]
        for x in names:
            owners.setdefault(x, set()).add(n)
    return {x: next(iter(o)) for x, o in owners.items() if len(o) == 1}


def test_no_generic_module_names_one_indexs_declarations():
    """No option, column, figure or default that belongs to one index is written outside
    its folder: the names come from what each index declares, not from a list."""
    own = _declared_by_one_index()
    found: dict[tuple[str, str], list[str]] = {}
    for package in GENERIC:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and node.value in own:
                    rel = str(path.relative_to(ROOT))
                    found.setdefault((rel, node.value), []).append(
                        f"{rel}:{node.lineno}: {node.value!r} (declared by {own[node.value]})")
    named = [w for _k, where in sorted(found.items()) for w in where]
    assert not named, ("generic code names one index's declarations (ask the index, "
                       "or the registry):\n" + "\n".join(named))
