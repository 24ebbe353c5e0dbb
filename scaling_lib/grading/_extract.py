"""Answer extraction that runs INSIDE a submission's kernel (in its sandbox; see ``_runner``).

The runner sends this file's source text to the kernel, where it is compiled and executed in a
private namespace (builtins only, plus ``_SPEC`` and ``_NS``), so names the notebook shadows
(``json = 3``) do not change it. It is not a line of defence: the submission controls its
kernel, so whatever comes back is only the submission's claim about its answers, which the
grader then judges in its own process.

Input (globals set by the runner):
    _SPEC  JSON text: {"id", "var", "kind", "inputs": [kwargs, ...], "out": path, "budget_s",
           "recorded": true if the value passed to check("<id>", ...) should be preferred,
           "banned": library functions a function answer may not simply call}
    _NS    the kernel's user namespace (the notebook's globals)
The sandbox's ``scaling_lib.grading.check`` records each (id, answer) it is given in
``_RECORDED``; with "recorded", the answer recorded since the last look is taken (and removed)
instead of the variable, so a variable reused by a later exercise does not matter.
Output: ``_SPEC["out"]`` is written atomically with plain JSON data:
    {"id", "value": <encoded>}                       number / numbers / choice, or a non-callable
    {"id", "cases": [{"ok": <encoded>} | {"error": "TypeError: ..."} | {"timeout": true}, ...]}
With ``_SPEC["program"]`` (an exercise that checks the compiled program), the function is a
per-device body: ``scaling_lib.xla.checks.shard_map_program(fn, **program)`` runs it, and each
"ok" case also carries ``"hlo": {"collectives": {kind: n}, "permutes": [...]}``.
Each function answer's "cases" come with "library_calls": [the banned functions (``_SPEC["banned"]``)
the submission's function called], only if any.
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


def _program(fn, args):
    """``fn`` run as a compiled shard_map program: call(**kw) -> (result, facts)."""
    state = {}

    def call(**kw):
        if "run" not in state:
            checks = __import__("scaling_lib.xla.checks", fromlist=["shard_map_program"])
            state["run"] = checks.shard_map_program(fn, **args)
        return state["run"](**kw)
    return call


def _lib_name(frame):
    """'collectives.ragged_fraction' for a frame running a scaling_lib function, else None."""
    mod = frame.f_globals.get("__name__", "")
    if not isinstance(mod, str) or not mod.startswith("scaling_lib."):
        return None
    return mod[len("scaling_lib."):] + "." + getattr(frame.f_code, "co_qualname", frame.f_code.co_name)


def _call_watched(fn, inputs, budget_s, program, banned, seen):
    """``_call_all`` with a profile hook that adds to ``seen`` the ``banned`` library functions
    (those the exercise's reference uses) called straight from code outside the library."""
    banned = set(banned or ())
    if not banned:
        return _call_all(fn, inputs, budget_s, program)
    sys = __import__("sys")

    def _hook(frame, event, arg):
        if event == "call" and frame.f_back is not None:
            name = _lib_name(frame)
            if name in banned and _lib_name(frame.f_back) is None:
                seen.add(name)

    prev = sys.getprofile()
    sys.setprofile(_hook)
    try:
        return _call_all(fn, inputs, budget_s, program)
    finally:
        sys.setprofile(prev)


def _call_all(fn, inputs, budget_s, program=False):
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
                if program:
                    out, facts = out
                    cases.append({"ok": _enc(out), "hlo": facts})
                else:
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


_NOTHING = object()


def _recorded(ex_id):
    """The answer last passed to the sandbox's check(ex_id, ...) since the last look, or _NOTHING."""
    try:
        mod = __import__("sys").modules.get("scaling_lib.grading")
        rec = getattr(mod, "_RECORDED", None)
        if isinstance(rec, dict) and ex_id in rec:
            return rec.pop(ex_id)
    except Exception:
        pass
    return _NOTHING


def _main():
    spec = _json.loads(_SPEC)  # noqa: F821  (set by the grader)
    ns = _NS  # noqa: F821
    name = spec["var"]
    result = {"id": spec["id"]}
    v = _recorded(spec["id"]) if spec.get("recorded") else _NOTHING
    if v is not _NOTHING:
        result["recorded"] = True
    elif name in ns:
        v = ns[name]
    if v is _NOTHING:
        result["value"] = {"$": "missing"}
    else:
        if spec["kind"] == "function" and callable(v) and not isinstance(v, type):
            prog = spec.get("program")
            fn = _program(v, prog) if isinstance(prog, dict) else v
            seen = set()
            result["cases"] = _call_watched(fn, spec["inputs"], float(spec["budget_s"]), isinstance(prog, dict),
                                            spec.get("banned", ()), seen)
            if seen:
                result["library_calls"] = sorted(seen)
        else:
            result["value"] = _enc(v)
    text = _json.dumps(result, allow_nan=True)
    tmp = spec["out"] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    _os.replace(tmp, spec["out"])


if "_SPEC" in globals():  # only when the grader runs this source in a kernel
    _main()
