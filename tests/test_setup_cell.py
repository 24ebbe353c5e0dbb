"""The hidden first cell of every notebook, on its Colab branch: if installing scaling_lib fails (no
network, repository not published, wrong branch) the reader gets a short Chinese message that says
what failed and what to do, not a pip traceback. Run in a real kernel, with a stand-in google.colab
module (as Colab has it) and an install source that cannot exist."""
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import nbtool  # noqa: E402


def test_colab_install_failure_is_a_short_chinese_message(tmp_path, monkeypatch):
    fake = tmp_path / "fakecolab"
    (fake / "google" / "colab").mkdir(parents=True)
    (fake / "google" / "__init__.py").write_text("")
    (fake / "google" / "colab" / "__init__.py").write_text("")
    (fake / "sitecustomize.py").write_text("import google.colab\n")
    monkeypatch.setenv("PYTHONPATH", f"{fake}:{ROOT}")
    monkeypatch.setenv("SCALING_LIB_SPEC", str(tmp_path / "no-such-dir" / "scaling_lib-0.0-py3-none-any.whl"))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(nbtool.setup_cell_source()),
                                         nbformat.v4.new_code_cell("print('never reached')")])
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(CellExecutionError):
        client.execute()
    (err,) = [o for o in nb.cells[0].outputs if o.output_type == "error"]
    assert err.ename == "SystemExit"
    assert "没能安装本书的库 scaling_lib" in err.evalue and "重新运行" in err.evalue
    assert "no-such-dir" in err.evalue                     # says what it tried to install
    assert "Traceback" not in err.evalue and len(err.evalue) < 600
    assert not nb.cells[1].get("outputs")                  # the notebook stops there


def test_setup_cell_outside_colab_installs_nothing():
    src = nbtool.setup_cell_source()
    assert src.count("pip") >= 1 and 'if "google.colab" in sys.modules' in src
    url, branch = nbtool.repo_info()
    assert f"git+{url}@{branch}" in src                    # the one place the repository is set
