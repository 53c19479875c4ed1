"""The project's layering, read from the source: one direction of dependence, no import cycles.

The import graph is built with ``ast`` from every module of ``annotation``, ``hits`` and ``config``
(migrations aside), counting every import wherever it stands: at the top of a module, inside a
function, or as ``importlib.import_module`` with a literal name.  An import of a package's name that
is a submodule (``from annotation.services import pipeline``) is an edge to that submodule.

Rules (see docs/explanations/architecture.md):

- no import cycle anywhere;
- ``hits`` never imports ``annotation``;
- ``annotation.scoring`` imports neither Django, ``hits`` nor any other part of ``annotation``;
- the protocol core (``annotation.models``, ``services``, ``selectors``, ``scoring``, ``text``,
  ``importing``) never imports automation (``annotation.automation``), the web layer
  (``annotation.web``) or the entry points above them (``tasks``, ``management``, ``admin``, ``apps``);
- the automation layer never imports the web layer;
- no module imports a private name (a leading underscore) of another module, nor reaches one through
  a module it imported (``module._name``);
- the crowd markets sit behind one seam, ``hits.markets``: a market (``hits.mturk``, ``hits.prolific``) never
  imports another market; the core of ``hits`` (every module outside the seam and the markets) never imports a
  market, nor does the seam itself (its registry loads the markets by name);
- no module of ``hits`` is over 800 lines, and no stand-in module (``standin`` in its name) over 500.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("annotation", "hits", "config")
CORE = ("annotation.models", "annotation.services", "annotation.selectors", "annotation.scoring", "annotation.text", "annotation.importing")
ABOVE_CORE = ("annotation.automation", "annotation.web", "annotation.tasks", "annotation.management", "annotation.admin", "annotation.apps")
SEAM = "hits.markets"
MARKETS = ("hits.mturk", "hits.prolific")
MAX_LINES = 800
MAX_STANDIN_LINES = 500  # both stand-ins are packages, one module per concern (issue 38)


@dataclass
class ImportGraph:
    modules: dict[str, bool] = field(default_factory=dict)  # name -> is a package
    edges: dict[str, dict[str, int]] = field(default_factory=dict)  # module -> {imported module: line}
    external: dict[str, dict[str, int]] = field(default_factory=dict)  # module -> {top-level package: line}
    private: list[str] = field(default_factory=list)  # "module:line imports other._name"


def module_sources(root: Path, packages=PACKAGES) -> dict[str, tuple[str, bool]]:
    """``{module name: (source, is a package)}`` of the project's modules, migrations left out."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if "migrations" in parts:
                continue
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            found[name] = (path.read_text(encoding="utf-8"), is_package)
    return found


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def build_graph(sources: dict[str, tuple[str, bool]]) -> ImportGraph:
    graph = ImportGraph(modules={name: is_package for name, (_, is_package) in sources.items()})

    def project_module(dotted: str) -> str | None:
        parts = dotted.split(".")
        while parts and ".".join(parts) not in graph.modules:
            parts.pop()
        return ".".join(parts) or None

    for name, (source, is_package) in sources.items():
        edges = graph.edges.setdefault(name, {})
        external = graph.external.setdefault(name, {})
        aliases: dict[str, str] = {}  # local name -> project module it stands for

        def add(dotted: str, line: int) -> None:
            target = project_module(dotted)
            if target is None:
                external.setdefault(dotted.split(".")[0], line)
            elif target != name:
                edges.setdefault(target, line)

        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    add(alias.name, node.lineno)
                    target = project_module(alias.name)
                    if target is not None:
                        aliases[alias.asname or alias.name.split(".")[0]] = target if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(name, is_package, node)
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    if submodule in graph.modules:
                        add(submodule, node.lineno)
                        aliases[alias.asname or alias.name] = submodule
                        continue
                    add(base, node.lineno)
                    if alias.name.startswith("_") and not alias.name.startswith("__") and project_module(base) is not None:
                        graph.private.append(f"{name}:{node.lineno} imports {base}.{alias.name}")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, (ast.Attribute, ast.Name))
                and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                add(node.args[0].value, node.lineno)
        # ``module._name`` through a project module imported under a local name.
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                graph.private.append(f"{name}:{node.lineno} reaches {aliases[node.value.id]}.{node.attr}")
    return graph


def cycles(graph: ImportGraph) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as one cycle's path."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(_one_cycle(graph, set(component)))

    for v in sorted(graph.edges):
        if v not in index:
            visit(v)
    return found


def _one_cycle(graph: ImportGraph, component: set[str]) -> list[str]:
    """A readable path around one cycle of the component, with the line of each import."""
    start = min(component)
    path, seen, v = [start], {start}, start
    while True:
        nxt = min(w for w in graph.edges[v] if w in component)
        path.append(f"{nxt} (line {graph.edges[v][nxt]} of {v})")
        if nxt in seen:
            return path
        seen.add(nxt)
        v = nxt


