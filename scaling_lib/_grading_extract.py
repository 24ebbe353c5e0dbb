"""Answer extraction that runs INSIDE a submission's kernel (used by ``scaling_lib.grading``).

The grader never imports this module in the kernel: it reads this file's source text in its own
process and sends it to the kernel, where it is compiled and executed in a private namespace
(builtins only, plus ``_SPEC`` and ``_NS``). So a submission that shadows names (``json = 3``),
edits ``scaling_lib`` or redefines ``check`` cannot change what this code is; it can only change
the values it finds in its own namespace, which are the answers it is graded on.

Input (globals set by the grader):
    _SPEC  JSON text: {"id", "var", "kind", "inputs": [kwargs, ...], "out": path, "budget_s"}
    _NS    the kernel's user namespace (the notebook's globals)
Output: ``_SPEC["out"]`` is written atomically with plain JSON data:
    {"id", "value": <encoded>}                       number / numbers / choice, or a non-callable
    {"id", "cases": [{"ok": <encoded>} | {"error": "TypeError: ..."} | {"timeout": true}, ...]}
Encoding: numbers, strings, lists and null as themselves; anything else as a small dict with a
"$" key ("ellipsis", "missing", "bool", "array", "callable", "opaque"). Nothing is pickled.
"""
import json as _json
import os as _os
import signal as _signal
import time as _time

_MAX_ITEMS = 10000
_MAX_STR = 1000


class _GraderTimeout(BaseException):
    pass


def _opaque(v):
    t = type(v)
    return {"$": "opaque", "type": (t.__module__ + "." + t.__qualname__)[:100]}


def _enc(v, depth=0):
    if depth > 4:
        return _opaque(v)
    if v is Ellipsis:
        return {"$": "ellipsis"}
    if v is None:
        return None
    if isinstance(v, bool):
        return {"$": "bool", "v": bool(v)}
    if isinstance(v, int):
        try:
            return int(v) if abs(v) < 2**53 else float(v)
        except OverflowError:
            return {"$": "opaque", "type": "int (too large)"}
    if isinstance(v, float):
        return float(v)
    if isinstance(v, str):
        return str(v)[:_MAX_STR]
    if isinstance(v, complex):
        return {"$": "opaque", "type": "complex"}
    shape = getattr(v, "shape", None)
    tolist = getattr(v, "tolist", None)
    if shape is not None and callable(tolist) and not isinstance(v, type):
        try:
            shape = [int(s) for s in shape]
        except Exception:
            return _opaque(v)
        size = 1
        for s in shape:
            size *= s
        if size > _MAX_ITEMS:
            return {"$": "array", "shape": shape, "v": None}
        try:
            data = tolist()
        except Exception:
            return _opaque(v)
        if not shape:
            return _enc(data, depth + 1)
        return {"$": "array", "shape": shape, "v": _enc(data, depth + 1)}
    if isinstance(v, (list, tuple)):
        if len(v) > _MAX_ITEMS:
            return _opaque(v)
        return [_enc(x, depth + 1) for x in v]
    if callable(v):
        return {"$": "callable", "type": type(v).__name__[:100]}
    try:  # other real numbers (Fraction, Decimal, ...)
        import numbers as _numbers
        if isinstance(v, _numbers.Real):
            return float(v)
    except Exception:
        pass
    return _opaque(v)


def _call_all(fn, inputs, budget_s):
    """Call ``fn(**kw)`` on each input; a SIGALRM timer caps the total time."""
    cases = []
    deadline = _time.monotonic() + budget_s

    def _alarm(signum, frame):
        raise _GraderTimeout()

    try:
        old = _signal.signal(_signal.SIGALRM, _alarm)
    except ValueError:  # not in the main thread: no timer (the per-cell timeout still applies)
        old = None
    try:
        for kw in inputs:
            left = deadline - _time.monotonic()
            if left <= 0:
                cases.append({"timeout": True})
                continue
            try:
                if old is not None:
                    _signal.setitimer(_signal.ITIMER_REAL, left)
                try:
                    out = fn(**kw)
                finally:
                    if old is not None:
                        _signal.setitimer(_signal.ITIMER_REAL, 0)
                cases.append({"ok": _enc(out)})
            except _GraderTimeout:
                cases.append({"timeout": True})
            except KeyboardInterrupt:
                raise
            except BaseException as e:  # the reader's code: anything, including SystemExit
                cases.append({"error": (type(e).__name__ + ": " + str(e))[:300]})
    finally:
        if old is not None:
            _signal.signal(_signal.SIGALRM, old)
    return cases


def _main():
    spec = _json.loads(_SPEC)  # noqa: F821  (set by the grader)
    ns = _NS  # noqa: F821
    name = spec["var"]
    result = {"id": spec["id"]}
    if name not in ns:
        result["value"] = {"$": "missing"}
    else:
        v = ns[name]
        if spec["kind"] == "function" and callable(v) and not isinstance(v, type):
            result["cases"] = _call_all(v, spec["inputs"], float(spec["budget_s"]))
        else:
            result["value"] = _enc(v)
    text = _json.dumps(result, allow_nan=True)
    tmp = spec["out"] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    _os.replace(tmp, spec["out"])


if "_SPEC" in globals():  # only when the grader runs this source in a kernel
    _main()
