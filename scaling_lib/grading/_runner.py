"""The per-submission runner: executes one notebook INSIDE its sandbox and reports what it read.

Started by the grader (``_sandbox``) as ``python -s -B runner.py`` in the sandbox, with the job
(JSON) on stdin and a pipe on file descriptor ``$GRADER_REPORT_FD``. It imports nothing from
scaling_lib: the grader copies this file, ``_extract.py`` and ``_kernel.py`` into the sandbox's
read-only ``/grader/bin``.

What it does: start one IPython kernel (``_kernel.py``: memory limit, dies with the runner), run
the submission's code cells one by one under a per-cell and a per-notebook time limit, and after
each cell read the answers that cell touched with the extraction code (``_extract.py``, sent as
source text). The value read right after the cell that calls ``check("N.M", ...)`` is the one
the grader scores; a final read at the end covers answers never checked. Outputs are dropped as
they arrive (the grader needs none), so a cell printing gigabytes costs no memory here.

Report: one JSON object per line on the report pipe, written as things happen (so what was read
before a crash or a kill still counts). Everything in it is the submission's claim at best (the
kernel runs the submission's code as the same user in the same sandbox and could write to the
pipe too): the grader takes only plain data out of it and judges every value itself.

    {"ev": "item", "id", "src": "check" | "cell" | "final", "cell": i, "item": {...}}
    {"ev": "cell_timeout" | "notebook_timeout" | "stuck", "cell": i}
    {"ev": "cell_error", "cell": i, "ename": "ZeroDivisionError"}
    {"ev": "dead"}      the kernel died        {"ev": "failed", "what": "..."}   runner problem
    {"ev": "done"}
"""
from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
import time

KERNEL_NAME = "scaling-lib-grader"
MAX_ITEM_BYTES = 4 << 20  # one extracted answer, as JSON


class Report:
    def __init__(self, fd: int):
        self.fd = fd
        self.broken = False

    def send(self, **event) -> None:
        if self.broken:
            return
        line = (json.dumps(event, allow_nan=True) + "\n").encode("utf-8")
        try:
            while line:
                n = os.write(self.fd, line)
                line = line[n:]
        except OSError:  # the grader stopped listening (report cap reached, or it is gone)
            self.broken = True


