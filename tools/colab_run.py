"""Run the notebooks the way Colab runs them: from the installed wheel, under Colab's versions.

    python tools/colab_run.py --python .venv-colab/bin/python --wheel _build/wheel/scaling_lib-….whl \
        [--jobs 2] [NOTEBOOK ...]

What it checks, in order (each step exits non-zero with a message if it fails):

1. ``scaling_lib`` in the Colab environment is the installed wheel (non-editable, ``--no-deps``),
   not the source tree: it is imported from a scratch directory and its ``__file__`` must lie in
   that environment's site-packages.
2. Every module of the installed package imports there (pkgutil walk), under requirements-colab.txt
   (JAX 0.7.2, ipywidgets 7.7.1, numpy 2.1, …).
3. The notebooks (default: every chapter, exercise and appendix notebook) are copied to a scratch
   directory where the source tree is not importable, and run with nbval in lax mode (errors fail;
   outputs are not compared: the versions differ on purpose). The kernel starts with a stand-in
   ``google.colab`` module imported, so each notebook's hidden setup cell takes its Colab branch
   and really runs ``pip install --no-deps`` on the wheel (``SCALING_LIB_SPEC``), as a reader's
   Colab session does from the repository.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("chapters", "exercises", "appendix")

_IMPORT_ALL = r"""
import importlib, pkgutil, sys, sysconfig
import scaling_lib
site = sysconfig.get_paths()["purelib"]
if not scaling_lib.__file__.startswith(site):
    sys.exit(f"scaling_lib comes from {scaling_lib.__file__}, not from the installed wheel in {site}")
names = [m.name for m in pkgutil.walk_packages(scaling_lib.__path__, "scaling_lib.")
         if not m.name.endswith(".__main__")]  # a __main__ runs its command line when imported
bad = []
for n in names:
    try:
        importlib.import_module(n)
    except Exception as e:  # report every module that fails, not only the first
        bad.append(f"{n}: {type(e).__name__}: {e}")
if bad:
    sys.exit("modules that do not import from the installed wheel:\n  " + "\n  ".join(bad))
print(f"installed wheel OK: {len(names)} modules import from {site}")
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", required=True, help="python of the Colab-version environment")
    ap.add_argument("--wheel", required=True, help="the built scaling_lib wheel")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("notebooks", nargs="*", help="notebook paths relative to the repository")
    a = ap.parse_args(argv)
    wheel = Path(a.wheel).resolve()
    if not wheel.is_file() or wheel.suffix != ".whl":
        sys.exit(f"--wheel must be a built .whl file, got {a.wheel}")
    py = str(Path(a.python).absolute())
    notebooks = a.notebooks or [str(p.relative_to(ROOT)) for k in KINDS
                                for p in sorted((ROOT / k).glob("*.ipynb"))]
    for nb in notebooks:
        if not (ROOT / nb).is_file():
            sys.exit(f"no notebook {nb}")

    with tempfile.TemporaryDirectory(prefix="colab-run-") as tmp:
        tmp = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
        env["PYTHONHASHSEED"] = "0"
        # 1 + 2: the installed package, imported away from the source tree
        r = subprocess.run([py, "-c", _IMPORT_ALL], cwd=tmp, env=env)
        if r.returncode:
            return r.returncode
        # 3: the notebooks, copied with their folders (relative links and data stay valid)
        book = tmp / "book"
        for kind in KINDS:
            shutil.copytree(ROOT / kind, book / kind, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        fake = tmp / "fakecolab"
        (fake / "google" / "colab").mkdir(parents=True)
        (fake / "google" / "__init__.py").write_text("")
        (fake / "google" / "colab" / "__init__.py").write_text(
            '"""Stand-in for Colab\'s google.colab: makes the setup cell take its Colab branch."""\n')
        # JAX's debugger does `from google.colab import output` when google.colab is loaded (Colab's
        # real module has it); the stand-in only needs the name to exist
        (fake / "google" / "colab" / "output.py").write_text(
            '"""Stand-in for google.colab.output (imported by JAX in Colab; not called here)."""\n'
            "def eval_js(*a, **k):\n    raise NotImplementedError('stand-in google.colab')\n"
            "def register_callback(*a, **k):\n    raise NotImplementedError('stand-in google.colab')\n")
        (fake / "sitecustomize.py").write_text("import google.colab  # noqa: F401  (Colab imports it at start)\n")
        env["PYTHONPATH"] = str(fake)
        env["SCALING_LIB_SPEC"] = str(wheel)
        cmd = [py, "-m", "pytest", "-q", "-n", str(a.jobs), "--dist", "loadscope", "-p", "nbval",
               "--nbval-lax", "--nbval-current-env", "--nbval-cell-timeout=180", "-p", "no:cacheprovider",
               "--rootdir", str(book), *notebooks]
        print("colab run:", len(notebooks), "notebooks from", wheel.name, flush=True)
        return subprocess.run(cmd, cwd=book, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
