"""The kernel a submission runs in (inside its sandbox): an ordinary IPython kernel with limits.

The grader copies this file into the sandbox as ``/grader/bin/kernel.py``; the runner starts it
as ``python -s -B kernel.py --memory-mb N -f CONNECTION_FILE``. It sets, before anything else is
imported:

- (when the sandbox has no memory cgroup, N > 0) a memory limit with ``RLIMIT_DATA`` (not ``RLIMIT_AS``): JAX/XLA reserve gigabytes of virtual
  address space that is never touched (an ``RLIMIT_AS`` of 1.5 GB aborts ``import jax`` with 8
  simulated devices), while ``RLIMIT_DATA`` counts only writable private memory (heap, anonymous
  mappings, thread stacks) since Linux 4.7. A submission that allocates more gets ``MemoryError``
  (or its kernel dies); either way only that submission is affected.
- ``PR_SET_PDEATHSIG`` (Linux): the kernel is killed when the runner that started it dies, so a
  kernel stuck in C code cannot outlive a runner that was killed for the notebook time limit.

Then it starts ipykernel with the remaining arguments. Not meant to be used by hand.
"""
from __future__ import annotations

import os
import signal
import sys


def _limit_memory(mb: int) -> None:
    try:
        import resource
    except ImportError:  # not POSIX
        return
    if mb <= 0:
        return
    limit = int(mb) << 20
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        return
    parent = os.environ.get("JPY_PARENT_PID")
    if parent and parent.isdigit() and os.getppid() != int(parent):
        os._exit(1)  # the parent died before prctl took effect


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    mb = 0
    if "--memory-mb" in argv:
        i = argv.index("--memory-mb")
        mb = int(argv[i + 1])
        del argv[i:i + 2]
    _limit_memory(mb)
    _die_with_parent()
    from ipykernel import kernelapp
    kernelapp.launch_new_instance(argv=argv)


if __name__ == "__main__":
    main()
