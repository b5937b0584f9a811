"""The package's shape: imports go down the layers of docs/design-notes.md ("Map"), no import
cycles (lazy and type-only imports included) and a small top level."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "quantcheck"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PKG.rglob("*.py")}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module a dotted import name refers to (the longest existing prefix)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _all_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node, `if TYPE_CHECKING:` blocks included (a type-only import is a dependency of
    the code's meaning even if it never runs)."""
    return list(ast.walk(tree))


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node except those under `if TYPE_CHECKING:` (type-only imports never run)."""
    out: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        for child in ast.iter_child_nodes(node):
            if (
                isinstance(child, ast.If)
                and isinstance(child.test, ast.Name)
                and child.test.id == "TYPE_CHECKING"
            ):
                todo.extend(child.orelse)
                continue
            todo.append(child)
    return out


def import_graph(*, type_only: bool = False) -> dict[str, set[str]]:
    """module -> modules it imports anywhere in its body (top level and inside functions; with
    `type_only`, also under `if TYPE_CHECKING:`, which never runs)."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    nodes = _all_nodes if type_only else _runtime_nodes
    for mod, path in modules.items():
        is_pkg = path.name == "__init__.py"
        for node in nodes(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = mod.split(".")
                    anchor = anchor[: len(anchor) - node.level + (1 if is_pkg else 0)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{a.name}" for a in node.names]
            for t in targets:
                if t == "quantcheck.__version__":  # the version string, not the public API
                    t = "quantcheck._version"
                if not t.startswith("quantcheck"):
                    continue
                dep = _resolve(t, modules)
                if dep and dep != mod:
                    graph[mod].add(dep)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
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
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert found == [], f"import cycles (lazy imports count too): {found}"


def test_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_top_level_stays_small() -> None:
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top) <= 12, top


# --------------------------------------------------------------------------- layers

#: The layers bottom to top (docs/design-notes.md, "Map"): a module imports only its own
#: layer and those below it, type-only imports included.
LAYERS = ("base", "vocabulary", "bytes", "checkpoint", "rules", "report", "render", "commands")
#: A package's layer (second name of the module: quantcheck.<package>...).
PACKAGE_LAYER = {
    "formats": "vocabulary",  # the format table: data
    "runtimes": "vocabulary",  # runtime records, releases, effects tables: data
    "gpus": "vocabulary",  # GPU classes and the --gpu SPEC grammar: data
    "families": "vocabulary",  # the model family table, its layouts and the name-only detection
    "io": "bytes",
    "model": "checkpoint",
    "numeric": "checkpoint",  # codecs: the numbers of a layer's bytes
    "rules": "rules",  # the checks, per family and per runtime (rules/<runtime>/)
    "compat": "rules",  # the public sglang drop-in over rules/sglang/ (its loader reproduced)
    "explain": "rules",  # message patterns (each runtime's live in rules/<runtime>/)
    "fix": "report",
    "convert": "report",
    "render": "render",
    "cli": "commands",
    "integrations": "commands",  # plug-ins inside the runtimes (sglang plugin, preflight)
}
#: Modules whose layer is not their package's.
MODULE_LAYER = {
    "quantcheck": "commands",  # the public API: load, check
    "quantcheck.__main__": "commands",
    "quantcheck._version": "base",
    "quantcheck._record": "base",
    "quantcheck.errors": "base",
    "quantcheck.textsafe": "base",
    "quantcheck.progress": "base",
    # the words every layer speaks: a diagnostic, its rule record and code constant
    "quantcheck.diagnostics": "vocabulary",
    "quantcheck.rules": "vocabulary",
    "quantcheck.rules.levels": "vocabulary",
    "quantcheck.rules.rule": "vocabulary",
    "quantcheck.rules.codes": "vocabulary",
    "quantcheck.rules.registry": "vocabulary",
    "quantcheck.rules.upstream": "vocabulary",
    "quantcheck.rules.effect_variants": "vocabulary",  # data a Rule record reads
    "quantcheck.formats.dims": "checkpoint",  # a layer's dims, from a model Layer
    "quantcheck.numeric.compare": "report",  # `compare`: two checkpoints side by side
    "quantcheck.numeric.compare_rows": "report",
    "quantcheck.rules.baseline": "report",  # filters a finished report
    "quantcheck.results": "report",
    "quantcheck.checking": "report",
    "quantcheck.many": "report",
    "quantcheck.local_pool": "report",
    "quantcheck.explain.lookup": "commands",  # the `explain` command's answer
}
#: Imports that still go up, each to be removed. Empty since issue 23 item 2 (`io/` never
#: calls `model/`); it may only shrink: an entry that no longer exists fails too.
KNOWN_UPWARD: set[tuple[str, str]] = set()


def layer_of(module: str) -> str:
    """The layer of a module: MODULE_LAYER, a rule folder's catalog (data: vocabulary), or
    its package's."""
    if module in MODULE_LAYER:
        return MODULE_LAYER[module]
    parts = module.split(".")
    if parts[1] == "rules" and parts[-1] == "catalog":
        return "vocabulary"
    return PACKAGE_LAYER[parts[1]]


def upward(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importer, imported) pairs where the imported module sits in a higher layer."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    return {
        (m, d) for m, deps in graph.items() for d in deps if rank[layer_of(d)] > rank[layer_of(m)]
    }


def test_every_module_has_a_layer() -> None:
    for module in _modules():
        assert layer_of(module) in LAYERS, module


def test_imports_go_down_the_layers() -> None:
    found = upward(import_graph(type_only=True))
    assert found - KNOWN_UPWARD == set(), f"imports up the layers: {sorted(found - KNOWN_UPWARD)}"
    assert KNOWN_UPWARD - found == set(), f"fixed, drop from KNOWN_UPWARD: {KNOWN_UPWARD - found}"


def test_the_model_never_asks_the_rules() -> None:
    """model/ may use the rule vocabulary (codes, records) but never a check or the gate."""
    graph = import_graph(type_only=True)
    asks = {
        (m, d)
        for m, deps in graph.items()
        if m.startswith("quantcheck.model")
        for d in deps
        if d.startswith("quantcheck.rules") and layer_of(d) != "vocabulary"
    }
    assert asks == set(), asks


def test_layer_check_finds_an_upward_import() -> None:
    graph = {"quantcheck.model.layer_data": {"quantcheck.rules.numeric.gate"}}
    assert upward(graph) == {("quantcheck.model.layer_data", "quantcheck.rules.numeric.gate")}
    assert upward({"quantcheck.rules.numeric.gate": {"quantcheck.model.layers"}}) == set()