def _read_small_regular(path: str, cap: int):
    """The file's text if it is a regular file of at most ``cap`` bytes; else None (no FIFOs)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > cap:
            return None
        chunks, total = [], 0
        while True:
            b = os.read(fd, 1 << 16)
            if not b:
                break
            total += len(b)
            if total > cap:
                return None
            chunks.append(b)
        return b"".join(chunks).decode("utf-8", "replace")
    finally:
        os.close(fd)


def _limit_processes(n: int) -> None:
    if n <= 0:
        return
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_NPROC, (n, n))
    except (ImportError, ValueError, OSError):
        pass


def _write_kernelspec(jupyter_dir: str, bin_dir: str, memory_mb: int) -> None:
    d = os.path.join(jupyter_dir, "kernels", KERNEL_NAME)
    os.makedirs(d, exist_ok=True)
    spec = {"argv": [sys.executable, "-s", "-B", os.path.join(bin_dir, "kernel.py"),
                     "--memory-mb", str(memory_mb), "-f", "{connection_file}",
                     "--HistoryManager.enabled=False"],
            "display_name": "scaling_lib grader", "language": "python",
            "metadata": {"debugger": False}}
    with open(os.path.join(d, "kernel.json"), "w", encoding="utf-8") as f:
        json.dump(spec, f)


def _extract_reserve(job) -> float:
    """Seconds kept back from the notebook deadline for the final extraction."""
    n = len(job["exercises"])
    return min(0.25 * float(job["timeout_notebook"]), 2.0 + 0.5 * n + 5.0 * sum(
        1 for s in job["exercises"] if s["kind"] == "function"))


class Runner:
    """One notebook in one kernel: run its cells under the limits, read the answers after each."""

    def __init__(self, job: dict, report: Report):
        import nbformat
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionComplete

        class Client(NotebookClient):
            """Drops every output as it arrives: the grader reads answers, not outputs."""

            def process_message(self, msg, cell, cell_index):
                if msg.get("msg_type") == "status" and msg.get("content", {}).get("execution_state") == "idle":
                    raise CellExecutionComplete()
                return None

        self.nbformat = nbformat
        self.job, self.report = job, report
        self.specs = job["exercises"]
        self.cell_timeout = float(job["timeout_cell"])
        self.deadline = time.monotonic() + float(job["timeout_notebook"])
        self.io_dir = os.path.join(job["tmp"], "grader-io")
        os.makedirs(self.io_dir, exist_ok=True)
        os.makedirs(job["workdir"], exist_ok=True)
        with open(os.path.join(job["bin"], "extract.py"), encoding="utf-8") as f:
            self.extract_src = f.read()
        jupyter_dir = os.path.join(job["tmp"], "jupyter")
        _write_kernelspec(jupyter_dir, job["bin"], int(job["memory_mb"]))
        os.environ.update(JUPYTER_PATH=jupyter_dir, JUPYTER_RUNTIME_DIR=os.path.join(jupyter_dir, "runtime"),
                          JUPYTER_DATA_DIR=os.path.join(jupyter_dir, "data"),
                          JUPYTER_CONFIG_DIR=os.path.join(jupyter_dir, "config"),
                          IPYTHONDIR=os.path.join(job["tmp"], "ipython"))
        self.nb = nbformat.v4.new_notebook()
        self.shown = []  # the notebook's own cell numbers, for the notes
        for index, source in job["cells"]:
            self.nb.cells.append(nbformat.v4.new_code_cell(source))
            self.shown.append(int(index))
        self.n_cells = len(self.nb.cells)
        self.nb.cells.append(nbformat.v4.new_code_cell(""))  # the slot grader code runs in
        self.timeouts: list = []
        self.client = Client(self.nb, timeout=int(self.cell_timeout), kernel_name=KERNEL_NAME, allow_errors=True,
                             interrupt_on_timeout=True,
                             error_on_timeout={"ename": "CellTimeoutError", "evalue": "grader cell timeout",
                                               "traceback": []},
                             iopub_timeout=2, record_timing=False, startup_timeout=60,
                             resources={"metadata": {"path": job["workdir"]}}, on_cell_error=self._on_error)
        self.nonce = os.urandom(6).hex()
        self.counter = 0
        self.have_check_value: set = set()

    def _on_error(self, cell, cell_index, execute_reply):
        content = (execute_reply or {}).get("content", {})
        if content.get("ename") == "CellTimeoutError":
            self.timeouts.append(cell_index)
        elif cell_index < self.n_cells:
            self.report.send(ev="cell_error", cell=self.shown[cell_index],
                             ename=str(content.get("ename", "Error"))[:80])

    def run_code(self, code: str, timeout: float) -> bool:
        """Run grader code in the kernel; False if it timed out (the kernel may be stuck)."""
        cell = self.nbformat.v4.new_code_cell(code)
        self.client.timeout = max(1, int(math.ceil(timeout)))
        n_before = len(self.timeouts)
        self.client.execute_cell(cell, self.n_cells, store_history=False)
        return len(self.timeouts) == n_before

    def probe(self) -> bool:
        """Does the kernel still answer (after an interrupt)? Generous: a loaded machine is slow."""
        return self.run_code("pass", 15)

    def extract(self, specs, src: str, cell: int) -> bool:
        """Read these exercises' answers out of the kernel; False if the kernel is stuck."""
        for spec in specs:
            time_left = self.deadline - time.monotonic()
            if src == "final":
                time_left = max(time_left, 1.0 + 0.5 * len(specs))
            if time_left - 0.5 <= 0:
                return False
            self.counter += 1
            out = os.path.join(self.io_dir, f"{self.nonce}-{self.counter}.json")
            budget = max(0.5, min(5.0, 0.5 * self.cell_timeout, time_left - 3.0))
            payload = json.dumps({"id": spec["id"], "var": spec["var"], "kind": spec["kind"],
                                  "inputs": spec["inputs"], "out": out, "budget_s": budget,
                                  "recorded": src in ("check", "final"),
                                  "program": spec.get("program")})
            code = ("import builtins as __grader_b\n"
                    "__grader_b.exec(__grader_b.compile(%r, '<grader>', 'exec'), "
                    "{'__builtins__': __grader_b, '__name__': '__grader__', '_SPEC': %r, "
                    "'_NS': __grader_b.globals()})\n"
                    "del __grader_b" % (self.extract_src, payload))
            ok = self.run_code(code, budget + 3.0)
            text = _read_small_regular(out, MAX_ITEM_BYTES)
            try:
                item = json.loads(text) if text is not None else None
            except ValueError:
                item = None
            if isinstance(item, dict) and item.get("id") == spec["id"]:
                if src == "check" and item.get("value") != {"$": "missing"}:
                    self.have_check_value.add(spec["id"])
                self.report.send(ev="item", id=spec["id"], src=src, cell=cell, item=item)
            if not ok:
                return False
        return True

    def _cell(self, i: int, cell) -> str:
        """Run cell ``i`` and read what it answered: "ok", "deadline" or "stuck" (the kernel)."""
        shown = self.shown[i]
        left = self.deadline - time.monotonic() - _extract_reserve(self.job)
        if left <= 1:
            self.report.send(ev="notebook_timeout", cell=shown)
            return "deadline"
        n_to = len(self.timeouts)
        self.client.timeout = max(1, int(min(self.cell_timeout, left)))
        self.client.execute_cell(cell, i)
        if len(self.timeouts) > n_to:
            if self.client.timeout < self.cell_timeout:  # cut short by the notebook's deadline
                self.timeouts.remove(i)
                self.report.send(ev="notebook_timeout", cell=shown)
            else:
                self.report.send(ev="cell_timeout", cell=shown)
            if not self.probe():  # the interrupt did not stop it: the kernel is stuck
                self.report.send(ev="stuck", cell=shown)
                return "stuck"
        checked = [s for s in self.specs if re.search(
            r"""\bcheck\(\s*["']\s*%s\s*["']""" % re.escape(s["id"]), cell.source)]
        touched = [s for s in self.specs if s not in checked
                   and re.search(rf"\b{re.escape(s['var'])}\b", cell.source)]
        if not (self.extract(checked, "check", shown) and self.extract(touched, "cell", shown)):
            if not self.probe():
                self.report.send(ev="stuck", cell=shown)
                return "stuck"
        return "ok"

    def execute(self) -> None:
        from nbclient.exceptions import DeadKernelError
        try:
            with self.client.setup_kernel():
                state = "ok"
                for i, cell in enumerate(self.nb.cells[:self.n_cells]):
                    if cell.source.strip():
                        state = self._cell(i, cell)
                        if state != "ok":
                            break
                if state != "stuck":  # the answers never checked: their values now
                    rest = [s for s in self.specs if s["id"] not in self.have_check_value]
                    self.extract(rest, "final", -1)
        except DeadKernelError:
            self.report.send(ev="dead")
        except Exception as e:  # nbclient/kernel start-up problems
            self.report.send(ev="failed", what=f"{type(e).__name__}: {str(e)[:200]}")
        self.report.send(ev="done")


def main() -> int:
    fd = int(os.environ.get("GRADER_REPORT_FD", "3"))
    report = Report(fd)
    try:
        raw = sys.stdin.buffer.read(64 << 20)
        job = json.loads(raw.decode("utf-8"))
    except Exception as e:
        report.send(ev="failed", what=f"job: {type(e).__name__}")
        return 2
    os.umask(0o077)
    _limit_processes(int(job.get("nproc", 0)))
    mpl = job.get("mpl_cache")
    if mpl and os.path.isdir(mpl):  # a matplotlib font cache built once by the grader
        target = os.environ.get("MPLCONFIGDIR")
        if target:
            os.makedirs(target, exist_ok=True)
            for name in os.listdir(mpl):
                text = _read_small_regular(os.path.join(mpl, name), 8 << 20)
                if text is not None:
                    with open(os.path.join(target, name), "w", encoding="utf-8") as f:
                        f.write(text)
    Runner(job, report).execute()
    return 0


if __name__ == "__main__":
    sys.exit(main())
