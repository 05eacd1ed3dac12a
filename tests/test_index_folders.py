"""Everything about an index lives in its folder (issue #41): its code, its page
(``indexes/<folder>/README.md``), its asv benchmarks (``indexes/<folder>/benchmarks/``)
and any figure of its own; ``docs/indexes/README.md`` gathers them.

Outside its folder an index is named only by its registry line (``indexes/__init__.py``),
its row on the gathering page, and what reports on it: tests, pages that link to it,
measurements and comparisons that pick it through the registry. A file that names it
otherwise would have to be touched to add it (or to remove it): for each index this test
lists those files, and for the last three indexes added it prints them. No Spark, no
index imported (the registry only).
"""

from __future__ import annotations

import ast
import os
import pkgutil
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from test_docs_links import broken_links, links

import indexes

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = "indexes/__init__.py"
GATHERING = "docs/indexes/README.md"
# the page that lists every committed figure with its command (docs/results.md): it shows
# each figure without owning it
FIGURE_CATALOG = "docs/results.md"
# code and pages read; folders never read (virtualenvs, caches, outputs, builds)
TEXT = {".py", ".md", ".toml", ".sh", ".json", ".ipynb", ".cfg", ".ini", ".yml", ".yaml",
        ".txt"}
SKIP_DIRS = {"out", "build", "dist", "__pycache__", "spark-warehouse", "metastore_db",
             "results", "node_modules"}
# code that measures, compares or reports on indexes and may pick one by its registered
# name (as tests/test_architecture.py lets peers and reports do): benchmarks run the
# harness through an index of their choice, a peer mirrors an index's parameter, the
# notebook compares them
NAMING_ALLOWED = ("benchmarks", "peers", "reports", "notebooks")

# Known mentions outside an index's folder, each with what would remove it. A mention
# found and not listed fails; an entry no longer found fails too (remove it).
KNOWN: dict[tuple[str, str, str], str] = {
    ("docs/simulator.md", "bloom", "import"):
        "`indexes.bloom.core.candidate_slices` / `check_keys` described in the simulator "
        "page: bloom's page could hold it",
    ("docs/reports.md", "dynamic-rli", "import"):
        "'before `indexes.dynamic_rli` existed' in the asv section",
}


@cache
def folders() -> dict[str, Path]:
    """Registered name → its folder, for every index of this repository (one registered
    from elsewhere with ``indexes.register`` is not ours to check)."""
    out = {}
    for name in indexes.names():
        parts = indexes._REGISTRY[name].partition(":")[0].split(".")
        if parts[0] == "indexes" and len(parts) >= 2:
            out[name] = ROOT / "indexes" / parts[1]
    return out


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@cache
def files() -> tuple[Path, ...]:
    """Every text file of the checkout: code, pages, presets, CI scripts."""
    out = []
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")
                         and (not d.startswith(".") or d in (".ci", ".github")))
        for n in sorted(names):
            p = Path(folder) / n
            if p == Path(__file__).resolve():
                continue  # this file names what it finds
            if p.suffix in TEXT or (p.parent.name == ".ci" and not p.suffix):
                out.append(p)
    return tuple(out)


@cache
def bench_modules() -> dict[str, Path]:
    """asv module name (``bench_bloom``) → file, of every benchmark in an index's folder."""
    return {p.stem: p for p in sorted(ROOT.glob("indexes/*/benchmarks/*.py"))
            if p.stem != "__init__"}


@dataclass(frozen=True)
class Mention:
    """A file naming an index: by its registered name as a string literal (``name``), its
    folder's import path (``import``), a path or link into its folder (``path``) or a path
    its page or a benchmark of it had before they moved into the folder (``old path``)."""

    file: str
    line: int
    index: str
    kind: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.index} ({self.kind})"


