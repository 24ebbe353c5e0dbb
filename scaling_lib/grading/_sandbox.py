"""One sandbox per submission: what the graded process can see, and the limits on its process tree.

Chosen once per grading run (``detect``), strongest first:

1. **bubblewrap** (Linux; works for root and, where user namespaces are enabled, for anyone).
   Each submission gets new mount, PID, network, IPC and UTS namespaces. It sees read-only:
   the system (``/usr``), the Python installation and its packages, a *sanitised* copy of
   ``scaling_lib`` (no ``exercises`` registry, no grader; ``scaling_lib.grading`` is a stub whose
   ``check`` only records) and the runner's three files; nothing else of the host: not the
   repository, not the reference notebooks, not the other submissions, not the teacher's home,
   not the score sheet. Writable: ``/tmp`` and ``/home/grader`` (private tmpfs of bounded size,
   gone when the sandbox ends). No network. ``--die-with-parent`` and the PID namespace end every
   process the submission forks when the runner ends or is killed.
2. **plain process** (macOS, no bubblewrap, or a kernel without user namespaces): the runner is
   an ordinary child process in a private scratch folder, with the same sanitised library first
   on ``sys.path``. It can read and write whatever the grading user can; the grader says so.

Limits, for the whole process tree where the system allows:
- memory: a cgroup per submission (v1 ``memory`` or v2 ``memory.max``, as root; v2 through
  ``systemd-run --user --scope`` otherwise), else ``RLIMIT_DATA`` per process;
- processes: cgroup ``pids.max``, else ``RLIMIT_NPROC`` set inside the sandbox (counted per user
  namespace on Linux >= 5.14);
- CPU: one core per submission (cgroup CPU quota) and ``RLIMIT_CPU`` per process;
- file size ``RLIMIT_FSIZE``, no core dumps, and a wall-clock limit after which the whole tree
  is killed (cgroup, process group, PID namespace).

The grader talks to the sandbox only through pipes it created (job in on stdin, report out on
one descriptor, log out on stdout): it never opens a file the submission could have replaced.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

PKG = Path(__file__).resolve().parent          # scaling_lib/grading
LIB = PKG.parent                                # scaling_lib
ROOT = LIB.parent                               # the repository (when run from a checkout) ...
REPO = ROOT if (ROOT / "pyproject.toml").exists() else None  # ... or site-packages (installed)
SANDBOX_UID = 65534
REPORT_CAP = 32 << 20    # bytes of report accepted from one submission
LOG_TAIL = 16 << 10      # bytes of runner log kept (teacher's console only)
FILE_SIZE = 64 << 20     # RLIMIT_FSIZE
TMPFS = 256 << 20        # size of each writable tmpfs in the sandbox

# /etc entries a Python process may need; everything else of /etc stays out (no shadow, no keys)
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "nsswitch.conf",
        "hosts", "host.conf", "alternatives", "fonts", "mime.types", "os-release", "ssl/certs")


@dataclass
class Isolation:
    """What this run can enforce; ``describe()`` says it in Chinese for the teacher."""

    kind: str                      # "bwrap" | "process"
    cgroup: str | None = None      # "v1" | "v2" | "systemd" | None
    controllers: tuple = ()        # of the cgroup: ("memory", "pids", "cpu")
    reason: str = ""               # why not bwrap (Chinese), when kind == "process"
    bwrap: str | None = None

    @property
    def strong(self) -> bool:
        return self.kind == "bwrap"

    def describe(self, memory_mb: int, timeout_notebook: float, nproc: int) -> list[str]:
        lines = []
        mem = f"{memory_mb} MB" if memory_mb > 0 else "不限"
        if self.kind == "bwrap":
            lines.append("隔离：每份作业一个 bubblewrap 沙箱（独立的文件系统视图、进程号和网络）。作业只能读到系统文件、"
                         "Python 和它的包、去掉了练习答案和评分程序的 scaling_lib；看不到参考答案、其他同学的作业、"
                         "你的文件和成绩表，写下的东西在沙箱结束时全部消失，它启动的进程也都会被结束。")
        else:
            lines.append(f"警告：这次批改没有沙箱（{self.reason}）。作业在普通子进程里运行，能读写你这个用户能读写的"
                         "所有文件：包括参考答案、其他同学的作业和成绩表。")
            lines.append("仍然保证的是：分数只由评分程序在自己的进程里算出（作业改写 check、库或答案表都只改变它自己交上来的值）；"
                         "每份作业有时间上限，超时整组进程被结束；坏文件、死循环、崩溃只影响它自己那一行。"
                         "要完整的隔离：在 Linux 上安装 bubblewrap（sudo apt-get install bubblewrap），或在容器里批改。")
        if "memory" in self.controllers:
            lines.append(f"内存上限：整棵进程树 {mem}（cgroup {self.cgroup}）。")
        else:
            lines.append(f"内存上限：每个进程 {mem}（RLIMIT_DATA；没有整棵进程树的总上限）。")
        if sys.platform == "darwin":
            lines.append("macOS 上这条内存上限不一定生效，自己脱离进程组的后台进程也可能在批改结束后还活着。")
        if "pids" in self.controllers:
            lines.append(f"进程数上限：{nproc}（cgroup {self.cgroup}）。")
        elif self.kind == "bwrap":
            lines.append(f"进程数上限：{nproc}（RLIMIT_NPROC，按沙箱计）。")
        else:
            lines.append("进程数：没有按作业的上限（RLIMIT_NPROC 会算上你这个用户的所有进程，所以不设）。")
        cpu = "1 核（cgroup）" if "cpu" in self.controllers else "不限核数"
        lines.append(f"CPU：{cpu}，每个进程最多 {int(timeout_notebook) + 60} 秒 CPU 时间；单个文件不超过 "
                     f"{FILE_SIZE >> 20} MB；每份作业最长 {timeout_notebook:g} 秒。")
        return lines


# ---- detection -------------------------------------------------------------------------------

def _own_cgroup_v1(controller: str) -> Path | None:
    mount = Path("/sys/fs/cgroup") / controller
    if not (mount / "cgroup.procs").exists():
        return None
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, ctrls, path = line.split(":", 2)
            if controller in ctrls.split(","):
                return mount / path.lstrip("/")
    except OSError:
        return None
    return mount


def _own_cgroup_v2() -> Path | None:
    base = Path("/sys/fs/cgroup")
    if not (base / "cgroup.controllers").exists():
        return None
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return base / line[3:].lstrip("/")
    except OSError:
        return None
    return None


def _writable_dir(p: Path) -> bool:
    probe = p / f"scaling-grade-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
        return True
    except OSError:
        return False


def _detect_cgroup() -> tuple[str | None, tuple]:
    if not sys.platform.startswith("linux"):
        return None, ()
    if os.geteuid() == 0:
        v2 = _own_cgroup_v2()
        if v2 is not None:
            try:
                avail = set((v2.parent / "cgroup.subtree_control").read_text().split())
            except OSError:
                avail = set()
            ctrls = tuple(c for c in ("memory", "pids", "cpu") if c in avail) + ("cpuacct",)
            if ctrls and _writable_dir(v2.parent):
                return "v2", ctrls
        ctrls = tuple(c for c in ("memory", "pids", "cpu", "cpuacct")
                      if (p := _own_cgroup_v1(c)) is not None and _writable_dir(p))
        if ctrls:
            return "v1", ctrls
        return None, ()
    if shutil.which("systemd-run") and Path("/run/systemd/system").exists() and _own_cgroup_v2():
        try:
            r = subprocess.run(["systemd-run", "--user", "--scope", "--quiet", "-p", "MemoryMax=1G", "true"],
                               capture_output=True, timeout=20)
            if r.returncode == 0:
                return "systemd", ("memory", "pids", "cpu")
        except (OSError, subprocess.TimeoutExpired):
            pass
    return None, ()


def detect(mode: str = "auto") -> Isolation:
    """The strongest isolation this machine offers (``mode``: "auto", "bwrap" or "process")."""
    if mode not in ("auto", "bwrap", "process"):
        raise ValueError(f"isolation must be 'auto', 'bwrap' or 'process', got {mode!r}")
    cgroup, ctrls = _detect_cgroup()
    if mode == "process":
        return Isolation("process", cgroup, ctrls, reason="按要求用 --isolation process 关掉了沙箱")
    if not sys.platform.startswith("linux"):
        reason = {"darwin": "macOS 没有 bubblewrap", "win32": "Windows 没有 bubblewrap（可以在 WSL 里批改）"}.get(
            sys.platform, f"{sys.platform} 上没有 bubblewrap")
        return Isolation("process", cgroup, ctrls, reason=reason)
    bw = shutil.which("bwrap")
    if bw is None:
        return Isolation("process", cgroup, ctrls, reason="没有安装 bubblewrap（bwrap）")
    return Isolation("bwrap", cgroup, ctrls, bwrap=bw)


# ---- the sanitised library and the runner files (built once per run) --------------------------

_STUB = '''"""scaling_lib.grading inside a grading sandbox: ``check`` only records the answer.

