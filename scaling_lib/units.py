"""Units, dtype sizes and Chinese-friendly number formatting.

Units: SI everywhere inside the library (seconds, bytes, FLOPs, FLOPs/s, bytes/s).
Book: sec-00-notation (第0章 符号表).
This module ignores nothing and imports nothing but the standard library and numpy.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "KILO", "MEGA", "GIGA", "TERA", "PETA", "EXA",
    "KiB", "MiB", "GiB", "TiB",
    "US", "MS", "MINUTE", "HOUR", "DAY",
    "DTYPE_BYTES", "dtype_bytes", "check_int", "as_float_or_array", "check_positive", "check_nonneg", "check_number",
    "fmt_time", "fmt_bytes", "fmt_flops", "fmt_rate", "fmt_bw", "fmt_num",
]

KILO, MEGA, GIGA, TERA, PETA, EXA = 1e3, 1e6, 1e9, 1e12, 1e15, 1e18
KiB, MiB, GiB, TiB = 2**10, 2**20, 2**30, 2**40
US, MS = 1e-6, 1e-3
MINUTE, HOUR, DAY = 60.0, 3600.0, 86400.0

#: Bytes per element of each dtype the book uses.
DTYPE_BYTES: dict[str, float] = {
    "f32": 4, "fp32": 4, "float32": 4,
    "bf16": 2, "bfloat16": 2, "f16": 2, "fp16": 2, "float16": 2,
    "fp8": 1, "float8": 1, "int8": 1, "i8": 1,
    "int4": 0.5, "fp4": 0.5,
}


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of ``dtype`` ('bf16', 'f32', 'int8', 'fp8', 'int4', ...)."""
    if not isinstance(dtype, str):
        raise TypeError(f"dtype must be a string such as 'bf16', got {type(dtype).__name__} {dtype!r}")
    key = dtype.strip().lower()
    if key not in DTYPE_BYTES:
        allowed = ", ".join(sorted(DTYPE_BYTES))
        raise ValueError(f"unknown dtype {dtype!r}; allowed: {allowed}")
    return DTYPE_BYTES[key]


def check_number(name: str, value, *, allow_array: bool = True):
    """Return ``value`` as float or float ndarray; raise TypeError if it is not numeric."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got a bool ({value!r})")
    if isinstance(value, numbers.Real):
        v = float(value)
        if math.isnan(v):
            raise ValueError(f"{name} is NaN; give a finite number")
        return v
    if allow_array and isinstance(value, (np.ndarray, list, tuple)):
        arr = np.asarray(value)
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"{name} must be numeric, got an array of dtype {arr.dtype}")
        arr = arr.astype(float)
        if np.isnan(arr).any():
            raise ValueError(f"{name} contains NaN")
        return arr
    raise TypeError(f"{name} must be a number{' or array of numbers' if allow_array else ''}, "
                    f"got {type(value).__name__} {value!r}")


def check_int(name: str, value, minimum: int = 1) -> int:
    """Validate an integer (numpy integers allowed, bools not) that is >= ``minimum``; return an int."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def as_float_or_array(x):
    """A Python float for a scalar, a float ndarray otherwise (results of vectorised formulas)."""
    a = np.asarray(x, dtype=float)
    return float(a) if a.ndim == 0 else a


def check_positive(name: str, value, *, allow_array: bool = True):
    """Validate that ``value`` is a (possibly array of) number(s) > 0 and return it as float(s)."""
    v = check_number(name, value, allow_array=allow_array)
    if np.any(np.asarray(v) <= 0):
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return v


def check_nonneg(name: str, value, *, allow_array: bool = True):
    """Validate that ``value`` is a (possibly array of) number(s) >= 0 and return it as float(s)."""
    v = check_number(name, value, allow_array=allow_array)
    if np.any(np.asarray(v) < 0):
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return v


def _sig(x: float, digits: int) -> str:
    """Format with ``digits`` significant digits, no exponent for ordinary magnitudes."""
    if x == 0:
        return "0"
    s = f"{x:.{digits}g}"
    if "e" in s:  # fall back to fixed for values like 1e+03
        mag = int(math.floor(math.log10(abs(x))))
        decimals = max(digits - 1 - mag, 0)
        s = f"{x:.{decimals}f}"
    return s


def fmt_num(x: float, digits: int = 3) -> str:
    """A plain number with ``digits`` significant digits, e.g. 1.97e14 -> '1.97e14'."""
    x = float(x)
    if math.isinf(x):
        return "∞"
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e6:
        return _sig(x, digits)
    s = f"{x:.{digits}g}"
    if "e" not in s:  # e.g. 1234567 with digits=7
        s = f"{x:.{digits - 1}e}"
    mant, exp = s.split("e")
    if "." in mant:
        mant = mant.rstrip("0").rstrip(".")
    return f"{mant}e{int(exp)}"


def fmt_time(seconds: float, digits: int = 3) -> str:
    """Seconds in the most readable unit: '1.01 ms', '7.3 小时', '17.0 天'."""
    s = float(check_nonneg("seconds", seconds, allow_array=False))
    if math.isinf(s):
        return "∞"
    if s == 0:
        return "0 s"
    for limit, scale, unit in ((1e-6, 1e-9, "ns"), (1e-3, 1e-6, "µs"), (1.0, 1e-3, "ms"),
                               (MINUTE, 1.0, "s"), (HOUR, MINUTE, "分钟"), (DAY, HOUR, "小时"),
                               (365 * DAY, DAY, "天")):
        if s < limit:
            return f"{_sig(s / scale, digits)} {unit}"
    return f"{_sig(s / (365 * DAY), digits)} 年"


def _fmt_prefixed(x: float, unit: str, digits: int, base: float = 1e3,
                  prefixes=("", "K", "M", "G", "T", "P", "E", "Z")) -> str:
    x = float(x)
    if math.isinf(x):
        return f"∞ {unit}"
    if x == 0:
        return f"0 {unit}"
    i = 0
    while abs(x) >= base and i < len(prefixes) - 1:
        x /= base
        i += 1
    return f"{_sig(x, digits)} {prefixes[i]}{unit}"


def fmt_bytes(n: float, digits: int = 3, binary: bool = False) -> str:
    """Bytes with decimal prefixes (GB = 1e9) or, with ``binary=True``, binary ones (GiB)."""
    n = float(check_nonneg("bytes", n, allow_array=False))
    if binary:
        return _fmt_prefixed(n, "B", digits, base=1024,
                             prefixes=("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi"))
    return _fmt_prefixed(n, "B", digits)


def fmt_flops(x: float, digits: int = 3) -> str:
    """A FLOP count, e.g. 6.3e24 -> '6.3e24 FLOPs' (counts are shown in e-notation)."""
    x = float(check_nonneg("flops", x, allow_array=False))
    return f"{fmt_num(x, digits)} FLOPs"


def fmt_rate(x: float, digits: int = 3) -> str:
    """A compute rate, e.g. 1.97e14 -> '1.97e14 FLOPs/s'."""
    x = float(check_nonneg("rate", x, allow_array=False))
    return f"{fmt_num(x, digits)} FLOPs/s"


def fmt_bw(x: float, digits: int = 3) -> str:
    """A bandwidth, e.g. 8.2e11 -> '8.2e11 B/s'."""
    x = float(check_nonneg("bandwidth", x, allow_array=False))
    return f"{fmt_num(x, digits)} B/s"
