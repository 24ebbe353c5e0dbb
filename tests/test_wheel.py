"""The package Colab installs is the wheel pip builds from pyproject.toml (non-editable): it must hold
every module of the source tree, and every module must import from it with the source tree out of
reach. (Issue: a hand-written package list once left scaling_lib.widgets out of the wheel, and 11
chapters failed in Colab while every local test, using `pip install -e .`, passed.)"""
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

IMPORT_ALL = r"""
import importlib, pkgutil, sys
import scaling_lib
assert scaling_lib.__file__.startswith(sys.argv[1]), scaling_lib.__file__
names = [m.name for m in pkgutil.walk_packages(scaling_lib.__path__, "scaling_lib.")
         if not m.name.endswith(".__main__")]  # a __main__ runs its command line when imported
for n in names:
    mod = importlib.import_module(n)
    assert mod.__file__.startswith(sys.argv[1]), (n, mod.__file__)
print(len(names))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "scaling_lib", src / "scaling_lib",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                        "-w", str(tmp / "dist"), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    (whl,) = (tmp / "dist").glob("scaling_lib-*.whl")
    return whl


def test_wheel_holds_every_module_and_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    want = {str(p.relative_to(ROOT)) for p in (ROOT / "scaling_lib").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    assert want, "no sources found"
    missing = sorted(want - names)
    assert not missing, f"the wheel lacks {missing}"


def test_every_module_imports_from_the_installed_wheel(wheel, tmp_path):
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile",
                        "--target", str(site), str(wheel)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site), "PYTHONHASHSEED": "0", "HOME": str(tmp_path)}
    # cwd is a scratch folder and PYTHONPATH holds only the install: the source tree is out of reach
    # (the editable install in .venv is shadowed by PYTHONPATH, which comes first on sys.path)
    r = subprocess.run([sys.executable, "-c", IMPORT_ALL, str(site)], cwd=tmp_path, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    n_src = sum(1 for p in (ROOT / "scaling_lib").rglob("*.py")
                if "__pycache__" not in p.parts and p.name != "__main__.py")
    assert int(r.stdout.split()[-1]) == n_src - 1      # every module but the top-level __init__