def _patterns(name: str, folder: Path) -> dict[str, re.Pattern]:
    f = folder.name
    # its benchmarks' paths in the suite's folder (inside the index's folder,
    # ``benchmarks/bench_x.py`` is the right relative path)
    benches = [rf"(?<![\w/])benchmarks/{m}\.py" for m, p in bench_modules().items()
               if folder in p.parents]
    return {"import": re.compile(rf"\bindexes\.{f}\b"),
            "path": re.compile(rf"(?<![\w.])indexes/{f}(/|\b)"),
            "old page": re.compile(rf"docs/indexes/{re.escape(name)}\.md"),
            "old bench": re.compile("|".join(benches) or r"(?!)")}


@dataclass
class Scan:
    """What one file says, read once: its lines, and for Python its string constants and
    the modules it imports (each with its lines)."""

    lines: list[str]
    strings: dict[str, set[int]]
    imported: dict[str, set[int]]


def _scan(path: Path, text: str) -> Scan:
    strings: dict[str, set[int]] = {}
    imported: dict[str, set[int]] = {}
    # parsed only when a name is quoted or ``indexes`` appears (most files: neither)
    quoted = any(f"{q}{n}{q}" in text for n in folders() for q in "\"'")
    if path.suffix == ".py" and (quoted or "indexes" in text):
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.setdefault(node.value, set()).add(node.lineno)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    imported.setdefault(a.name, set()).add(node.lineno)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                for m in [node.module, *(f"{node.module}.{a.name}" for a in node.names)]:
                    imported.setdefault(m, set()).add(node.lineno)
    return Scan(text.splitlines(), strings, imported)


def _name_literals(path: Path, scan: Scan, name: str) -> set[int]:
    if path.suffix == ".py":
        return scan.strings.get(name, set())
    if path.suffix == ".md":
        return set()  # prose names indexes freely; a page is checked by its links and paths
    # a quoted string (escaped quotes in a notebook's JSON), alone or in a comma list
    q = re.compile(rf"""\\?["'](?:[\w-]+,)*{re.escape(name)}(?:,[\w-]+)*\\?["']""")
    return {i for i, line in enumerate(scan.lines, 1) if q.search(line)}


def _imports_of(scan: Scan, folder: Path) -> set[int]:
    """Lines importing the index's package (``import indexes.x``, ``from indexes import
    x``, ``from indexes.x.core import y``)."""
    pkg = f"indexes.{folder.name}"
    return {i for m, lines in scan.imported.items()
            if m == pkg or m.startswith(pkg + ".") for i in lines}


@cache
def mentions() -> tuple[Mention, ...]:
    """Every mention of every index of this repository: outside its folder, and paths
    from before the move anywhere."""
    out: set[Mention] = set()
    pats = {n: _patterns(n, f) for n, f in folders().items()}
    for path in files():
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:  # removed since the listing (a tree being edited)
            continue
        scan = _scan(path, text)
        where = rel(path)
        # the lines any path or import pattern can match
        cand = [(i, line) for i, line in enumerate(scan.lines, 1)
                if "indexes" in line or "benchmarks/" in line]
        page_links = []
        if path.suffix == ".md":
            page_links = [(i, (path.parent / t.partition("#")[0]).resolve())
                          for i, t in links(path) if not re.match(r"^[a-zA-Z][\w+.-]*:", t)]
        for name, folder in folders().items():
            found: set[tuple[int, str]] = set()
            found |= {(i, "old path") for i, line in cand if pats[name]["old page"].search(line)}
            if folder not in path.parents:
                found |= {(i, "old path") for i, line in cand
                          if pats[name]["old bench"].search(line)}
                found |= {(i, "name") for i in _name_literals(path, scan, name)}
                for kind in ("import", "path"):
                    found |= {(i, kind) for i, line in cand if pats[name][kind].search(line)}
                found |= {(i, "import") for i in _imports_of(scan, folder)}
                found |= {(i, "path") for i, dest in page_links
                          if dest == folder or folder in dest.parents}
            out |= {Mention(where, i, name, kind) for i, kind in found}
    return tuple(sorted(out, key=lambda m: (m.file, m.line, m.index, m.kind)))