def _under(module: str, prefixes) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def violations(graph: ImportGraph) -> list[str]:
    found = []
    for module, targets in sorted(graph.edges.items()):
        for target, line in sorted(targets.items()):
            where = f"{module}:{line} imports {target}"
            if _under(module, ("hits",)) and _under(target, ("annotation",)):
                found.append(f"{where}: hits never imports annotation")
            if _under(module, ("annotation.scoring",)) and not _under(target, ("annotation.scoring",)):
                found.append(f"{where}: annotation.scoring is pure")
            if _under(module, CORE) and _under(target, ABOVE_CORE):
                found.append(f"{where}: the protocol core never imports automation, the web or entry points")
            if _under(module, ("annotation.automation",)) and _under(target, ("annotation.web",)):
                found.append(f"{where}: automation never imports the web layer")
            market = _market_of(target)
            if market is not None and _market_of(module) not in (None, market):
                found.append(f"{where}: a market never imports another market (what they share goes in {SEAM})")
            if market is not None and _under(module, ("hits",)) and _market_of(module) is None:
                if _under(module, (SEAM,)):
                    found.append(f"{where}: the seam loads the markets by name (registry.MARKET_MODULES), never imports one")
                else:
                    found.append(f"{where}: the core of hits reaches a market only through the seam ({SEAM})")
    for module, packages in sorted(graph.external.items()):
        if _under(module, ("annotation.scoring",)):
            for package, line in sorted(packages.items()):
                if package in ("django", "rest_framework", "celery"):
                    found.append(f"{module}:{line} imports {package}: annotation.scoring is pure")
    found += [f"{p}: a private name of another module" for p in graph.private]
    return found


def _market_of(module: str) -> str | None:
    return next((m for m in MARKETS if _under(module, (m,))), None)


