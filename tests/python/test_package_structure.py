"""The shape of the Python code, checked from its source (issue 46).

- No import cycle inside the `smelt` package: a test walks every module's
  imports (those under `if TYPE_CHECKING:` do not run and do not count).
- No import inside a function, except the few listed in LAZY_IMPORTS, each
  with its reason (an optional dependency, or a part of torch that costs
  most of a second to import and only one mode uses).
- No module reads a private name (`_x`) that another smelt module defines:
  state shared between modules is declared (ExecutionState, FxFusion).
- No module builds or parses the kernel's symbol names ("T0.size[1]",
  "threadIdx.x"): fusion/symbols.h owns them, and Python reaches them through
  _C (size_symbol, is_size_symbol, IntExpr.symbols).
- Every Python file of the repository is at most MAX_FILE_LINES lines, and
  every function at most MAX_FUNCTION_LINES, unless the first line of its
  body is a comment `# long: <reason>`.

Each checker is also run on a small made-up package, so that a checker that
stopped finding anything would fail too. Nothing here imports smelt: the
checks read the source, and need no build.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = REPO_ROOT / "python" / "smelt"
SOURCE_DIRS = ("python", "tests", "benchmarks", "scripts", "examples")

# Compiled modules of the package (no .py source).
EXTENSION_MODULES = {"smelt._C"}

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 120

# (importing module, imported module) -> why it is imported inside a function.
LAZY_IMPORTS = {
    ("smelt.kernel_quality", "triton"):
        "optional dependency: cuobjdump ships in the triton wheel, used when installed",
    ("smelt", "smelt.torchscript"):
        "optional, deprecated frontend: importing it costs every `import smelt` 0.3 s "
        "(torch.fx's symbolic shapes)",
    ("smelt.backend.cudagraphs", "torch._inductor.cudagraph_trees"):
        "0.8 s of Inductor imports that only mode='reduce-overhead' needs",
    ("smelt.backend.cudagraphs", "torch._inductor.compile_fx"):
        "0.8 s of Inductor imports that only mode='reduce-overhead' needs",
}


@dataclass(frozen=True)
class Import:
    module: str        # the module whose source holds the import
    target: str        # the module imported
    line: int
    in_function: bool
    type_checking: bool  # under `if TYPE_CHECKING:`, never run


def package_sources(package_dir: Path, package: str = "smelt") -> Dict[str, str]:
    """Module name -> source, for every .py file of the package."""
    sources = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        sources[".".join([package] + parts)] = path.read_text()
    return sources


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base[:len(base) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, source: str, modules: Set[str], is_package: bool) -> List[Import]:
    """Every import statement of `module`: `from a import b` imports a.b
    when that is a module of the package, else a."""
    found: List[Import] = []

    def visit(node: ast.AST, in_function: bool, type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend(Import(module, a.name, child.lineno, in_function, type_checking)
                             for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = _resolve(module, is_package, child)
                for alias in child.names:
                    target = f"{base}.{alias.name}"
                    found.append(Import(module, target if target in modules else base,
                                        child.lineno, in_function, type_checking))
            visit(child, in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
                type_checking or (isinstance(child, ast.If) and _is_type_checking(child)))
    visit(ast.parse(source), False, False)
    return found


def package_imports(sources: Dict[str, str]) -> List[Import]:
    modules = set(sources) | EXTENSION_MODULES
    packages = {m for m in modules if any(o.startswith(m + ".") for o in modules)}
    return [i for m, src in sources.items() for i in imports_of(m, src, modules, m in packages)]


def import_cycles(sources: Dict[str, str]) -> List[List[str]]:
    """The strongly connected components of more than one module (or a module
    importing itself) of the package's run-time import graph."""
    graph: Dict[str, Set[str]] = {m: set() for m in sources}
    for imp in package_imports(sources):
        if imp.target in sources and not imp.type_checking:
            graph[imp.module].add(imp.target)
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    cycles: List[List[str]] = []

    def connect(m: str) -> None:  # Tarjan's algorithm
        index[m] = low[m] = len(index)
        stack.append(m)
        for n in sorted(graph[m]):
            if n not in index:
                connect(n)
                low[m] = min(low[m], low[n])
            elif n in stack:
                low[m] = min(low[m], index[n])
        if low[m] == index[m]:
            component = []
            while True:
                n = stack.pop()
                component.append(n)
                if n == m:
                    break
            if len(component) > 1 or m in graph[m]:
                cycles.append(sorted(component))
    for m in sorted(graph):
        if m not in index:
            connect(m)
    return cycles