The real checker and the exercise registry are not in this sandbox; the grader judges the
recorded answers in its own process, outside.
"""
import json as _json
import os as _os

from ._view import Variant

_RECORDED = {}
with open(_os.path.join(_os.path.dirname(__file__), "_defaults.json"), encoding="utf-8") as _f:
    _DEFAULTS = _json.load(_f)


def check(ex_id, answer):
    """Record the answer for the grader (which judges it outside this sandbox)."""
    if isinstance(ex_id, str):
        _RECORDED[ex_id.strip()] = answer
    print("（批改中：答案已记下，由评分程序判分）")


def variant(chapter, student=None, values=None):
    vals = dict(_DEFAULTS.get(str(chapter), {}))
    if isinstance(values, dict):
        vals.update(values)
    return Variant(chapter, student, vals)


def __getattr__(name):
    raise AttributeError(f"批改时的 scaling_lib.grading 只有 check 和 variant（没有 {name}）")
'''

_LAUNCH = r'''"""Started by the grader outside the sandbox: join cgroups, set limits, then run the sandbox."""
import json, os, signal, sys
cfg = json.loads(sys.argv[1])
for path in cfg.get("cgroup_procs", []):
    with open(path, "w") as f:
        f.write(str(os.getpid()))
try:
    import resource
    for name, (soft, hard) in cfg.get("rlimits", {}).items():
        try:
            resource.setrlimit(getattr(resource, name), (soft, hard))
        except (ValueError, OSError, AttributeError):
            pass
except ImportError:
    pass
argv = cfg["argv"]
if cfg.get("mode") == "exec":
    os.execv(argv[0], argv)


def children():
    me, out = os.getpid(), []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for n in names:
        if n.isdigit():
            try:
                with open(f"/proc/{n}/stat", "rb") as f:
                    st = f.read().rsplit(b")", 1)[1].split()
                if int(st[1]) == me:
                    out.append(int(n))
            except (OSError, IndexError, ValueError):
                pass
    return out


def reap_all():
    for _ in range(200):
        kids = children()
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except OSError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        if not kids:
            return


if sys.platform.startswith("linux"):
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:
        pass


def on_term(signum, frame):
    reap_all()
    os._exit(137)


signal.signal(signal.SIGTERM, on_term)
pid = os.fork()
if pid == 0:
    try:
        os.execv(argv[0], argv)
    finally:
        os._exit(127)
while True:
    try:
        _, status = os.waitpid(pid, 0)
        break
    except ChildProcessError:
        status = 0
        break
reap_all()
os._exit(os.waitstatus_to_exitcode(status) & 0xFF if os.WIFEXITED(status) else 137)
'''


def _chapter_defaults() -> dict:
    from ..exercises import registry
    out: dict = {}
    for ex in registry().values():
        for name, p in ex.params.items():
            out.setdefault(str(ex.chapter), {})[name] = p.default
    return out


def _copy_library(dest: Path) -> None:
    """``scaling_lib`` without the answer key (``exercises``) and the grader; a recording stub."""
    def ignore(d, names):
        skip = {"__pycache__", "exercises", "grading", "egg-info"}
        return [n for n in names if n in skip or n.startswith("_grading") or n.endswith((".pyc", ".egg-info"))]

    shutil.copytree(LIB, dest, ignore=ignore, symlinks=False)
    g = dest / "grading"
    g.mkdir()
    (g / "__init__.py").write_text(_STUB, encoding="utf-8")
    shutil.copyfile(PKG / "_view.py", g / "_view.py")
    (g / "_defaults.json").write_text(json.dumps(_chapter_defaults()), encoding="utf-8")
    import compileall
    compileall.compile_dir(str(dest), quiet=2, workers=1)


def _matplotlib_cache(dest: Path) -> None:
    """A font cache for the sandboxes (copied or built once: every fresh kernel would rebuild it)."""
    dest.mkdir()
    for d in (os.environ.get("MPLCONFIGDIR"), Path.home() / ".cache" / "matplotlib", Path.home() / ".matplotlib"):
        if d and Path(d).is_dir():
            found = sorted(Path(d).glob("fontlist-v*.json"))
            if found:
                for f in found:
                    shutil.copyfile(f, dest / f.name)
                return
    try:
        env = dict(os.environ, MPLCONFIGDIR=str(dest), MPLBACKEND="Agg")
        subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], env=env,
                       capture_output=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        pass


def _python_roots(avoid: list[Path]) -> list[Path]:
    """Folders the sandbox must see read-only to run this Python and its packages."""
    cands = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    cands.add(Path(sys.executable).resolve().parent)
    for p in sys.path:
        if p and (p.endswith(("site-packages", "dist-packages", ".zip")) or "lib-dynload" in p):
            q = Path(p).resolve()
            if q.exists():
                cands.add(q)
    out = []
    for c in sorted(cands, key=lambda p: len(p.parts)):
        if not c.exists() or str(c) == "/":
            continue
        if any(c == o or c in o.parents for o in avoid):  # would expose the teacher's files
            continue
        if any(c == r or r in c.parents for r in out):
            continue
        out.append(c)
    return out


@dataclass
class Outcome:
    """What came back from one sandbox run."""

    events: list = field(default_factory=list)
    killed: bool = False           # hit the wall-clock limit
    returncode: int | None = None
    report_overflow: bool = False
    peak_bytes: int | None = None  # whole tree (cgroup)
    cpu_s: float | None = None     # CPU seconds of the whole tree (cgroup)
    oom: bool = False
    log_tail: str = ""
    seconds: float = 0.0


class _Cgroup:
    """One submission's cgroup (v1: one directory per controller; v2: one directory)."""

    def __init__(self, iso: Isolation, name: str, memory_mb: int, nproc: int):
        self.dirs: list[Path] = []
        self.iso = iso
        self.scope_args: list[str] = []
        if iso.cgroup == "systemd":
            props = [f"TasksMax={nproc}", "CPUQuota=100%"]
            if memory_mb > 0:
                props += [f"MemoryMax={memory_mb}M", "MemorySwapMax=0"]
            self.scope_args = ["systemd-run", "--user", "--scope", "--quiet", "--collect",
                               f"--unit={name}"] + sum((["-p", p] for p in props), [])
            return
        if iso.cgroup == "v1":
            for c in iso.controllers:
                d = _own_cgroup_v1(c) / name
                d.mkdir()
                self.dirs.append(d)
                if c == "memory" and memory_mb > 0:
                    _write(d / "memory.limit_in_bytes", memory_mb << 20)
                    _write(d / "memory.memsw.limit_in_bytes", memory_mb << 20, must=False)
                elif c == "pids":
                    _write(d / "pids.max", nproc)
                elif c == "cpu":
                    _write(d / "cpu.cfs_period_us", 100000)
                    _write(d / "cpu.cfs_quota_us", 100000)
        elif iso.cgroup == "v2":
            parent = _own_cgroup_v2().parent
            d = parent / name
            d.mkdir()
            self.dirs.append(d)
            if "memory" in iso.controllers and memory_mb > 0:
                _write(d / "memory.max", memory_mb << 20)
                _write(d / "memory.swap.max", 0, must=False)
            if "pids" in iso.controllers:
                _write(d / "pids.max", nproc)
            if "cpu" in iso.controllers:
                _write(d / "cpu.max", "100000 100000")

    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def _pids(self) -> set:
        out = set()
        for d in self.dirs:
            try:
                out |= {int(x) for x in (d / "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                pass
        return out

    def kill_all(self) -> None:
        for d in self.dirs:
            if (d / "cgroup.kill").exists():
                _write(d / "cgroup.kill", 1, must=False)
        for _ in range(200):
            pids = self._pids()
            if not pids:
                return
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.02)

    def cpu_seconds(self) -> float | None:
        for d in self.dirs:
            try:
                return int((d / "cpuacct.usage").read_text()) / 1e9
            except (OSError, ValueError):
                pass
            try:
                for line in (d / "cpu.stat").read_text().splitlines():
                    if line.startswith("usage_usec "):
                        return int(line.split()[1]) / 1e6
            except (OSError, ValueError):
                pass
        return None

    def peak(self) -> int | None:
        for d in self.dirs:
            for name in ("memory.max_usage_in_bytes", "memory.peak"):
                try:
                    return int((d / name).read_text().split()[0])
                except (OSError, ValueError, IndexError):
                    continue
        return None

    def oom(self) -> bool:
        for d in self.dirs:
            for name in ("memory.oom_control", "memory.events"):
                try:
                    for line in (d / name).read_text().splitlines():
                        k, _, v = line.partition(" ")
                        if k == "oom_kill" and int(v) > 0:
                            return True
                except (OSError, ValueError):
                    continue
            try:
                if int((d / "memory.failcnt").read_text()) > 0 and self.peak() is not None:
                    pass
            except (OSError, ValueError):
                pass
        return False

    def remove(self) -> None:
        self.kill_all()
        for d in self.dirs:
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


def _write(p: Path, value, must: bool = True) -> None:
    try:
        p.write_text(str(value))
    except OSError:
        if must:
            raise


class Sandbox:
    """The per-run pieces (sanitised library, runner files) and ``run()`` for one submission."""

    def __init__(self, iso: Isolation, *, memory_mb: int, timeout_notebook: float, nproc: int = 256,
                 avoid: list | None = None):
        self.iso = iso
        self.memory_mb = int(memory_mb)
        self.timeout_notebook = float(timeout_notebook)
        self.nproc = int(nproc)
        self.tree = Path(tempfile.mkdtemp(prefix="scaling-grade-"))
        os.chmod(self.tree, 0o755)
        self._count = 0
        self._lock = threading.Lock()
        self._live: dict = {}
        self.closed = False
        lib = self.tree / "lib"
        lib.mkdir()
        _copy_library(lib / "scaling_lib")
        b = self.tree / "bin"
        b.mkdir()
        shutil.copyfile(PKG / "_runner.py", b / "runner.py")
        shutil.copyfile(PKG / "_extract.py", b / "extract.py")
        shutil.copyfile(PKG / "_kernel.py", b / "kernel.py")
        (b / "launch.py").write_text(_LAUNCH, encoding="utf-8")
        _matplotlib_cache(self.tree / "mpl")
        etc = self.tree / "etc"
        etc.mkdir()
        (etc / "passwd").write_text(f"root:x:0:0::/root:/bin/sh\ngrader:x:{SANDBOX_UID}:{SANDBOX_UID}::"
                                    "/home/grader:/bin/sh\n", encoding="utf-8")
        (etc / "group").write_text(f"root:x:0:\ngrader:x:{SANDBOX_UID}:\n", encoding="utf-8")
        for d in self.tree.rglob("*"):
            os.chmod(d, 0o755 if d.is_dir() else 0o644)
        self.avoid = [Path(a).resolve() for a in (avoid or [])] + [Path.home().resolve(), self.tree,
                                                                   Path.cwd().resolve()] + ([REPO] if REPO else [])
        self.roots = _python_roots(self.avoid)

    # ---- command lines ---------------------------------------------------------------------

    def _env(self, home: str, tmp: str, lib: str, fd: int) -> dict:
        py_dir = str(Path(sys.executable).parent)
        return {"PATH": f"{py_dir}:/usr/local/bin:/usr/bin:/bin", "HOME": home, "USER": "grader",
                "LOGNAME": "grader", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMPDIR": tmp,
                "PYTHONPATH": lib, "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg", "MPLCONFIGDIR": f"{tmp}/mpl",
                "TF_CPP_MIN_LOG_LEVEL": "3", "JAX_PLATFORMS": "cpu", "PYDEVD_DISABLE_FILE_VALIDATION": "1",
                "GRADER_REPORT_FD": str(fd)}

    def _bwrap_argv(self) -> list[str]:
        a = [self.iso.bwrap, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID),
             "--gid", str(SANDBOX_UID), "--disable-userns", "--die-with-parent", "--new-session",
             "--hostname", "grader", "--cap-drop", "ALL"]
        # the private writable places first: a bind below must land on top of them, or a Python
        # installed under /tmp or /home (a virtual environment in a clone there) would be hidden by
        # the tmpfs, the self-test would fail and grading would fall back to no sandbox at all
        a += ["--proc", "/proc", "--dev", "/dev",
              "--size", str(TMPFS), "--tmpfs", "/tmp",
              "--size", str(TMPFS), "--tmpfs", "/home",
              "--size", str(TMPFS), "--tmpfs", "/dev/shm"]
        a += ["--ro-bind", "/usr", "/usr"]
        for d in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(d):
                a += ["--symlink", os.readlink(d), d]
            elif os.path.isdir(d):
                a += ["--ro-bind", d, d]
        for r in self.roots:
            if not str(r).startswith("/usr/"):
                a += ["--ro-bind", str(r), str(r)]
        for e in _ETC:
            a += ["--ro-bind-try", f"/etc/{e}", f"/etc/{e}"]
        a += ["--ro-bind", str(self.tree / "etc" / "passwd"), "/etc/passwd",
              "--ro-bind", str(self.tree / "etc" / "group"), "/etc/group",
              "--ro-bind", str(self.tree / "lib"), "/grader/lib",
              "--ro-bind", str(self.tree / "bin"), "/grader/bin",
              "--ro-bind", str(self.tree / "mpl"), "/grader/mpl"]
        installed = LIB.resolve()
        if any(installed == r or r in installed.parents for r in self.roots):
            a += ["--ro-bind", str(self.tree / "lib" / "scaling_lib"), str(installed)]  # mask the answer key
        a += ["--dir", "/home/grader/work", "--chdir", "/home/grader/work",
              "--", sys.executable, "-s", "-B", "/grader/bin/runner.py"]
        return a

    def _rlimits(self) -> dict:
        cpu = int(self.timeout_notebook) + 60
        lim = {"RLIMIT_FSIZE": (FILE_SIZE, FILE_SIZE), "RLIMIT_CORE": (0, 0), "RLIMIT_CPU": (cpu, cpu + 5)}
        if self.memory_mb > 0 and "memory" not in self.iso.controllers:
            lim["RLIMIT_DATA"] = (self.memory_mb << 20, self.memory_mb << 20)
        return lim

    def describe(self) -> list[str]:
        return self.iso.describe(self.memory_mb, self.timeout_notebook, self.nproc)

    # ---- one submission ----------------------------------------------------------------------

    def run(self, job: dict, wall_s: float) -> Outcome:
        """Run the runner on ``job`` in a fresh sandbox; always returns, within ``wall_s`` + a few s."""
        with self._lock:
            if self.closed:
                return Outcome(events=[], returncode=None)
            self._count += 1
            n = self._count
        name = f"scaling-grade-{os.getpid()}-{n}"
        t0 = time.monotonic()
        out = Outcome()
        scratch = None
        cg = None
        r, w = os.pipe()
        try:
            try:
                cg = _Cgroup(self.iso, name, self.memory_mb, self.nproc) if self.iso.cgroup else None
            except OSError:
                cg = None
            tree_mem = bool(cg and "memory" in self.iso.controllers)
            # the kernel's own RLIMIT_DATA sits below the tree's cgroup limit, so that one huge
            # allocation is a MemoryError in that cell (the later cells still run) rather than an
            # out-of-memory kill of the whole kernel
            kernel_mb = self.memory_mb - min(256, self.memory_mb // 4) if tree_mem else self.memory_mb
            job = dict(job, memory_mb=max(kernel_mb, 0),
                       nproc=0 if (cg and "pids" in self.iso.controllers) else
                       (self.nproc if self.iso.kind == "bwrap" else 0))
            if self.iso.kind == "bwrap":
                job.update(bin="/grader/bin", tmp="/tmp", workdir="/home/grader/work", mpl_cache="/grader/mpl")
                env = self._env("/home/grader", "/tmp", "/grader/lib", w)
                argv = self._bwrap_argv()
                mode = "exec"
                cwd = "/"
            else:
                scratch = Path(tempfile.mkdtemp(prefix="scaling-grade-sub-"))
                for d in ("tmp", "home", "work"):
                    (scratch / d).mkdir()
                job.update(bin=str(self.tree / "bin"), tmp=str(scratch / "tmp"), workdir=str(scratch / "work"),
                           mpl_cache=str(self.tree / "mpl"))
                env = self._env(str(scratch / "home"), str(scratch / "tmp"), str(self.tree / "lib"), w)
                argv = [sys.executable, "-s", "-B", str(self.tree / "bin" / "runner.py")]
                mode = "reap"
                cwd = str(scratch / "work")
            cfg = {"cgroup_procs": cg.procs_files() if cg else [], "rlimits": self._rlimits(),
                   "argv": argv, "mode": mode}
            cmd = [sys.executable, "-I", "-S", str(self.tree / "bin" / "launch.py"), json.dumps(cfg)]
            if cg and cg.scope_args:
                cmd = cg.scope_args + ["--"] + cmd
            payload = json.dumps(job).encode("utf-8")
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    pass_fds=(w,), env=env, cwd=cwd, start_new_session=True)
            os.close(w)
            w = -1
            with self._lock:
                self._live[n] = (proc, cg)
                stopped = self.closed
            if stopped:   # Ctrl-C came while this sandbox was starting: stop_all did not see it
                _stop(proc)
                if cg:
                    cg.kill_all()
            feeder = threading.Thread(target=_feed, args=(proc.stdin, payload), daemon=True)
            logger = threading.Thread(target=_drain_tail, args=(proc.stdout, out), daemon=True)
            reporter = threading.Thread(target=_read_report, args=(r, out), daemon=True)
            for t in (feeder, logger, reporter):
                t.start()
            try:
                proc.wait(timeout=wall_s)
            except subprocess.TimeoutExpired:
                out.killed = True
                _stop(proc)
            out.returncode = proc.returncode
            _kill_group(proc)
            if cg:
                out.peak_bytes = cg.peak()
                out.cpu_s = cg.cpu_seconds()
                out.oom = cg.oom()
                cg.kill_all()
            reporter.join(timeout=5)
            logger.join(timeout=2)
            feeder.join(timeout=1)
        finally:
            with self._lock:
                self._live.pop(n, None)
            if w >= 0:
                os.close(w)
            try:
                os.close(r)
            except OSError:
                pass
            if cg:
                cg.remove()
            if scratch is not None:
                _remove_tree(scratch)
        out.seconds = time.monotonic() - t0
        return out

    def stop_all(self) -> None:
        """Kill every running sandbox (Ctrl-C)."""
        with self._lock:
            self.closed = True
            live = list(self._live.values())
        for proc, cg in live:
            _stop(proc)
            if cg:
                cg.kill_all()

    def close(self) -> None:
        self.stop_all()
        _remove_tree(self.tree)

    def self_test(self) -> str | None:
        """None if a trivial sandbox runs this Python and cannot import the answer key; else why."""
        if self.iso.kind != "bwrap":
            return None
        code = ("import sys, nbclient, ipykernel, scaling_lib, scaling_lib.grading as g\n"
                "assert not hasattr(g, 'evaluate')\n"
                "try:\n    import scaling_lib.exercises\nexcept ImportError:\n    pass\n"
                "else:\n    sys.exit('answer key importable')\n"
                "import os\nassert not os.path.exists(%r)\nprint('ok')" % str((REPO or ROOT) / "exercises"))
        argv = self._bwrap_argv()
        argv = argv[:argv.index("--") + 1] + [sys.executable, "-s", "-B", "-c", code]
        env = self._env("/home/grader", "/tmp", "/grader/lib", 3)
        try:
            p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, cwd="/")
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"{type(e).__name__}"
        if p.returncode != 0 or p.stdout.strip() != "ok":
            tail = (p.stderr.strip().splitlines() or [p.stdout.strip()])[-1:]
            return f"bubblewrap 自检失败：{tail[0][:160] if tail else p.returncode}"
        return None


