"""Issue 16 item 5: packages by audience, imports only point down, no cycles.

Layers, bottom to top: the numpy core (catalogue, physics, model arithmetic, strategies) →
the JAX side (``scaling_lib/xla/``) → presentation (plots, widgets, interactive figures,
diagrams, the glue helper) → grading. The test parses every import statement of every module,
including the ones inside functions, so a lazy import cannot hide an arrow pointing up.
"""
import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "scaling_lib"

CORE = {"units", "errors", "hooks", "hardware", "topology", "collectives", "sharding", "memory",
        "pipeline", "strategy", "step", "transformer", "models", "roofline", "chip_internals",
        "inference", "gpu_parallel", "layouts", "hlo", "training", "serving",
        "data", "efficiency", "validation"}
#: top-level names kept for notebooks: thin aliases of the moved JAX-side modules
JAX_SHIMS = {"devices", "jax_compat", "jax_model", "kv_decode", "measure", "profiling"}
PRESENTATION = {"plots", "interactive", "diagrams", "book", "_mystnb", "widgets"}
GRADING = {"grading", "_grading_extract", "_grading_kernel", "exercises"}
FORBIDDEN_IN_CORE = ("jax", "jaxlib", "matplotlib", "plotly", "ipywidgets", "IPython", "nbclient",
                     "nbformat")


def _layer(mod: str) -> str:
    """'core' | 'xla' | 'presentation' | 'grading' | 'shim' | 'package' for scaling_lib.<mod>."""
    parts = mod.split(".")
    head = parts[0]
    if head == "xla":
        return "xla"
    if head in CORE:
        return "core"
    if head in JAX_SHIMS:
        return "shim"
    if head in PRESENTATION:
        return "presentation"
    if head in GRADING:
        return "grading"
    if head == "__init__":
        return "package"
    raise AssertionError(f"scaling_lib.{mod} is in no layer: add it to test_layers.py")


def _modules():
    for p in sorted(ROOT.rglob("*.py")):
        rel = p.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts)
        if name.endswith(".__init__"):
            name = name[: -len(".__init__")]
        yield name, p


def _imports(name: str, path: pathlib.Path):
    """(target module inside scaling_lib or None, external top-level name or None) per import."""
    pkg = name.split(".")[:-1] if not path.name == "__init__.py" else name.split(".")
    if name == "__init__":
        pkg = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("scaling_lib."):
                    yield a.name[len("scaling_lib."):], None
                else:
                    yield None, a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if (node.module or "").startswith("scaling_lib"):
                    base = node.module[len("scaling_lib"):].lstrip(".")
                    for a in node.names:
                        yield (f"{base}.{a.name}" if base else a.name), None
                else:
                    yield None, (node.module or "").split(".")[0]
                continue
            up = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
            base = ".".join(up + ([node.module] if node.module else []))
            if node.module:
                yield base, None
            else:
                for a in node.names:
                    yield (f"{base}.{a.name}" if base else a.name), None


def _edges():
    out = {}
    for name, path in _modules():
        if name == "":
            name = "__init__"
        tgt = set()
        ext = set()
        for t, e in _imports(name, path):
            if t:
                tgt.add(t)
            if e:
                ext.add(e)
        out[name] = (tgt, ext)
    return out


ORDER = {"core": 0, "xla": 1, "shim": 1, "presentation": 2, "grading": 3, "package": 4}


def test_every_module_has_a_layer_and_imports_point_down():
    bad = []
    for mod, (targets, ext) in _edges().items():
        lay = _layer(mod)
        for t in targets:
            tl = _layer(t)
            if tl == "shim":
                tl = "xla"
            if lay == "shim":
                continue
            if ORDER[tl] > ORDER[lay] and lay != "package":
                bad.append(f"{mod} ({lay}) imports {t} ({tl})")
        if lay == "core":
            for e in ext:
                if e in FORBIDDEN_IN_CORE:
                    bad.append(f"{mod} (core) imports {e}")
    assert not bad, "imports pointing up:\n" + "\n".join(sorted(bad))


def test_core_has_no_import_cycles():
    edges = {m: {t.split(".")[0] for t in tg if _layer(t) == "core"}
             for m, (tg, _) in _edges().items() if _layer(m) == "core"}
    seen, stack, cycles = set(), [], []

    def visit(m):
        if m in stack:
            cycles.append(stack[stack.index(m):] + [m])
            return
        if m in seen:
            return
        seen.add(m)
        stack.append(m)
        for t in sorted(edges.get(m, ())):
            if t != m:
                visit(t)
        stack.pop()

    for m in sorted(edges):
        visit(m)
    assert not cycles, f"import cycles in the core: {cycles}"


def test_jax_shims_are_thin_aliases():
    for mod in sorted(JAX_SHIMS):
        src = (ROOT / f"{mod}.py").read_text(encoding="utf-8")
        code = [ln for ln in src.splitlines() if ln.strip() and not ln.strip().startswith("#")
                and not ln.startswith('"""') and '"""' not in ln]
        assert len(code) <= 4, f"scaling_lib/{mod}.py is not a thin alias: {code}"
        import importlib
        a = importlib.import_module(f"scaling_lib.{mod}")
        b = importlib.import_module(f"scaling_lib.xla.{mod}")
        assert a is b, f"scaling_lib.{mod} must be the same module object as scaling_lib.xla.{mod}"


def test_core_imports_without_jax_or_presentation():
    code = ("import sys; import scaling_lib.step, scaling_lib.layouts, scaling_lib.training, "
            "scaling_lib.inference, scaling_lib.gpu_parallel, scaling_lib.sharding; "
            "bad=[m for m in ('jax','matplotlib','ipywidgets','plotly','scaling_lib.xla',"
            "'scaling_lib.plots','scaling_lib.widgets') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]", f"importing the core pulled in {out}"


def test_hooks_say_which_layer_to_import():
    code = ("import scaling_lib.hardware as h\n"
            "try:\n    h.detect()\nexcept RuntimeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "scaling_lib.xla" in out
