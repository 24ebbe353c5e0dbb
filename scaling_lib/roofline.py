"""Roofline model: compute time, communication time, arithmetic intensity, matmul costs.

Units: SI. Book: chapter 1 (chapters/01_roofline.ipynb), used by every later chapter.
A time estimate is two clocks, T_math = FLOPs / C and T_comms = bytes / W; with perfect overlap
the runtime is max of the two (lower bound), with none it is their sum (upper bound).
Ignores: partial overlap, kernel launch overheads, caches between HBM and the compute units.
All functions accept numpy arrays where a reader would sweep (B, D, F, N...).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import hardware
from .units import (check_nonneg, check_positive, dtype_bytes, fmt_num, fmt_time)

__all__ = [
    "t_math", "t_comms", "bounds", "arithmetic_intensity", "attainable_flops",
    "dot_flops", "dot_bytes", "dot_intensity", "matmul_flops", "matmul_bytes", "matmul_intensity",
    "batched_weight_matmul_intensity", "RooflineResult", "roofline", "matmul_time",
    "attainable_flops_vs_batch", "tiled_matmul_intensity", "realistic_time", "critical_batch",
    "sharded_contraction_time", "op_point",
]


from .units import as_float_or_array as _scalar_or_array  # noqa: E402


def t_math(flops, peak_flops):
    """Compute time FLOPs / C in seconds. Book: eq-01-tmath."""
    return _scalar_or_array(check_nonneg("flops", flops) / check_positive("peak_flops", peak_flops))


def t_comms(nbytes, bandwidth):
    """Communication time bytes / W in seconds (HBM, ICI, DCN, PCIe alike). Book: eq-01-tcomms."""
    return _scalar_or_array(check_nonneg("nbytes", nbytes) / check_positive("bandwidth", bandwidth))


def bounds(t_math_s, t_comms_s):
    """(lower, upper) = (max, sum) of the two clocks. Book: eq-01-bounds."""
    a = check_nonneg("t_math", t_math_s)
    b = check_nonneg("t_comms", t_comms_s)
    return _scalar_or_array(np.maximum(a, b)), _scalar_or_array(np.add(a, b))


def arithmetic_intensity(flops, nbytes):
    """FLOPs per byte moved. Book: eq-01-intensity."""
    return _scalar_or_array(check_nonneg("flops", flops) / check_positive("nbytes", nbytes))


def attainable_flops(intensity, peak_flops, bandwidth):
    """The roofline curve min(C, I·W) in FLOPs/s. Book: eq-01-roofline."""
    i = check_nonneg("intensity", intensity)
    c = check_positive("peak_flops", peak_flops)
    w = check_positive("bandwidth", bandwidth)
    return _scalar_or_array(np.minimum(c, i * w))


# ---- dot product and matmul counts ---------------------------------------------------------

def dot_flops(N):
    """FLOPs of a length-N dot product: N multiplies + N-1 adds = 2N-1. Book: sec-01-intensity."""
    n = check_positive("N", N)
    return _scalar_or_array(2 * n - 1)


def dot_bytes(N, dtype: str = "bf16"):
    """Bytes of a dot product: read x and y, write one scalar."""
    n = check_positive("N", N)
    b = dtype_bytes(dtype)
    return _scalar_or_array(2 * n * b + b)


def dot_intensity(N, dtype: str = "bf16"):
    """(2N-1) / ((2N+1)·b): tends to 1/(2b), i.e. 1/2 FLOP per byte in bf16. Book: sec-01-intensity."""
    return _scalar_or_array(np.asarray(dot_flops(N)) / np.asarray(dot_bytes(N, dtype)))


def matmul_flops(B, D, F, exact: bool = False):
    """FLOPs of X[B,D]·W[D,F]: 2BDF (or exactly BF(2D-1)). Book: eq-01-matmul-flops."""
    b, d, f = check_positive("B", B), check_positive("D", D), check_positive("F", F)
    return _scalar_or_array(b * f * (2 * d - 1) if exact else 2 * b * d * f)


def matmul_bytes(B, D, F, x: str = "bf16", w: str = "bf16", out: str = "bf16"):
    """Bytes moved by X[B,D]·W[D,F] -> Z[B,F]: read X, read W, write Z. Book: eq-01-matmul-flops."""
    b, d, f = check_positive("B", B), check_positive("D", D), check_positive("F", F)
    return _scalar_or_array(dtype_bytes(x) * b * d + dtype_bytes(w) * d * f + dtype_bytes(out) * b * f)


def matmul_intensity(B, D, F, x: str = "bf16", w: str = "bf16", out: str = "bf16"):
    """Arithmetic intensity of a matmul; ≈ B in bf16 when B ≪ D, F. Book: eq-01-matmul-intensity."""
    return _scalar_or_array(np.asarray(matmul_flops(B, D, F)) / np.asarray(matmul_bytes(B, D, F, x, w, out)))


def batched_weight_matmul_intensity(B, D, F, dtype: str = "int8"):
    """X[B,D]·W[B,D,F]: a different matrix per row; intensity ≈ 2/b whatever B is. Book: ex-01-9."""
    b, d, f = check_positive("B", B), check_positive("D", D), check_positive("F", F)
    s = dtype_bytes(dtype)
    return _scalar_or_array(2 * b * d * f / (s * (b * d + b * d * f + b * f)))


# ---- results -------------------------------------------------------------------------------

@dataclass(frozen=True)
class RooflineResult:
    """Time bounds of one operation on one chip. All times in seconds."""

    flops: float
    nbytes: float
    peak_flops: float
    bandwidth: float
    t_math: float
    t_comms: float
    chip: str = ""
    link: str = "hbm"

    @property
    def t_lower(self) -> float:
        """Perfect overlap: max(T_math, T_comms)."""
        return max(self.t_math, self.t_comms)

    @property
    def t_upper(self) -> float:
        """No overlap: T_math + T_comms."""
        return self.t_math + self.t_comms

    @property
    def intensity(self) -> float:
        return self.flops / self.nbytes if self.nbytes else float("inf")

    @property
    def critical_intensity(self) -> float:
        return self.peak_flops / self.bandwidth

    @property
    def bound(self) -> str:
        """'compute' or 'bandwidth'."""
        return "compute" if self.t_math >= self.t_comms else "bandwidth"

    @property
    def bottleneck(self) -> str:
        """The bound in Chinese: 计算受限 / 带宽受限."""
        return "计算受限" if self.bound == "compute" else "带宽受限"

    @property
    def utilisation(self) -> float:
        """Fraction of peak reached under perfect overlap: min(1, I / I_crit)."""
        return min(1.0, self.intensity / self.critical_intensity)

    def as_dict(self) -> dict:
        return {"flops": self.flops, "bytes": self.nbytes, "t_math_s": self.t_math,
                "t_comms_s": self.t_comms, "t_lower_s": self.t_lower, "t_upper_s": self.t_upper,
                "intensity": self.intensity, "critical_intensity": self.critical_intensity,
                "bound": self.bound, "utilisation": self.utilisation}

    def _rows(self):
        return [("计算时间 T_math", fmt_time(self.t_math)),
                ("通信时间 T_comms", fmt_time(self.t_comms)),
                ("下界 max（完全重叠）", fmt_time(self.t_lower)),
                ("上界 sum（不重叠）", fmt_time(self.t_upper)),
                ("算术强度", f"{fmt_num(self.intensity)} FLOPs/字节"),
                ("临界算术强度", f"{fmt_num(self.critical_intensity)} FLOPs/字节"),
                ("峰值利用率", f"{self.utilisation:.0%}")]

    def __str__(self) -> str:
        head = f"{self.chip}（{self.link.upper()}）" if self.chip else ""
        lines = [f"{head}Roofline 估计"] + [f"  {k:<14}{v}" for k, v in self._rows()]
        lines.append(f"  结论：{self.bottleneck}")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in self._rows())
        head = f"{self.chip}（{self.link.upper()}）" if self.chip else ""
        return (f"<table><caption>{head}Roofline 估计</caption>{rows}"
                f"<tr><td><b>结论</b></td><td><b>{self.bottleneck}</b></td></tr></table>")


def roofline(flops: float, nbytes: float, chip, dtype: str = "bf16", link: str = "hbm") -> RooflineResult:
    """Time bounds of an operation with ``flops`` and ``nbytes`` on ``chip``. Book: eq-01-bounds."""
    chip = hardware.get(chip)
    f = float(check_nonneg("flops", flops, allow_array=False))
    n = float(check_nonneg("nbytes", nbytes, allow_array=False))
    c = chip.peak(dtype)
    w = chip.bandwidth(link)
    return RooflineResult(flops=f, nbytes=n, peak_flops=c, bandwidth=w, t_math=f / c,
                          t_comms=n / w, chip=chip.name, link=link)


def matmul_time(B, D, F, chip, x: str = "bf16", w: str = "bf16", out: str = "bf16",
                compute: str = "bf16", link: str = "hbm") -> RooflineResult:
    """Roofline of X[B,D]·W[D,F] on ``chip`` with the given dtypes. Book: sec-01-matmul."""
    for nm, v in (("B", B), ("D", D), ("F", F)):
        check_positive(nm, v, allow_array=False)
    return roofline(matmul_flops(B, D, F), matmul_bytes(B, D, F, x, w, out), chip,
                    dtype=compute, link=link)


def attainable_flops_vs_batch(B, D, F, chip, x: str = "bf16", w: str = "bf16", out: str = "bf16",
                              compute: str = "bf16"):
    """Attainable FLOPs/s of a matmul against batch B, with exact byte counts. Book: ex-01-8."""
    chip = hardware.get(chip)
    flops = np.asarray(matmul_flops(B, D, F), dtype=float)
    nbytes = np.asarray(matmul_bytes(B, D, F, x, w, out), dtype=float)
    t = np.maximum(flops / chip.peak(compute), nbytes / chip.hbm_bw)
    return _scalar_or_array(flops / t)


def tiled_matmul_intensity(bm, bn, bk=None, dtype: str = "bf16"):
    """Intensity of a tiled matmul with tiles bm×bk×bn: ≈ bm·bn/(bm+bn) FLOPs/byte in bf16 (the
    output write is amortised over the K loop and ignored). Book: sec-01-tiles."""
    m, n = check_positive("bm", bm), check_positive("bn", bn)
    if bk is not None:
        check_positive("bk", bk)
    b = dtype_bytes(dtype)
    # per K-step: 2·bm·bn·bk FLOPs over b·(bm·bk + bk·bn) bytes
    return _scalar_or_array(2 * m * n / (b * (m + n)))


def realistic_time(t_ideal, efficiency: float | None = None, chip=None):
    """Ideal time divided by the achievable fraction of peak (chip default: TPU 0.95, GPU 0.8)."""
    t = check_nonneg("t_ideal", t_ideal)
    if efficiency is None:
        if chip is None:
            raise ValueError("give efficiency (0 < e <= 1) or a chip to take its default from")
        efficiency = hardware.get(chip).efficiency
    e = float(check_positive("efficiency", efficiency, allow_array=False))
    if e > 1:
        raise ValueError(f"efficiency must be in (0, 1], got {e}")
    return _scalar_or_array(t / e)


def critical_batch(chip, w: str = "bf16", compute: str = "bf16", link: str = "hbm",
                   D=None, F=None, x: str = "bf16", out: str = "bf16"):
    """Batch (tokens) above which X[B,D]·W[D,F] is compute-bound. Book: eq-01-bcrit.

    Without D and F: the asymptotic rule b_w·C/(2W) (= C/W in bf16). With D and F: the exact
    crossover B* = (b_w·D·F/W) / (2DF/C − (b_x·D + b_o·F)/W), ``inf`` if it never crosses.
    """
    chip = hardware.get(chip)
    c = chip.peak(compute)
    bw = chip.bandwidth(link)
    bw_w = dtype_bytes(w)
    if D is None and F is None:
        return bw_w * c / (2 * bw)
    if D is None or F is None:
        raise ValueError("give both D and F for the exact crossover, or neither for the rule")
    d, f = check_positive("D", D), check_positive("F", F)
    num = bw_w * d * f / bw
    den = 2 * d * f / c - (dtype_bytes(x) * d + dtype_bytes(out) * f) / bw
    with np.errstate(divide="ignore", invalid="ignore"):
        res = np.where(den > 0, num / np.where(den > 0, den, 1), np.inf)
    return _scalar_or_array(res)


def sharded_contraction_time(B, D, F, chip, link_bw=None, dtype: str = "bf16") -> RooflineResult:
    """Two chips split the contracting dim D, multiply halves and swap full [B,F] partial sums.

    T_math = BDF/C per chip; T_comms = b·BF / W_link,1way (each chip sends its partial sum while
    receiving the other). Book: sec-01-two-chips.
    """
    chip = hardware.get(chip)
    b, d, f = (float(check_positive(n, v, allow_array=False)) for n, v in (("B", B), ("D", D), ("F", F)))
    w = chip.ici_link_bw_1way if link_bw is None else float(check_positive("link_bw", link_bw, allow_array=False))
    if not w:
        raise ValueError(f"{chip.name} has no ICI link bandwidth; pass link_bw")
    s = dtype_bytes(dtype)
    flops = 2 * b * (d / 2) * f
    nbytes = s * b * f
    c = chip.peak(dtype)
    return RooflineResult(flops=flops, nbytes=nbytes, peak_flops=c, bandwidth=w,
                          t_math=flops / c, t_comms=nbytes / w, chip=chip.name, link="ici_1way")


_OPS = ("matmul", "dot", "per_example_matmul", "elementwise")


def op_point(op: str, dtype: str = "bf16", **dims):
    """(intensity, flops) of a named op for plotting on a roofline.

    ops: 'matmul' (B, D, F), 'dot' (N), 'per_example_matmul' (B, D, F), 'elementwise' (N: x*y).
    """
    if op not in _OPS:
        raise ValueError(f"unknown op {op!r}; allowed: {', '.join(_OPS)}")
    if op == "matmul":
        _need(dims, "B", "D", "F")
        fl = matmul_flops(dims["B"], dims["D"], dims["F"])
        return matmul_intensity(dims["B"], dims["D"], dims["F"], dtype, dtype, dtype), fl
    if op == "dot":
        _need(dims, "N")
        return dot_intensity(dims["N"], dtype), dot_flops(dims["N"])
    if op == "elementwise":
        _need(dims, "N")
        n = check_positive("N", dims["N"])
        return _scalar_or_array(n / (3 * n * dtype_bytes(dtype))), _scalar_or_array(n)
    _need(dims, "B", "D", "F")
    fl = matmul_flops(dims["B"], dims["D"], dims["F"])
    return batched_weight_matmul_intensity(dims["B"], dims["D"], dims["F"], dtype), fl


def _need(dims, *keys):
    missing = [k for k in keys if k not in dims]
    if missing:
        raise ValueError(f"missing dimension(s) {missing}; this op needs {list(keys)}")