def oversized(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """Modules of ``hits`` over ``MAX_LINES``, stand-in modules (of either market) over ``MAX_STANDIN_LINES``."""
    found = []
    for module, (source, _) in sorted(sources.items()):
        if not _under(module, ("hits",)):
            continue
        lines = len(source.splitlines())
        if lines > MAX_LINES:
            found.append(f"{module}: {lines} lines, over {MAX_LINES}")
        elif "standin" in module and lines > MAX_STANDIN_LINES:
            found.append(f"{module}: {lines} lines, over {MAX_STANDIN_LINES} for a stand-in module (one module per concern)")
    return found


# --- the project's own source -------------------------------------------------------------------


@pytest.fixture(scope="module")
def project_graph() -> ImportGraph:
    return build_graph(module_sources(ROOT))


def test_the_graph_covers_the_project(project_graph):
    """Guard against a builder that silently reads nothing: the known layers and edges are there."""
    for module in ("annotation.models", "annotation.services.pipeline", "annotation.selectors.scores", "annotation.web.hit_pages",
                   "annotation.automation.autoscore", "annotation.tasks", "hits.services", "config.urls"):
        assert module in project_graph.modules, module
    assert "annotation.services.pipeline" in project_graph.edges["annotation.tasks"]
    assert "annotation.selectors.scores" in project_graph.edges["annotation.automation.judges.comparison"]
    assert len(project_graph.modules) > 100


def test_no_import_cycles(project_graph):
    found = cycles(project_graph)
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_layers_point_one_way_and_no_private_names_cross_modules(project_graph):
    found = violations(project_graph)
    assert not found, "\n".join(found)


def test_no_module_of_hits_is_too_long():
    found = oversized(module_sources(ROOT))
    assert not found, "\n".join(found)


def test_the_seam_and_the_markets_are_where_the_rules_look(project_graph):
    """The seam rules are not empty words: the markets and the seam are there, and the core reaches them through it."""
    for module in ("hits.markets.registry", "hits.markets.base", "hits.mturk.market", "hits.prolific.market",
                   "hits.mturk.standin", "hits.mturk.standin.routes", "hits.prolific.standin",
                   "hits.prolific.standin.routes", "hits.prolific.standin.state"):
        assert module in project_graph.modules, module
    assert "hits.markets.registry" in project_graph.edges["hits.services"]
    assert "hits.markets.base" in project_graph.edges["hits.mturk.market"]


# --- the checker itself, on small made-up projects ----------------------------------------------


def _graph(files: dict[str, str]) -> ImportGraph:
    sources = {}
    for path, text in files.items():
        parts = path.removesuffix(".py").split("/")
        is_package = parts[-1] == "__init__"
        sources[".".join(parts[:-1] if is_package else parts)] = (text, is_package)
    return build_graph(sources)


def test_checker_finds_a_cycle_through_an_import_inside_a_function():
    graph = _graph({
        "annotation/__init__.py": "",
        "annotation/services/__init__.py": "",
        "annotation/services/a.py": "from annotation.services import b\n",
        "annotation/services/b.py": "def later():\n    from annotation.services.a import thing\n",
    })
    found = cycles(graph)
    assert len(found) == 1 and found[0][0] == "annotation.services.a"


def test_checker_resolves_relative_imports_and_import_module():
    graph = _graph({
        "hits/__init__.py": "",
        "hits/a.py": "from . import b\n",
        "hits/b.py": "import importlib\nimportlib.import_module('annotation.x')\n",
        "annotation/__init__.py": "",
        "hits/mturk/__init__.py": "",
        "hits/mturk/c.py": "from ..a import thing\nfrom . import __name__\n",
        "annotation/x.py": "from hits.a import thing\n",
    })
    assert "hits.b" in graph.edges["hits.a"]
    assert set(graph.edges["hits.mturk.c"]) == {"hits.a", "hits.mturk"}
    assert any("hits never imports annotation" in v for v in violations(graph))
    assert cycles(graph)  # hits.a -> hits.b -> annotation.x -> hits.a


def test_checker_refuses_core_to_automation_and_impure_scoring():
    graph = _graph({
        "annotation/__init__.py": "",
        "annotation/services/pipeline.py": "def f():\n    from annotation.automation.autoscore import run\n",
        "annotation/automation/autoscore.py": "",
        "annotation/scoring/alpha.py": "import numpy\nfrom django.db import models\n",
    })
    found = violations(graph)
    assert any("annotation.services.pipeline" in v and "protocol core" in v for v in found)
    assert any("annotation.scoring.alpha" in v and "django" in v for v in found)
    assert not any("numpy" in v for v in found)


def test_checker_finds_private_names_imported_or_reached():
    graph = _graph({
        "annotation/__init__.py": "",
        "annotation/a.py": "def _helper(): pass\n",
        "annotation/b.py": "from annotation.a import _helper\n",
        "annotation/c.py": "from annotation import a\na._helper()\n",
        "annotation/d.py": "from annotation.a import __doc__\nimport os\nos._exit\n",
    })
    assert sorted(graph.private) == ["annotation.b:1 imports annotation.a._helper", "annotation.c:2 reaches annotation.a._helper"]


def test_checker_keeps_the_markets_behind_their_seam():
    graph = _graph({
        "hits/__init__.py": "",
        "hits/services.py": "from hits.markets.registry import market_for\n",
        "hits/payments.py": "def f():\n    from hits.prolific import fees\n",
        "hits/urls.py": "import importlib\nimportlib.import_module('hits.mturk.views')\n",
        "hits/markets/__init__.py": "",
        "hits/markets/registry.py": "from importlib import import_module\nMODULES = ('hits.mturk.market',)\n"
                                    "def load():\n    return [import_module(m) for m in MODULES]\n",
        "hits/markets/money.py": "",
        "hits/markets/reconcile.py": "from hits.mturk.reconcile import compare\n",
        "hits/mturk/__init__.py": "",
        "hits/mturk/views.py": "",
        "hits/mturk/reconcile.py": "from hits.markets.money import CENT\n",
        "hits/prolific/__init__.py": "",
        "hits/prolific/fees.py": "",
        "hits/prolific/reconcile.py": "from hits.mturk.reconcile import compare\nfrom hits.markets import money\n",
    })
    found = violations(graph)
    assert sorted(found) == [
        "hits.markets.reconcile:1 imports hits.mturk.reconcile: the seam loads the markets by name "
        "(registry.MARKET_MODULES), never imports one",
        "hits.payments:2 imports hits.prolific.fees: the core of hits reaches a market only through the seam (hits.markets)",
        "hits.prolific.reconcile:1 imports hits.mturk.reconcile: a market never imports another market "
        "(what they share goes in hits.markets)",
        "hits.urls:2 imports hits.mturk.views: the core of hits reaches a market only through the seam (hits.markets)",
    ]


def test_checker_measures_modules_and_stand_ins():
    def sources(lines: dict[str, int]) -> dict[str, tuple[str, bool]]:
        return {name: ("x = 1\n" * n, False) for name, n in lines.items()}

    found = oversized(sources({
        "hits.services": 801, "hits.payments": 800, "hits.mturk.standin.state": 501, "hits.mturk.standin.routes": 500,
        "hits.prolific.standin.state": 501, "hits.prolific.standin.routes": 500, "annotation.big": 5000,
    }))
    assert found == [
        "hits.mturk.standin.state: 501 lines, over 500 for a stand-in module (one module per concern)",
        "hits.prolific.standin.state: 501 lines, over 500 for a stand-in module (one module per concern)",
        "hits.services: 801 lines, over 800",
    ]
