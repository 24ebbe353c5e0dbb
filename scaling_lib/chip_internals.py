"""Inside one chip: TPU MXU/VPU arithmetic, padding, systolic arrays, pipelined streaming; GPU
SMs, CUDA cores, Tensor-Core FLOPs per cycle and register-limited occupancy.

Units: SI (FLOPs/s, Hz, bytes, seconds). Book: 第2章 (sec-02-chip, sec-02-pipeline,
sec-02-systolic, sec-02-vpu: formulas G1-G7, G11) and 第12章 (sec-12-sm: F1-F4, F7).
Ignores: clock boosting dynamics, instruction-issue limits, bank conflicts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import hardware
from .units import check_nonneg, check_positive

__all__ = ["mxu_flops_per_cycle", "chip_peak_flops", "vpu_peak_flops", "pad_to", "mxu_efficiency",
           "pcie_matmul_intensity", "cuda_cores", "vector_flops", "tc_flops_per_cycle",
           "resident_warps", "elementwise_time", "onchip_memory_totals", "SystolicTrace",
           "systolic_matmul", "pipeline_schedule", "pipeline_time", "decode_latency_floor"]


from .units import check_int as _int, as_float_or_array as _arr  # noqa: E402


# ---- TPU ---------------------------------------------------------------------------------------

def mxu_flops_per_cycle(size: int = 128) -> int:
    """FLOPs per cycle of one S×S systolic MXU: 2·S² (G1; 32,768 at S = 128)."""
    s = _int("size", size)
    return 2 * s * s


def chip_peak_flops(n_cores: int, n_mxu: int, size: int, clock_hz) -> float:
    """C = cores · MXUs · 2S² · f (G2). v5e: 1·4·32768·1.5e9 = 1.97e14."""
    return _int("n_cores", n_cores) * _int("n_mxu", n_mxu) * mxu_flops_per_cycle(size) * \
        float(check_positive("clock_hz", clock_hz, allow_array=False))


def vpu_peak_flops(n_cores: int, alus_per_lane: int, clock_hz, lanes: int = 128,
                   sublanes: int = 8) -> float:
    """VPU FLOPs/s = cores · sublanes · lanes · ALUs · f (G6; v5p 7.2e12 per core)."""
    return (_int("n_cores", n_cores) * _int("sublanes", sublanes) * _int("lanes", lanes)
            * _int("alus_per_lane", alus_per_lane)
            * float(check_positive("clock_hz", clock_hz, allow_array=False)))


def pad_to(n, multiple: int = 128):
    """n rounded up to a multiple (MXU tile)."""
    m = _int("multiple", multiple)
    n = check_positive("n", n)
    return _arr(np.ceil(np.asarray(n) / m) * m)


def mxu_efficiency(n, size: int = 128):
    """Useful fraction of MXU work for a dimension n padded to the array size: n/(S·⌈n/S⌉) (G5)."""
    return _arr(check_positive("n", n) / pad_to(n, size))


def pcie_matmul_intensity(B, D):
    """Exact intensity of bf16 x[B,D]·W[D,4D] streamed over PCIe (G11): 8BD²/(2(5BD + 4D²))."""
    b = check_positive("B", B)
    d = check_positive("D", D)
    return _arr(8 * b * d * d / (2 * (5 * b * d + 4 * d * d)))


def decode_latency_floor(n_params, bytes_per_param, n_chips, chip) -> float:
    """Per-token decode latency floor: every weight streams from HBM once (G8, P2.7)."""
    p = float(check_positive("n_params", n_params, allow_array=False))
    b = float(check_positive("bytes_per_param", bytes_per_param, allow_array=False))
    n = _int("n_chips", n_chips)
    return p * b / (n * hardware.get(chip).hbm_bw)


# ---- GPU -----------------------------------------------------------------------------------------

def _gpu(chip):
    g = hardware.get(chip)
    if g.family != "gpu":
        raise ValueError(f"{g.name} is not a GPU")
    return g


def cuda_cores(chip) -> int:
    """fp32 CUDA cores = SMs · 4 subpartitions · lanes (F1; H100 16,896, B200 18,944)."""
    g = _gpu(chip)
    return g.cores * g.subpartitions_per_sm * g.fp32_lanes_per_subpartition


def vector_flops(chip, clock_hz=None, fma: bool = False) -> float:
    """Vector (CUDA-core) fp32 FLOPs/s = cores · f · (2 if FMA counted) (F2).
    Default clock: the boost clock of the catalogue."""
    g = _gpu(chip)
    f = clock_hz if clock_hz is not None else g.clock_hz
    if f is None:
        raise ValueError(f"{g.name} has no clock in the catalogue; pass clock_hz")
    return cuda_cores(g) * float(check_positive("clock_hz", f, allow_array=False)) * (2 if fma else 1)


def tc_flops_per_cycle(chip, clock_hz, dtype: str = "bf16") -> float:
    """Dense FLOPs per Tensor Core per cycle: C / (SMs · 4 · f) (F3; H100 ≈ 1024)."""
    g = _gpu(chip)
    f = float(check_positive("clock_hz", clock_hz, allow_array=False))
    return g.peak(dtype) / (g.cores * 4 * f)


def resident_warps(regs_per_thread: int, regs_per_sm: int = 65536, max_warps: int = 64) -> int:
    """Warps that fit on one SM when each thread uses ``regs_per_thread`` 32-bit registers (F4)."""
    r = _int("regs_per_thread", regs_per_thread)
    if r > 256:
        raise ValueError(f"a thread can use at most 256 registers, got {r}")
    return min(_int("max_warps", max_warps), _int("regs_per_sm", regs_per_sm) // (32 * r))


def elementwise_time(n, chip, bytes_per_elem: int = 4, n_inputs: int = 2, n_outputs: int = 1,
                     clock_hz=None):
    """Roofline time of an elementwise op on n elements: max(n/C_vec, bytes/W_hbm) (F7)."""
    g = _gpu(chip)
    n = check_positive("n", n)
    nbytes = n * bytes_per_elem * (n_inputs + n_outputs)
    return _arr(np.maximum(n / vector_flops(g, clock_hz), nbytes / g.hbm_bw))


def onchip_memory_totals(chip) -> dict:
    """Total SMEM and register bytes over all SMs (P1.5)."""
    g = _gpu(chip)
    return {"smem": g.cores * g.smem_bytes_per_sm, "registers": g.cores * g.regs_bytes_per_sm,
            "tmem": g.cores * g.tmem_bytes_per_sm}


# ---- systolic array ----------------------------------------------------------------------

@dataclass(frozen=True)
class SystolicTrace:
    """Cycle-by-cycle activity of a weight-stationary systolic array.

    ``active[t]`` is an (S, S) bool array: which cells did a multiply-add at cycle t.
    ``out`` is the computed X @ W. ``n_cycles`` includes fill and drain.
    """

    active: np.ndarray
    out: np.ndarray
    n_cycles: int

    @property
    def utilisation(self) -> float:
        return float(self.active.mean())


def systolic_matmul(X, W) -> SystolicTrace:
    """Simulate X[M,S] @ W[S,N] on an S×N weight-stationary array (cell (k, j) holds W[k, j]).

    Row m of X enters cell (k, 0) at cycle m + k (skewed), moves right one cell per cycle; the
    partial sum of output (m, j) moves down column j one cell per cycle, so cell (k, j) works
    on row m at cycle t = m + k + j. Output (m, j) leaves the bottom at cycle m + S − 1 + j.
    """
    X = np.asarray(X, dtype=float)
    W = np.asarray(W, dtype=float)
    if X.ndim != 2 or W.ndim != 2 or X.shape[1] != W.shape[0]:
        raise ValueError(f"need X[M,S] and W[S,N] with matching S, got {X.shape} and {W.shape}")
    M, S = X.shape
    N = W.shape[1]
    T = M + S + N - 2
    active = np.zeros((T, S, N), dtype=bool)
    psum = np.zeros((M, N))
    for t in range(T):
        for k in range(S):
            for j in range(N):
                m = t - k - j
                if 0 <= m < M:
                    active[t, k, j] = True
                    psum[m, j] += X[m, k] * W[k, j]
    return SystolicTrace(active=active, out=psum, n_cycles=T)


# ---- pipelined streaming (HBM -> VMEM -> compute -> VMEM -> HBM) ---------------------------

def pipeline_schedule(n_chunks: int, t_load, t_compute, t_store, n_buffers: int = 2,
                      shared_hbm: bool = False):
    """Event schedule of a chunked, double-buffered stream (one DMA-in engine, one compute unit,
    one DMA-out engine). Returns a list of (unit, chunk, start, end), unit in {'load','compute',
    'store'}. A load may start only when one of ``n_buffers`` input buffers is free.

    ``shared_hbm=True``: reads and writes share one HBM channel (one DMA queue), so a load and a
    store never overlap; see ``shared_hbm_schedule``. The default keeps two independent
    channels, the simpler model of G17."""
    if not isinstance(shared_hbm, bool):
        raise TypeError(f"shared_hbm must be True or False, got {shared_hbm!r}")
    if shared_hbm:
        return shared_hbm_schedule(n_chunks, t_load, t_compute, t_store, n_buffers)
    n = _int("n_chunks", n_chunks)
    nb = _int("n_buffers", n_buffers)
    tl = float(check_nonneg("t_load", t_load, allow_array=False))
    tc = float(check_nonneg("t_compute", t_compute, allow_array=False))
    ts = float(check_nonneg("t_store", t_store, allow_array=False))
    ev = []
    load_end = [0.0] * n
    comp_end = [0.0] * n
    store_end = [0.0] * n
    free_load = free_comp = free_store = 0.0
    for i in range(n):
        start = free_load if i < nb else max(free_load, comp_end[i - nb])
        load_end[i] = start + tl
        free_load = load_end[i]
        ev.append(("load", i, start, load_end[i]))
        cs = max(load_end[i], free_comp, store_end[i - nb] if i >= nb else 0.0)
        comp_end[i] = cs + tc
        free_comp = comp_end[i]
        ev.append(("compute", i, cs, comp_end[i]))
        ss = max(comp_end[i], free_store)
        store_end[i] = ss + ts
        free_store = store_end[i]
        ev.append(("store", i, ss, store_end[i]))
    return ev


def pipeline_time(n_chunks: int, t_load, t_compute, t_store, n_buffers: int = 2,
                  shared_hbm: bool = False) -> float:
    """Makespan of ``pipeline_schedule``: ≈ n·max(stage) + the other stages once (G17); with
    ``shared_hbm`` at least n·(t_load + t_store), the channel's total busy time."""
    return max(e[3] for e in pipeline_schedule(n_chunks, t_load, t_compute, t_store, n_buffers,
                                               shared_hbm=shared_hbm))