@cache
def registry_lines() -> dict[str, set[int]]:
    """Index name → the lines of ``indexes/__init__.py`` that register it (its
    ``_REGISTRY`` entry) or make it the default (``DEFAULT_INDEX``)."""
    tree = ast.parse((ROOT / REGISTRY).read_text(encoding="utf-8"))
    out: dict[str, set[int]] = {}
    for node in tree.body:
        target = (node.targets[0] if isinstance(node, ast.Assign) else
                  node.target if isinstance(node, ast.AnnAssign) else None)
        if not isinstance(target, ast.Name):
            continue
        if target.id == "_REGISTRY" and isinstance(node.value, ast.Dict):
            for k, v in zip(node.value.keys, node.value.values, strict=True):
                if isinstance(k, ast.Constant):
                    out.setdefault(k.value, set()).update(range(k.lineno, v.end_lineno + 1))
        elif target.id == "DEFAULT_INDEX" and isinstance(node.value, ast.Constant):
            out.setdefault(node.value.value, set()).add(node.lineno)
    return out


def allowed(m: Mention) -> str | None:
    """Why the mention is fine, or None: a file that would be touched to add the index."""
    if m.kind == "old path":
        return None
    if m.file == REGISTRY and m.line in registry_lines().get(m.index, ()):
        return "registry line"
    if m.file == GATHERING:
        return "gathering page"
    if m.file.startswith("tests/"):
        return "a test of it"
    if m.kind == "path" and m.file.endswith(".md"):
        return "a page that links to it"
    if m.kind == "name" and m.file.split("/")[0] in NAMING_ALLOWED:
        return "measures or compares it through the registry"
    return None


def would_touch(name: str) -> dict[tuple[str, int], list[Mention]]:
    """(file, line) → the mentions of ``name`` outside its folder in files that adding it
    touches: its registry line, its gathering row, and every mention no rule allows."""
    folder = rel(folders()[name]) + "/"
    out: dict[tuple[str, int], list[Mention]] = {}
    for m in mentions():
        if (m.index == name and not m.file.startswith(folder)
                and allowed(m) in (None, "registry line", "gathering page")):
            out.setdefault((m.file, m.line), []).append(m)
    return out


def test_folders_found():
    assert len(folders()) >= 3 and all((f / "__init__.py").is_file()
                                       for f in folders().values())
    assert mentions() and registry_lines()


def test_an_index_is_named_outside_its_folder_only_where_allowed():
    bad = [m for m in mentions() if allowed(m) is None]
    new = [f"{m}" for m in bad if (m.file, m.index, m.kind) not in KNOWN]
    gone = sorted(set(KNOWN) - {(m.file, m.index, m.kind) for m in bad})
    assert not new, ("an index named outside its folder (ask the registry or the index "
                     "instead; a page links to it; see this test's rules):\n"
                     + "\n".join(new))
    assert not gone, f"known mentions no longer found, remove them from KNOWN: {gone}"


def test_the_last_three_indexes_touch_only_their_registry_line_and_gathering_row(capsys):
    last = [n for n in indexes.names() if n in folders()][-3:]
    assert len(last) == 3
    report, bad = [], []
    for name in last:
        touched = would_touch(name)
        report.append(f"{name} ({rel(folders()[name])}/): files outside it that adding it "
                      "touches today:")
        for (file, line), found in touched.items():
            whys = []
            for m in found:
                known = KNOWN.get((m.file, m.index, m.kind))
                whys.append(allowed(m) or (f"known: {known}" if known else "NOT ALLOWED"))
                if allowed(m) is None and not known:
                    bad.append(str(m))
            report.append(f"  {file}:{line} ({'; '.join(dict.fromkeys(whys))})")
        missing = ({"registry line", "gathering page"}
                   - {allowed(m) for found in touched.values() for m in found})
        if missing:
            bad.append(f"{name}: not found: its {' and '.join(sorted(missing))}")
    with capsys.disabled():
        print("\n" + "\n".join(report))
    assert not bad, "\n".join(bad)


