"""The package's layout holds: its imports point one way (no module imports, even inside a function, one that imports
it back), the core imports no wing, each wing imports only the layers below it, no module is over 800 lines, and
`import gemm_lab` loads no plotting or widget library."""
import ast
import graphlib
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gemm_lab"
LAYERS = ("core", "models", "precision", "pages", "lab")  # bottom to top: each may import those before it
MAX_LINES = 800
CORE_LINES = 3600  # 3,500 until 2026-12-01, when the checks of every public call's input came in


def modules(package: Path) -> dict[str, Path]:
    """Each module of the package by dotted name below it ('timing', 'pages.tables'; a package's own is its name)."""
    out = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__"] = path
    return out


def import_graph(package: Path) -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports anywhere (module level, functions, TYPE_CHECKING
    blocks); `from . import x` of a name that is no module is an import of the package holding it."""
    known = modules(package)
    graph = {}
    for name, path in known.items():
        here = name.split(".") if path.name == "__init__.py" and name != "__init__" else name.split(".")[:-1]
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                imported |= {_module(a.name.split(".")[1:], known) for a in node.names
                             if a.name.split(".")[0] == package.name}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[:len(here) - (node.level - 1)]
                elif (node.module or "").split(".")[0] == package.name:
                    base = []
                else:
                    continue
                parts = (node.module or "").split(".")[0 if node.level else 1:]
                parts = [p for p in parts if p]
                imported |= {_module([*base, *parts, a.name], known) for a in node.names}
        graph[name] = imported - {name}
    return graph


def _module(parts: list[str], known: dict[str, Path]) -> str:
    """The longest module named by a prefix of `parts` (a name imported from a module is that module)."""
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in known:
            return ".".join(parts[:end])
    return "__init__"


def layer(module: str) -> str:
    first = module.split(".")[0]
    return first if first in LAYERS else "core"


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as err:
        return list(reversed(err.args[1]))  # graphlib lists it against the direction of the imports
    return None


def test_no_module_imports_itself_back():
    found = cycle(import_graph(PACKAGE))
    assert found is None, "import cycle: " + " -> ".join(found)


def test_each_layer_imports_only_the_layers_below_it():
    """The core (the package's own modules) imports no wing, and a wing imports its own layer and those below it;
    `__init__` is the public face, which may gather from all of them."""
    wrong = [f"{m} ({layer(m)}) imports {d} ({layer(d)})" for m, deps in import_graph(PACKAGE).items()
             for d in deps if m != "__init__" and d != "__init__" and not d.endswith("__init__")
             and LAYERS.index(layer(d)) > LAYERS.index(layer(m))]
    assert not wrong, "\n".join(wrong)


def test_no_module_is_over_800_lines_and_the_core_is_small():
    lengths = {name: len(path.read_text().splitlines()) for name, path in modules(PACKAGE).items()}
    long = {name: n for name, n in lengths.items() if n > MAX_LINES}
    assert not long, long
    core = sum(n for name, n in lengths.items() if layer(name) == "core" and name not in LAYERS)
    assert core <= CORE_LINES, f"the core has {core} lines, over {CORE_LINES}"


def test_the_spec_model_is_at_the_bottom_and_the_device_knows_no_record_format():
    graph = import_graph(PACKAGE)
    assert graph["spec"] == set() and graph["families"] == {"spec"} and graph["catalog"] == {"families", "spec"}
    assert graph["device"] <= {"catalog", "folders"} and graph["folders"] <= {"catalog"}


def test_importing_the_package_loads_no_plotting_or_widget_library():
    """`import gemm_lab` stays fast (a chapter's first cell, every test worker): matplotlib, Altair and ipywidgets
    load only with the page helpers that draw."""
    code = "import sys, gemm_lab; print(sorted(m for m in ('matplotlib', 'altair', 'ipywidgets') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.parametrize("local", [
    "def f():\n    from . import a\n",
    "def f():\n    from .a import x\n",
    "def f():\n    import pkg.a\n",
    "def f():\n    from pkg import a\n",
])
def test_an_import_inside_a_function_counts(tmp_path, local):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text(local)
    assert import_graph(package)["b"] == {"a"}
    assert cycle(import_graph(package)) in (["a", "b", "a"], ["b", "a", "b"])


def test_a_wing_that_imports_a_higher_wing_is_caught(tmp_path):
    package = tmp_path / "pkg"
    for sub in ("models", "pages"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "core.py").write_text("def f():\n    from .models import m\n")
    (package / "models" / "m.py").write_text("from ..pages.p import x\n")
    (package / "pages" / "p.py").write_text("from .. import core\nx = 1\n")
    graph = import_graph(package)
    assert graph["core"] == {"models.m"} and graph["models.m"] == {"pages.p"} and graph["pages.p"] == {"core"}
    assert [layer(m) for m in ("core", "models.m", "pages.p")] == ["core", "models", "pages"]


def test_a_name_from_the_package_itself_is_an_import_of_init(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from .a import f\n")
    (package / "a.py").write_text("def f():\n    from . import g\n")
    assert cycle(import_graph(package)) in (["__init__", "a", "__init__"], ["a", "__init__", "a"])


def test_no_name_the_package_exports_hides_one_of_its_modules():
    """`gemm_lab.cublas` was once both a module and the `timing.cublas` function that `__init__` exports: whichever
    was bound last won, so `from . import cublas` gave some modules a function (a crash only on a GPU)."""
    import gemm_lab

    top = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert not top & set(gemm_lab.__all__), top & set(gemm_lab.__all__)