def shared_hbm_schedule(n_chunks: int, t_load, t_compute, t_store, n_buffers: int = 2):
    """``pipeline_schedule`` when reads (HBM→VMEM) and writes (VMEM→HBM) share one HBM channel.

    One DMA queue serves the loads and stores one at a time, each as soon as it is ready and the
    channel is free: the next load when an input buffer is free (chunk i − ``n_buffers`` has
    been computed), the next store when its chunk is computed; if both are ready, the one that
    became ready first goes first (a tie goes to the store, which frees an output buffer). The
    compute unit is as in ``pipeline_schedule``: chunk i after its load and after chunk
    i − ``n_buffers`` left the output buffer. Same event format; the channel is busy
    n·(t_load + t_store) in total, a lower bound on the makespan.
    """
    n = _int("n_chunks", n_chunks)
    nb = _int("n_buffers", n_buffers)
    tl = float(check_nonneg("t_load", t_load, allow_array=False))
    tc = float(check_nonneg("t_compute", t_compute, allow_array=False))
    ts = float(check_nonneg("t_store", t_store, allow_array=False))
    load_end = [None] * n
    comp_end = [None] * n
    store_end = [None] * n
    ev = []
    ch_free = comp_free = 0.0
    nl = nc = ns = 0                      # next load, compute, store
    while ns < n:
        # the compute unit takes every chunk whose inputs are known, in order
        while nc < n and load_end[nc] is not None and (nc < nb or store_end[nc - nb] is not None):
            start = max(load_end[nc], comp_free, store_end[nc - nb] if nc >= nb else 0.0)
            comp_end[nc] = comp_free = start + tc
            ev.append(("compute", nc, start, comp_end[nc]))
            nc += 1
        load_ready = None
        if nl < n and (nl < nb or comp_end[nl - nb] is not None):
            load_ready = comp_end[nl - nb] if nl >= nb else 0.0
        store_ready = comp_end[ns] if ns < nc else None
        if store_ready is not None and (load_ready is None or store_ready <= load_ready):
            start = max(ch_free, store_ready)
            store_end[ns] = ch_free = start + ts
            ev.append(("store", ns, start, store_end[ns]))
            ns += 1
        elif load_ready is not None:
            start = max(ch_free, load_ready)
            load_end[nl] = ch_free = start + tl
            ev.append(("load", nl, start, load_end[nl]))
            nl += 1
        else:                              # cannot happen: some op is always ready
            raise AssertionError("shared-HBM stream deadlocked")
    order = {"load": 0, "compute": 1, "store": 2}
    return sorted(ev, key=lambda e: (e[1], order[e[0]]))


__all__ += ["shared_hbm_schedule"]