def test_every_index_has_its_page_in_its_folder_and_a_row_on_the_gathering_page():
    gathering = ROOT / GATHERING
    linked = {(gathering.parent / t.partition("#")[0]).resolve() for _, t in links(gathering)}
    bad = []
    for name, folder in folders().items():
        page = folder / "README.md"
        if not page.is_file():
            bad.append(f"{name}: no {rel(page)}")
        elif page not in linked:
            bad.append(f"{name}: {GATHERING} does not link {rel(page)}")
        if (ROOT / "docs" / "indexes" / f"{name}.md").exists():
            bad.append(f"{name}: a page outside its folder, docs/indexes/{name}.md")
    assert not bad, "\n".join(bad)


INDEX_PAGES = sorted(ROOT.glob("indexes/**/README.md"))


@pytest.mark.parametrize("page", INDEX_PAGES, ids=lambda p: rel(p))
def test_index_page_links_resolve(page):
    bad = broken_links(page)
    assert not bad, f"{len(bad)} broken link(s) in {rel(page)}:\n" + "\n".join(bad)


def _images(page: Path) -> set[Path]:
    return {(page.parent / t).resolve() for _, t in links(page)
            if not re.match(r"^[a-zA-Z][\w+.-]*:", t)
            and Path(t).suffix.lower() in (".png", ".svg", ".jpg", ".jpeg", ".gif")}


def test_a_figure_only_one_index_page_shows_lives_in_its_folder():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *INDEX_PAGES]
    shown: dict[Path, set[Path]] = {}
    for page in pages:
        if rel(page) != FIGURE_CATALOG:
            for image in _images(page):
                shown.setdefault(image, set()).add(page)
    bad = [f"{rel(image)} is shown only by {rel(page)}: move it to {rel(page.parent)}/"
           for page in INDEX_PAGES for image in _images(page)
           if shown[image] == {page} and page.parent not in image.parents]
    assert not bad, "\n".join(bad)


def test_index_benchmarks_live_in_registered_index_folders(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    import benchmarks

    registered = set(folders().values())
    bench_dirs = sorted(ROOT.glob("indexes/*/benchmarks"))
    assert bench_dirs, "no index keeps its benchmarks in its folder"
    bad = [f"{rel(d)}: {rel(d.parent)} is not a registered index's folder"
           for d in bench_dirs if d.parent not in registered]
    bad += [f"{rel(d)} is not on benchmarks.__path__" for d in bench_dirs
            if str(d) not in benchmarks.__path__]
    # asv names a benchmark after its module's name in the suite: one module, one name
    seen: dict[str, list[str]] = {}
    for d in [ROOT / "benchmarks", *bench_dirs]:
        for m in pkgutil.iter_modules([str(d)]):
            seen.setdefault(m.name, []).append(rel(d))
    bad += [f"benchmark module {n} in {', '.join(where)}" for n, where in seen.items()
            if len(where) > 1]
    found = {m.name for m in pkgutil.iter_modules(benchmarks.__path__)}
    bad += [f"{n} ({rel(p)}) is not found by asv's discovery" for n, p in bench_modules().items()
            if n not in found]
    assert not bad, "\n".join(bad)


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out += [(node.lineno, node.module)]
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return out


def test_an_index_never_imports_its_benchmarks():
    """Index code (everything under indexes/ but the benchmark folders) imports no
    benchmark: the benchmarks measure the index, never the other way round."""
    bad = [f"{rel(p)}:{line}: imports {target}"
           for p in sorted((ROOT / "indexes").rglob("*.py")) if "benchmarks" not in p.parts
           for line, target in _imports(p)
           if target.split(".")[0] == "benchmarks" or ".benchmarks" in target]
    assert not bad, "\n".join(bad)


def test_no_module_outside_indexes_imports_an_index_folder():
    """The project's packages and the asv suite import an index only through the
    registry (``indexes.get``), never its package ``indexes.<folder>`` (tests may)."""
    pkgs = ["tableformat", "writeclient", "metrics", "workloads", "peers", "reports",
            "indexbench", "benchmarks"]
    names = {f"indexes.{f.name}" for f in folders().values()}
    bad = [f"{rel(p)}:{line}: imports {target}"
           for pkg in pkgs for p in sorted((ROOT / pkg).rglob("*.py"))
           for line, target in _imports(p)
           if ".".join(target.split(".")[:2]) in names]
    assert not bad, "\n".join(bad)

