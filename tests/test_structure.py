"""The package's imports point one way: no module imports, even inside a function, one that imports it back."""
import ast
import graphlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gemm_lab"


def import_graph(package: Path) -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports anywhere (module level, functions, TYPE_CHECKING
    blocks); `from . import x` of a name that is no module is an import of `__init__`."""
    modules = {p.stem for p in package.glob("*.py")}
    graph = {}
    for path in package.glob("*.py"):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                imported |= {_module(a.name.split(".")[1:], modules) for a in node.names
                             if a.name.split(".")[0] == package.name}
            elif isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == package.name):
                parts = (node.module or "").split(".")[0 if node.level else 1:]
                if parts and parts[0]:
                    imported.add(_module(parts, modules))
                else:  # from . import a, b
                    imported |= {_module([a.name], modules) for a in node.names}
        graph[path.stem] = imported - {path.stem}
    return graph


def _module(parts: list[str], modules: set[str]) -> str:
    return parts[0] if parts and parts[0] in modules else "__init__"


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


def test_the_catalog_is_at_the_bottom_and_the_device_knows_no_record_format():
    graph = import_graph(PACKAGE)
    assert graph["catalog"] == set()
    assert graph["device"] <= {"catalog", "folders"} and graph["folders"] <= {"catalog"}


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

    modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert not modules & set(gemm_lab.__all__), modules & set(gemm_lab.__all__)