def function_level_imports(sources: Dict[str, str]) -> List[Import]:
    """Imports inside functions that LAZY_IMPORTS does not list."""
    return [i for i in package_imports(sources) if i.in_function and not any(
        i.module == module and (i.target == lazy or i.target.startswith(lazy + "."))
        for module, lazy in LAZY_IMPORTS)]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined_privates(tree: ast.AST) -> Set[str]:
    """Private names a module defines: functions, classes, attributes it
    assigns (self._x = ...), class and module variables, slots."""
    names: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets):
            names.update(c.value for c in ast.walk(node.value)
                         if isinstance(c, ast.Constant) and isinstance(c.value, str))
    return {n for n in names if _private(n)}


def _root_name(node: ast.AST) -> str:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def _external_names(tree: ast.Module, package: str) -> Set[str]:
    """Module-level names bound to other libraries (torch, torch.ops.aten as
    `aten`): their attributes are theirs, whatever smelt names its own."""
    names: Set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names
                         if not a.name.startswith(package))
        elif isinstance(node, ast.ImportFrom) and not node.level and \
                not (node.module or "").startswith(package):
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Assign) and _root_name(node.value) in names:
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def private_reads(sources: Dict[str, str]) -> List[Tuple[str, int, str]]:
    """(module, line, name) for each use of a private name that another
    module of the package defines and this one does not (private modules of
    the package, such as smelt._C or smelt._ops, are not fields; nor are
    attributes of other libraries' objects named at module level)."""
    trees = {m: ast.parse(src) for m, src in sources.items()}
    defined = {m: _defined_privates(t) for m, t in trees.items()}
    module_names = {m.rsplit(".", 1)[-1] for m in set(sources) | EXTENSION_MODULES}
    package = next(iter(sources)).split(".")[0]
    found = []
    for m, tree in trees.items():
        others = set().union(*(d for o, d in defined.items() if o != m)) - module_names
        external = _external_names(tree, package)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                if _root_name(node) in external:
                    continue
                name = node.attr
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("smelt"):
                found.extend((m, node.lineno, a.name) for a in node.names
                             if _private(a.name) and a.name not in module_names)
                continue
            else:
                continue
            if _private(name) and name in others and name not in defined[m]:
                found.append((m, node.lineno, name))
    return found


def python_files() -> Iterator[Path]:
    for top in SOURCE_DIRS:
        for path in sorted((REPO_ROOT / top).rglob("*.py")):
            if not any(part.startswith(("build", ".")) for part in path.relative_to(REPO_ROOT).parts):
                yield path


