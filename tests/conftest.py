"""Shared test helpers.

Eight simulated CPU devices are set up here, before any test module can import jax: the tests that
build meshes then do not depend on which file pytest happens to import first.
"""
import math

import pytest

from scaling_lib import devices

devices.setup(8)


def assert_close(got, expected, rtol, ref=""):
    """Relative comparison whose failure message shows both numbers and the spec reference."""
    assert got is not None, f"{ref}: got None"
    ok = math.isclose(float(got), float(expected), rel_tol=rtol)
    assert ok, f"{ref}: got {float(got):.6g}, expected {float(expected):.6g} (rtol {rtol})"


@pytest.fixture
def close():
    return assert_close


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """Build the whole book once per test session (warnings are errors): (html dir, build log)."""
    import subprocess
    import sys
    from pathlib import Path

    import os

    root = Path(__file__).resolve().parents[1]
    if os.environ.get("SITE_DIR"):  # reuse an existing build (e.g. SITE_DIR=_build/html after make book)
        return Path(os.environ["SITE_DIR"]), ""
    out = tmp_path_factory.mktemp("book")
    jb = Path(sys.executable).parent / "jupyter-book"
    r = subprocess.run([str(jb), "build", str(root), "--path-output", str(out), "-W", "-n", "--keep-going"],
                       capture_output=True, text=True, cwd=root)
    log = r.stdout + r.stderr
    if r.returncode != 0:
        pytest.fail(f"jupyter-book build failed ({r.returncode}):\n" +
                    "\n".join(l for l in log.splitlines() if "WARNING" in l or "ERROR" in l)[-8000:] +
                    "\n" + log[-3000:])
    return out / "_build" / "html", log


def assert_reference(ex_id, want, rtol):
    """The registry's expected answer for ``ex_id`` equals the spec's ``want`` (a choice string,
    a number or a list of numbers) within ``rtol``."""
    import numpy as np
    from scaling_lib import exercises

    got = exercises.get(ex_id).reference()
    if isinstance(want, str):
        assert got == want, f"{ex_id}: got {got!r}, spec says {want!r}"
    else:
        np.testing.assert_allclose(np.atleast_1d(np.asarray(got, float)),
                                   np.atleast_1d(np.asarray(want, float)), rtol=rtol,
                                   err_msg=f"exercise {ex_id}")