def _feed(pipe, data: bytes) -> None:
    try:
        pipe.write(data)
        pipe.close()
    except (OSError, ValueError):
        pass


def _drain_tail(pipe, out: Outcome) -> None:
    buf = bytearray()
    try:
        while True:
            b = pipe.read1(1 << 16) if hasattr(pipe, "read1") else pipe.read(1 << 16)
            if not b:
                break
            buf += b
            if len(buf) > 2 * LOG_TAIL:
                del buf[:-LOG_TAIL]
    except (OSError, ValueError):
        pass
    out.log_tail = bytes(buf[-LOG_TAIL:]).decode("utf-8", "replace")


def _read_report(fd: int, out: Outcome) -> None:
    """JSON lines from the sandbox, at most REPORT_CAP bytes; beyond that, drained and dropped."""
    total, pending = 0, b""
    while True:
        try:
            b = os.read(fd, 1 << 16)
        except OSError:
            break
        if not b:
            break
        total += len(b)
        if total > REPORT_CAP:
            out.report_overflow = True
            pending = b""
            continue
        pending += b
        *lines, pending = pending.split(b"\n")
        for line in lines:
            try:
                ev = json.loads(line.decode("utf-8"))
            except (ValueError, UnicodeDecodeError, RecursionError):
                continue
            if isinstance(ev, dict):
                out.events.append(ev)


def _stop(proc) -> None:
    """TERM the launcher's group (in plain-process mode the launcher then kills what it reaped),
    then KILL it."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except OSError:
        pass
    try:
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        pass
    _kill_group(proc)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _kill_group(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass


def _remove_tree(p: Path) -> None:
    """Remove a scratch tree a submission wrote to (no symlink is followed; odd modes fixed)."""
    def onerror(func, path, exc):
        try:
            os.chmod(path, stat.S_IRWXU)
            func(path)
        except OSError:
            pass
    for _ in range(3):
        if not os.path.lexists(p):
            return
        for d, dirs, files in os.walk(p):
            for x in dirs:
                try:
                    os.chmod(os.path.join(d, x), stat.S_IRWXU, follow_symlinks=False)
                except (OSError, NotImplementedError):
                    pass
        shutil.rmtree(p, onerror=onerror)