def long_functions(path: Path, source: str) -> List[str]:
    """Functions over MAX_FUNCTION_LINES whose body does not start with a
    `# long: <reason>` comment."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            first_body_line = lines[node.body[0].lineno - 2].strip() if node.body else ""
            if length > MAX_FUNCTION_LINES and not first_body_line.startswith("# long:"):
                found.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno} {node.name} "
                             f"({length} lines)")
    return found


SYMBOL_SPELLING = re.compile(r"\\?\.(size|stride)\\?\[|(threadIdx|blockIdx|blockDim|gridDim)\\?\.")
# An f-string (formatted values as {}) that makes a name from its parts.
SYMBOL_BUILDING = re.compile(r"\{\}\.(size|stride)\[|(threadIdx|blockIdx|blockDim|gridDim)\.\{\}")


def spelled_symbols(sources: Dict[str, str]) -> List[Tuple[str, int, str]]:
    """(module, line, text) of each f-string that builds a symbol name from
    parts and each regular expression that parses one (a pattern passed to
    a function of `re`). Plain strings (messages, docstrings) may quote one."""
    found: List[Tuple[str, int, str]] = []
    for module, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.JoinedStr):
                text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
                if SYMBOL_BUILDING.search(text):
                    found.append((module, node.lineno, text))
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
                  isinstance(node.func.value, ast.Name) and node.func.value.id == "re"):
                for arg in node.args[:1]:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and \
                            SYMBOL_SPELLING.search(arg.value):
                        found.append((module, node.lineno, arg.value))
    return found


# ---- the package ----

def test_no_import_cycle_inside_smelt():
    cycles = import_cycles(package_sources(PACKAGE_DIR))
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_function_level_import_except_optional_dependencies():
    found = function_level_imports(package_sources(PACKAGE_DIR))
    assert not found, "imports inside functions (move them to the top, or list them in " \
        "LAZY_IMPORTS with a reason):\n" + "\n".join(
            f"{i.module}:{i.line} imports {i.target}" for i in found)


def test_every_listed_lazy_import_exists():
    """An entry of LAZY_IMPORTS that no longer matches an import is stale."""
    imports = package_imports(package_sources(PACKAGE_DIR))
    stale = [key for key in LAZY_IMPORTS if not any(
        i.in_function and i.module == key[0] and i.target.startswith(key[1]) for i in imports)]
    assert not stale, f"LAZY_IMPORTS entries matching no import: {stale}"


def test_no_module_reads_another_modules_private_fields():
    found = private_reads(package_sources(PACKAGE_DIR))
    assert not found, "private names of other modules:\n" + "\n".join(
        f"{m}:{line} {name}" for m, line, name in found)


def test_no_module_spells_the_kernels_symbol_names():
    found = spelled_symbols(package_sources(PACKAGE_DIR))
    assert not found, "symbol names built or parsed outside fusion/symbols.h (use " \
        "_C.size_symbol, _C.is_size_symbol, IntExpr.symbols):\n" + "\n".join(
            f"{m}:{line} {text!r}" for m, line, text in found)


def test_files_and_functions_are_short():
    long_files, functions = [], []
    for path in python_files():
        source = path.read_text()
        count = len(source.splitlines())
        if count > MAX_FILE_LINES:
            long_files.append(f"{path.relative_to(REPO_ROOT)} ({count} lines)")
        functions += long_functions(path, source)
    assert not long_files, f"files over {MAX_FILE_LINES} lines: {long_files}"
    assert not functions, f"functions over {MAX_FUNCTION_LINES} lines: {functions}"


def test_the_package_graph_runs_one_way_through_execution():
    """The definition uses the execution, which uses segmentation; neither
    of the lower two knows the definition."""
    imports = {(i.module, i.target) for i in package_imports(package_sources(PACKAGE_DIR))}
    assert ("smelt.fusion_definition", "smelt._execution") in imports
    assert ("smelt._execution", "smelt.segmentation") in imports
    for lower in ("smelt._execution", "smelt.segmentation"):
        assert (lower, "smelt.fusion_definition") not in imports, lower


# ---- the checkers find what they look for ----

MADE_UP = {
    "pkg": "from pkg import a\n",
    "pkg.a": "from pkg.b import helper\nclass A:\n    def __init__(self):\n"
             "        self._state = 1\n",
    "pkg.b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n"
             "def helper(x):\n    import pkg.c\n    return x._state\n",
    "pkg.c": "from pkg.a import A\n",
}


def test_the_checkers_find_a_cycle_a_lazy_import_and_a_private_read():
    assert import_cycles(MADE_UP) == [["pkg.a", "pkg.b", "pkg.c"]]
    assert [(i.module, i.target) for i in function_level_imports(MADE_UP)] == [("pkg.b", "pkg.c")]
    assert private_reads(MADE_UP) == [("pkg.b", 6, "_state")]
    acyclic = dict(MADE_UP, **{"pkg.c": "import os\n"})
    assert import_cycles(acyclic) == []


def test_the_symbol_check_finds_a_built_name_and_a_parsing_pattern():
    made_up = {
        "pkg.a": 'import re\nSIZE = re.compile(r"T(\\d+)\\.size\\[(\\d+)\\]")\n',
        "pkg.b": 'def name(t, d):\n    return f"{t}.stride[{d}]"\n',
        "pkg.c": 'def tid():\n    return f"threadIdx.{0}"\n',
        "pkg.d": 'def fail(entry):\n    raise ValueError(f"{entry!r} is not like \'T0.size[1]\'")\n',
    }
    # pkg.d quotes a name in a message: it builds none.
    assert [(m, line) for m, line, _ in spelled_symbols(made_up)] == [
        ("pkg.a", 2), ("pkg.b", 2), ("pkg.c", 2)]


def test_the_length_check_counts_lines_and_reads_the_reason(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    path = REPO_ROOT / "made_up.py"  # only its name is shown
    assert long_functions(path, f"def f():\n{body}\n") == [f"made_up.py:1 f ({MAX_FUNCTION_LINES + 1} lines)"]
    assert long_functions(path, f"def f():\n    # long: a table\n{body}\n") == []
