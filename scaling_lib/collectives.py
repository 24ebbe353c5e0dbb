"""What collectives cost: AllGather, ReduceScatter, AllReduce, AllToAll and permute on rings,
TPU tori, multi-slice DCN, NVLink nodes and fat trees (with and without SHARP).

Units: SI (bytes, seconds, bytes/s). Book: 第2章 (preview), 第3章 (sec-03-collectives: the TPU
formulas), 第12章 (sec-12-collectives: GPU nodes and fat trees).

What ``nbytes`` means (the book's V, always the size of the FULL logical array; ch. 3):

- ``all_gather``: the gathered array one device holds afterwards (V = gathered bytes).
- ``reduce_scatter``: the unreduced array one device holds before (V = unreduced bytes per device).
- ``all_reduce``: the array being summed (V = unreduced bytes per device = result size).
- ``all_to_all``: the whole logical array summed over the devices of the collective (V = total
  bytes; each device holds V/N before and after). Chapter 3's V and chapter 12's B (F16).
- ``permute``: the bytes EACH device sends (its whole shard), e.g. one step of a ring.

Models (bandwidth term, latency term; ``total`` = the larger of the two for the collectives,
as in ch. 3's max(T_min·hops, V/W); for ``permute`` they add, as a point-to-point transfer):

- Ring/torus axis with wraparound: AG = V/W_ici (W_ici = 2 × one-way link), ⌊N/2⌋ hops; without
  wraparound (a line): AG = (N−1)/N · V/W_1way, N−1 hops (≈2× slower). Several axes at once share
  the work: AG = V / Σ_axes(axis bandwidth) (= V/(n_axes·W_ici) on full tori), hops add up.
  RS = AG; AR = 2·AG. AllToAll = V·max_i(n_i/c_i)/(2·N·W_ici) with c_i = 2 links per cut for a
  wrapped axis, 1 for a line (= V·max(n_i)/(4·N·W_ici) on a torus; V/(4·W_ici) on a 1D ring).
- Multi-slice: hierarchical (ICI inside each slice, DCN between slices with per-chip egress).
- NVLink node (per-GPU bandwidth W, N GPUs): AG = RS = V(N−1)/(N·W); AR = 2× or, with SHARP,
  V/W; AllToAll = V(N−1)/(N²·W), ragged top-k scaled by ``ragged_fraction``.
- Fat tree (F19/F22): AG = V·max_i (D_i−1)/D_i · S_{i−1}/(max(Y, S_{i−1})·W_i) over the levels the
  collective spans; cross-node AllToAll = V(M−1)/(M²·W_node) (F20).

Ignores: congestion from other traffic, protocol overheads (real NCCL reaches ~80 % of peak only
for GB-sized messages), the exact (N+2)/(2N) factor of a 1D AllToAll (see ``alltoall_ring_exact``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import topology as topo_mod
from .topology import FatTree, GpuCluster, MultiSlice, NvlinkNode, Torus
from .units import check_nonneg, check_positive

__all__ = ["KINDS", "CollectiveResult", "collective_time", "ring_time", "ragged_fraction",
           "bus_bandwidth", "sharp_speedup", "latency_threshold_bytes", "alltoall_ring_exact",
           "sharded_allgather_time", "crossover_bytes", "ring_schedule", "REGIME_BW",
           "REGIME_LAT"]

KINDS = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all", "permute")
_ALIASES = {"ag": "all_gather", "allgather": "all_gather", "rs": "reduce_scatter",
            "reducescatter": "reduce_scatter", "ar": "all_reduce", "allreduce": "all_reduce",
            "psum": "all_reduce", "a2a": "all_to_all", "alltoall": "all_to_all",
            "ppermute": "permute", "collective_permute": "permute", "p2p": "permute"}
KIND_ZH = {"all_gather": "AllGather", "reduce_scatter": "ReduceScatter", "all_reduce": "AllReduce",
           "all_to_all": "AllToAll", "permute": "点对点置换（permute）"}
REGIME_BW = "带宽受限"
REGIME_LAT = "延迟受限"


def _kind(kind) -> str:
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a string, got {type(kind).__name__} {kind!r}")
    k = kind.strip().lower().replace("-", "_").replace(" ", "_")
    k = _ALIASES.get(k.replace("_", ""), _ALIASES.get(k, k))
    if k not in KINDS:
        raise ValueError(f"unknown collective {kind!r}; allowed: {', '.join(KINDS)}")
    return k


from .units import as_float_or_array as _arr  # noqa: E402


@dataclass(frozen=True)
class CollectiveResult:
    """Cost of one collective. Times in seconds (floats, or arrays when ``nbytes`` was an array).

    ``levels``: per-level bandwidth times for hierarchical networks ((name, seconds), ...).
    """

    kind: str
    nbytes: object
    topology: str
    axes: tuple
    n_devices: int
    t_bandwidth: object
    t_latency: object
    total: object
    levels: tuple = ()
    note: str = ""

    @property
    def regime(self):
        """'带宽受限' or '延迟受限' (an array of them for array inputs)."""
        lat = np.asarray(self.t_latency) > np.asarray(self.t_bandwidth)
        if lat.ndim == 0:
            return REGIME_LAT if bool(lat) else REGIME_BW
        return np.where(lat, REGIME_LAT, REGIME_BW)

    @property
    def effective_bandwidth(self):
        """nbytes / total (bytes/s): the 'algorithm bandwidth' this model predicts."""
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.asarray(self.total, dtype=float)
            return _arr(np.where(t > 0, np.asarray(self.nbytes, dtype=float) / np.where(t > 0, t, 1),
                                 np.inf))

    @property
    def bottleneck(self) -> str:
        """Name of the slowest level (hierarchical networks), else ''."""
        if not self.levels:
            return ""
        return max(self.levels, key=lambda kv: float(np.max(kv[1])))[0]

    def as_dict(self) -> dict:
        return {"kind": self.kind, "nbytes": self.nbytes, "topology": self.topology,
                "axes": self.axes, "n_devices": self.n_devices, "t_bandwidth": self.t_bandwidth,
                "t_latency": self.t_latency, "total": self.total, "regime": self.regime,
                "effective_bandwidth": self.effective_bandwidth,
                "levels": dict(self.levels), "bottleneck": self.bottleneck}

    def _rows(self):
        from .units import fmt_bw, fmt_bytes, fmt_time
        if np.ndim(self.total):
            raise ValueError("printing is for one size; index the arrays for sweeps")
        rows = [("集合操作", KIND_ZH[self.kind]), ("拓扑", self.topology),
                ("轴", "、".join(map(str, self.axes)) + f"（{self.n_devices} 个设备）"),
                ("数据量", fmt_bytes(self.nbytes)), ("带宽项", fmt_time(self.t_bandwidth)),
                ("延迟项", fmt_time(self.t_latency)), ("总时间", fmt_time(self.total)),
                ("区间", self.regime), ("有效带宽", fmt_bw(self.effective_bandwidth))]
        for name, t in self.levels:
            rows.append((f"  {name} 层", fmt_time(t)))
        if self.levels:
            rows.append(("瓶颈层", self.bottleneck))
        if self.note:
            rows.append(("说明", self.note))
        return rows

    def __str__(self) -> str:
        return "\n".join(f"{k}：{v}" for k, v in self._rows())

    def _repr_html_(self) -> str:
        import html
        body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
                       f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>"
                       for k, v in self._rows())
        return f"<table>{body}</table>"


# ---- helpers --------------------------------------------------------------------------------

def ragged_fraction(k, z, exact: bool = False):
    """Fraction of a dense AllToAll's bytes that a top-k ragged AllToAll over ``z`` shards moves.

    Approximate (F17): min(k/z, 1)·(z−1)/z. Exact expectation (P7.2): (1 − ((z−1)/z)^k)·(z−1)/z,
    the expected share of the z shards a token's k picks land in, minus the local one.
    """
    k = check_positive("k", k)
    z = check_positive("z", z)
    if np.any(np.asarray(z) < 1):
        raise ValueError(f"z (shards) must be >= 1, got {z!r}")
    base = (z - 1) / z
    if exact:
        return _arr((1 - ((z - 1) / z) ** k) * base)
    return _arr(np.minimum(k / z, 1.0) * base)


def bus_bandwidth(nbytes, seconds, n, kind: str = "all_reduce"):
    """NCCL's bus bandwidth from a measured time (F23): algBW·2(n−1)/n for AllReduce,
    algBW·(n−1)/n for AllGather/ReduceScatter, with algBW = nbytes/seconds."""
    k = _kind(kind)
    b = check_nonneg("nbytes", nbytes)
    t = check_positive("seconds", seconds)
    n = check_positive("n", n)
    alg = b / t
    if k == "all_reduce":
        return _arr(alg * 2 * (n - 1) / n)
    if k in ("all_gather", "reduce_scatter"):
        return _arr(alg * (n - 1) / n)
    raise ValueError(f"bus bandwidth is defined for all_reduce, all_gather, reduce_scatter; got {kind!r}")


def sharp_speedup(n):
    """Ideal SHARP gain over a ring AllReduce: 2(n−1)/n (1.75× for n = 8, F24)."""
    n = check_positive("n", n)
    return _arr(2 * (n - 1) / n)


def latency_threshold_bytes(topo) -> float:
    """Per-hop payload below which a torus hop is latency-bound: one-way link × hop latency
    (45 kB on v5e/v4p, 90 kB on v5p/v6e)."""
    t = topo_mod.get(topo)
    if not isinstance(t, Torus):
        raise ValueError("latency_threshold_bytes is defined for rings/tori/TPU slices")
    return t.link_bw_1way * t.latency


def alltoall_ring_exact(nbytes, n, link_bw_1way):
    """Exact worst-link AllToAll time on a bidirectional 1D ring of even ``n``:
    V(n+2)/(8n) bytes over one direction of one link (ch. 3 P3.16)."""
    v = check_nonneg("nbytes", nbytes)
    n = check_positive("n", n)
    w = check_positive("link_bw_1way", link_bw_1way)
    return _arr(v * (n + 2) / (8 * n) / w)


# ---- torus / ring ---------------------------------------------------------------------------

def _axis_ag_bw(n: int, wrap: bool, w1: float) -> float:
    """Bytes/s at which one axis contributes to an AllGather of V (V / this = time)."""
    if n == 1:
        return 0.0
    if wrap and n > 2:
        return n * w1 / (n // 2)          # = 2·w1 = W_ici for even n
    return n * w1 / (n - 1)               # line (or n = 2): (N−1)/N · V / w1


def _axis_hops(n: int, wrap: bool) -> int:
    return topo_mod.max_hops(n, wrap and n > 2)


def _torus(kind, v, t: Torus, axes):
    idx = [t.axis_index(a) for a in axes]
    if len(set(idx)) != len(idx):
        raise ValueError(f"axes {axes} repeat an axis")
    ns = [t.shape[i] for i in idx]
    ws = [t.wraps[i] for i in idx]
    n = math.prod(ns)
    w1 = t.link_bw_1way
    hops = sum(_axis_hops(a, w) for a, w in zip(ns, ws))
    if n == 1:
        z = v * 0.0
        return z, z, n, ""
    if kind in ("all_gather", "reduce_scatter", "all_reduce"):
        bw = sum(_axis_ag_bw(a, w, w1) for a, w in zip(ns, ws))
        tb = v / bw
        tl = hops * t.latency + v * 0.0
        if kind == "all_reduce":
            tb, tl = 2 * tb, 2 * tl
        return tb, tl, n, ""
    if kind == "all_to_all":
        worst = max(a / (2 if (w and a > 2) else 1) for a, w in zip(ns, ws) if a > 1)
        tb = v * worst / (4 * n * w1)
        return tb, hops * t.latency + v * 0.0, n, ""
    raise AssertionError(kind)


def _permute_torus(v, t: Torus, axes, shift: int):
    if len(axes) != 1:
        raise ValueError(f"permute moves data along one axis; got axes {axes}")
    i = t.axis_index(axes[0])
    n, wrap = t.shape[i], t.wraps[i] and t.shape[i] > 2
    if not isinstance(shift, int) or isinstance(shift, bool):
        raise TypeError(f"shift must be an int, got {shift!r}")
    s = shift % n
    if s == 0:
        z = v * 0.0
        return z, z, n
    # directed link loads of a cyclic shift by s, shortest routes (ties go forward)
    fwd = np.zeros(n)
    bwd = np.zeros(n)
    maxh = 0
    for src in range(n):
        dst = (src + s) % n
        if wrap:
            d_f = (dst - src) % n
            d_b = (src - dst) % n
            if d_f <= d_b:
                for h in range(d_f):
                    fwd[(src + h) % n] += 1
                maxh = max(maxh, d_f)
            else:
                for h in range(d_b):
                    bwd[(src - h) % n] += 1
                maxh = max(maxh, d_b)
        else:
            lo, hi = sorted((src, dst))
            (fwd if dst > src else bwd)[lo:hi] += 1
            maxh = max(maxh, hi - lo)
    load = max(fwd.max(), bwd.max())
    return v * load / t.link_bw_1way, maxh * t.latency + v * 0.0, n


# ---- GPU node / fat tree ----------------------------------------------------------------------

def _node(kind, v, nd: NvlinkNode, top_k, exact_ragged, n_gpus=None):
    n = nd.n_gpus if n_gpus is None else n_gpus
    w = nd.gpu_bw
    lat = nd.latency
    if kind in ("all_gather", "reduce_scatter"):
        return v * (n - 1) / (n * w), (n - 1) * lat + v * 0.0, n
    if kind == "all_reduce":
        if nd.sharp:
            return v / w, 2 * lat + v * 0.0, n
        return 2 * v * (n - 1) / (n * w), 2 * (n - 1) * lat + v * 0.0, n
    if kind == "all_to_all":
        frac = (n - 1) / n if top_k is None else ragged_fraction(top_k, n, exact=exact_ragged)
        return v * frac / (n * w), lat + v * 0.0, n
    raise AssertionError(kind)


def _tree_levels(tree: FatTree, n: int):
    """(level, effective degree, GPUs per child, step latency) for the levels n GPUs span."""
    out = []
    below = 1
    for i, lv in enumerate(tree.levels):
        if n <= below:
            break
        d = min(lv.degree, math.ceil(n / below))
        traversals = 1 if i <= 1 else 2 * i - 1
        out.append((lv, d, below, traversals * lv.latency))
        below *= lv.degree
    return out


def _tree(kind, v, tree: FatTree, n: int, inner: int, top_k, exact_ragged, name: str):
    levels = _tree_levels(tree, n)
    node_gpus = tree.levels[0].degree
    if kind in ("all_gather", "reduce_scatter", "all_reduce"):
        per = []
        lat = 0.0
        for lv, d, s_prev, step in levels:
            if d < 2:
                continue
            share = s_prev / max(inner, s_prev)
            factor = 1.0 if (kind == "all_reduce" and tree.sharp) else (d - 1) / d
            per.append((lv.name, v * factor * share / lv.link_bw))
            lat += (2 if tree.sharp else d - 1) * step
        if not per:
            z = v * 0.0
            return z, z, (), n
        tb = per[0][1]
        for _, t in per[1:]:
            tb = np.maximum(tb, t)
        if kind == "all_reduce" and not tree.sharp:
            tb, lat = 2 * tb, 2 * lat
            per = [(nm, 2 * t) for nm, t in per]
        return tb, lat + v * 0.0, tuple(per), n
    if kind == "all_to_all":
        lv0 = tree.levels[0]
        if n <= node_gpus:
            frac = (n - 1) / n if top_k is None else ragged_fraction(top_k, n, exact=exact_ragged)
            t_in = v * frac / (n * lv0.link_bw)
            return t_in, levels[0][3] + v * 0.0 if levels else v * 0.0, (("节点", t_in),), n
        m = math.ceil(n / node_gpus)
        w_node = tree.levels[1].link_bw
        frac = (m - 1) / m if top_k is None else ragged_fraction(top_k, m, exact=exact_ragged)
        t_out = v * frac / (m * w_node)
        fr_in = (node_gpus - 1) / node_gpus
        t_in = v * fr_in / (n * lv0.link_bw)
        trav = 1 if tree.rail_optimized else (3 if n > tree.gpus_under(1) else 1)
        lat = (trav + (1 if tree.rail_optimized else 0)) * tree.levels[1].latency
        return np.maximum(t_in, t_out), lat + v * 0.0, (("节点", t_in), ("节点间", t_out)), n
    raise AssertionError(kind)


# ---- multi-slice ----------------------------------------------------------------------------

def _multislice(kind, v, ms: MultiSlice, axes):
    ici_axes = tuple(a for a in axes if a != ms.dcn_name)
    use_dcn = ms.dcn_name in axes
    n_ici = math.prod(ms.slice.axis_size(a) for a in ici_axes) if ici_axes else 1
    ns = ms.n_slices
    w = ms.dcn_bw_1way
    levels = []
    tb = v * 0.0
    tl = v * 0.0
    if ici_axes:
        ib, il, _, _ = _torus(kind, v if kind != "all_to_all" else v / (ns if use_dcn else 1),
                              ms.slice, ici_axes)
        tb, tl = tb + ib, tl + il
        levels.append(("ICI", ib))
    if use_dcn and ns > 1:
        if kind == "all_to_all":
            per_chip = v / (n_ici * ns)
            db = per_chip * (ns - 1) / ns / w
            dl = ms.dcn_latency + v * 0.0
        else:
            vd = v / n_ici                       # what one chip exchanges over DCN
            db = vd * (ns - 1) / ns / w
            dl = (ns - 1) * ms.dcn_latency + v * 0.0
            if kind == "all_reduce":
                db, dl = 2 * db, 2 * dl
        tb, tl = tb + db, tl + dl
        levels.append(("DCN", db))
    return tb, tl, tuple(levels), n_ici * (ns if use_dcn else 1)


# ---- public entry points -------------------------------------------------------------------------

def collective_time(kind, nbytes, topo, axes=None, *, top_k=None, exact_ragged: bool = False,
                    inner: int = 1, n_gpus=None, shift: int = 1) -> CollectiveResult:
    """Time of one collective over ``axes`` of ``topo``. See the module docstring for ``nbytes``.

    kind:   "all_gather", "reduce_scatter", "all_reduce", "all_to_all" or "permute"
            (aliases: "ag", "rs", "ar", "a2a", "psum", "ppermute").
    nbytes: the book's V in bytes (float or numpy array for sweeps): the gathered array (AG), the
            unreduced array per device (RS, AR), the total array over all devices (AllToAll), the
            bytes each device sends (permute).
    topo:   a topology object or preset name (``topology.get``): ring/torus/TpuSlice, MultiSlice,
            NvlinkNode, FatTree, GpuCluster.
    axes:   axis names to run over (default: the first axis of a torus; all axes otherwise,
            e.g. ("X", "Y") for AllGather over both axes of a 2D slice; add "DCN" on a MultiSlice).
    top_k:  AllToAll only: a ragged top-k AllToAll (MoE dispatch) instead of a dense one.
    inner:  GPU trees: the array is already sharded ``inner`` ways over an inner axis (F22).
    n_gpus: fat trees: how many GPUs take part (default all; multiples of the node size).
    shift:  permute: each device sends to the device ``shift`` steps along the axis (cyclic).
    """
    k = _kind(kind)
    v = check_nonneg("nbytes", nbytes)
    t = topo_mod.get(topo)
    if top_k is not None and k != "all_to_all":
        raise ValueError("top_k applies to all_to_all only")
    if top_k is not None:
        check_positive("top_k", top_k, allow_array=False)
    if not isinstance(inner, int) or isinstance(inner, bool) or inner < 1:
        raise ValueError(f"inner must be a positive int, got {inner!r}")
    if axes is None:
        axes = (t.names[0],) if isinstance(t, Torus) else tuple(t.names)
    elif isinstance(axes, str):
        axes = (axes,)
    axes = tuple(axes)
    if not axes:
        raise ValueError("axes must name at least one axis")
    for a in axes:
        if a not in t.names:
            raise ValueError(f"{t.describe()} has no axis {a!r}; axes: {', '.join(map(str, t.names))}")
    levels = ()
    note = ""
    if isinstance(t, Torus):
        if k == "permute":
            tb, tl, n = _permute_torus(v, t, axes, shift)
        else:
            tb, tl, n, note = _torus(k, v, t, axes)
    elif isinstance(t, MultiSlice):
        if k == "permute":
            raise ValueError("permute over a MultiSlice: use the slice (ICI) or p2p over DCN")
        tb, tl, levels, n = _multislice(k, v, t, axes)
    elif isinstance(t, NvlinkNode):
        if n_gpus is not None:
            raise ValueError("n_gpus is for fat trees; an NvlinkNode always uses its n_gpus")
        if k == "permute":
            tb, tl, n = v / t.gpu_bw, t.latency + v * 0.0, t.n_gpus
        else:
            tb, tl, n = _node(k, v, t, top_k, exact_ragged)
    elif isinstance(t, (FatTree, GpuCluster)):
        tree = t if isinstance(t, FatTree) else t.tree
        n = tree.num_chips if isinstance(t, FatTree) else t.num_chips
        if n_gpus is not None:
            if not isinstance(n_gpus, int) or isinstance(n_gpus, bool) or n_gpus < 2:
                raise ValueError(f"n_gpus must be an int >= 2, got {n_gpus!r}")
            node = tree.levels[0].degree
            if n_gpus > tree.num_chips or (n_gpus > node and n_gpus % node):
                raise ValueError(f"n_gpus must be <= {tree.num_chips} and, above one node, a "
                                 f"multiple of the node size {node}; got {n_gpus}")
            n = n_gpus
        if k == "permute":
            cross = n > tree.levels[0].degree
            w = tree.levels[1].link_bw / tree.levels[0].degree if cross else tree.levels[0].link_bw
            tb, tl = v / w, tree.levels[1 if cross else 0].latency + v * 0.0
        else:
            tb, tl, levels, n = _tree(k, v, tree, n, inner, top_k, exact_ragged, t.names[0])
    else:  # pragma: no cover - get() only returns the classes above
        raise TypeError(f"unsupported topology {type(t).__name__}")
    tb, tl = _arr(tb), _arr(tl)
    total = _arr(np.add(tb, tl)) if k == "permute" else _arr(np.maximum(tb, tl))
    return CollectiveResult(kind=k, nbytes=_arr(v), topology=t.describe(), axes=axes,
                            n_devices=int(n), t_bandwidth=tb, t_latency=tl, total=total,
                            levels=tuple((nm, _arr(x)) for nm, x in levels), note=note)


def ring_time(kind, nbytes, n, link_bw_1way, wrap: bool = True, latency: float = 1e-6,
              shift: int = 1) -> CollectiveResult:
    """A collective on a plain 1D ring (``wrap=True``) or line of ``n`` devices whose links carry
    ``link_bw_1way`` bytes/s each way; hop ``latency`` in seconds. Same ``nbytes`` meaning as
    ``collective_time``. Example: ``ring_time("all_gather", 33.5e6, 4, 4.5e10, wrap=False)``."""
    r = topo_mod.Ring(n, link_bw_1way, wrap=wrap, latency=latency)
    return collective_time(kind, nbytes, r, ("X",), shift=shift)


def crossover_bytes(kind, topo, axes=None, **kw) -> float:
    """The array size (bytes) at which the bandwidth term equals the latency term."""
    r = collective_time(kind, 1.0, topo, axes, **kw)
    if float(r.t_bandwidth) == 0:
        raise ValueError("this collective moves no data (a single device)")
    return float(r.t_latency) / float(r.t_bandwidth)


def sharded_allgather_time(nbytes, inner, n_gpus=256, tree=None):
    """F22 sweep helper: AllGather of an array already sharded ``inner`` ways over an inner axis,
    on ``n_gpus`` GPUs of ``tree`` (default: DGX H100 SuperPOD). Returns seconds (array-friendly
    in ``nbytes``). P4.3: AllGather_X(bf16[D_X, F_Y]) in one SU."""
    tree = tree or topo_mod.dgx_h100_superpod()
    return collective_time("all_gather", nbytes, tree, n_gpus=n_gpus, inner=inner).total


def ring_schedule(n: int, kind: str = "all_gather"):
    """Which chunk each device holds after each step of a unidirectional ring AllGather or
    ReduceScatter: a list of n−1+1 arrays (step × device → set of chunk ids as a bool matrix).

    For the ring animations: ``have[s][d, c]`` is True when device d holds chunk c after s steps
    (AllGather), or has added its contribution into partial sum c (ReduceScatter).
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 2:
        raise ValueError(f"n must be an int >= 2, got {n!r}")
    k = _kind(kind)
    if k not in ("all_gather", "reduce_scatter"):
        raise ValueError("ring_schedule draws all_gather or reduce_scatter")
    have = np.eye(n, dtype=bool)
    out = [have.copy()]
    for _ in range(n - 1):
        have = have | np.roll(have, 1, axis=0)
        out.append(have.copy())
    return out


# ---- step schedules (what each device sends at each step; drawn by scaling_lib.diagrams) ------

@dataclass(frozen=True)
class Transfer:
    """One message of one step: ``src`` sends ``chunks`` to its neighbour ``dst`` along ``axis``.

    Devices are numbered row-major over the axes of the collective; ``fraction`` is the message
    size as a fraction of the collective's V (the ``nbytes`` of ``collective_time``).
    """

    src: int
    dst: int
    chunks: tuple
    fraction: float
    axis: str


@dataclass(frozen=True)
class CollectiveSchedule:
    """A collective as a sequence of synchronous neighbour-to-neighbour steps.

    ``state[s]`` (devices × chunks, ints) is what each device holds after ``s`` steps
    (``state[0]`` = before the first step):

    - all_gather: 1 where device d holds chunk c (chunk c starts on its owner).
    - reduce_scatter / all_reduce: how many devices' contributions the partial sum of chunk c held
      by d contains (0 = d holds no partial of c: it never had one or handed it on); at the end of
      a ReduceScatter ``state[c_owner, c] = N``, of an AllReduce every entry is N.
    - all_to_all: chunk ``s·N + t`` is the block device s sends to device t; 1 where it sits now.

    ``chunk_owner[c]`` is the device chunk c belongs to (AllGather: where it starts; ReduceScatter:
    where its sum ends; AllToAll: the source). ``phase[s]`` names step s+1's phase.
    """

    kind: str
    shape: tuple
    wraps: tuple
    axes: tuple
    bidirectional: bool
    n_chunks: int
    chunk_owner: tuple
    steps: tuple
    state: tuple
    phase: tuple

    @property
    def n_devices(self) -> int:
        return math.prod(self.shape)

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def coords(self, d: int) -> tuple:
        """Coordinates of device ``d`` on the collective's axes."""
        return tuple(int(i) for i in np.unravel_index(d, self.shape))

    def link_fractions(self, step: int | None = None) -> dict:
        """{(src, dst): bytes over that directed link, as a fraction of V}, for one step (1-based)
        or summed over all steps."""
        out: dict = {}
        steps = self.steps if step is None else (self.steps[step - 1],)
        for st in steps:
            for tr in st:
                out[(tr.src, tr.dst)] = out.get((tr.src, tr.dst), 0.0) + tr.fraction
        return out

    def step_fraction(self, step: int) -> float:
        """The busiest directed link's bytes in step ``step`` (1-based), as a fraction of V."""
        if not 1 <= step <= self.n_steps:
            raise ValueError(f"step must be in 1..{self.n_steps}, got {step!r}")
        return max(self.link_fractions(step).values())

    def phases(self) -> list:
        """The phases that run one after the other (runs of steps with the same ``phase`` name):
        ``(name, first step, last step, busiest link's bytes in the phase as a fraction of V)``."""
        out = []
        for i, name in enumerate(self.phase, start=1):
            if out and out[-1][0] == name:
                out[-1][2] = i
            else:
                out.append([name, i, i])
        res = []
        for name, a, b in out:
            load: dict = {}
            for st in self.steps[a - 1:b]:
                for tr in st:
                    load[(tr.src, tr.dst)] = load.get((tr.src, tr.dst), 0.0) + tr.fraction
            res.append((name, a, b, max(load.values())))
        return res

    @property
    def busiest_link_fraction(self) -> float:
        """Σ over phases of the busiest directed link's bytes in that phase, as a fraction of V:
        within a phase, links stream back to back; a phase starts when the previous one ends."""
        return float(sum(p[3] for p in self.phases()))

    def t_bandwidth(self, nbytes, link_bw_1way):
        """Bandwidth time of the schedule: ``busiest_link_fraction`` · V / one-way link bandwidth
        (compare ``collective_time(...).t_bandwidth``)."""
        v = check_nonneg("nbytes", nbytes)
        w = check_positive("link_bw_1way", link_bw_1way)
        return _arr(v * self.busiest_link_fraction / w)


def _line_ag_moves(n: int, wrap: bool, bidirectional: bool) -> list:
    """Steps of a 1D AllGather along one axis of ``n`` positions: per step a list of
    (src, dst, origin) positions. Ring (wrap, n > 2): ⌊n/2⌋ steps both ways or n−1 one way;
    line: n−1 steps, each chunk travelling outward both ways."""
    if n == 1:
        return []
    if wrap and n > 2:
        k_cw, k_ccw = (n // 2, (n - 1) // 2) if bidirectional else (n - 1, 0)
        steps = []
        for s in range(1, max(k_cw, k_ccw) + 1):
            mv = [((o + s - 1) % n, (o + s) % n, o) for o in range(n) if s <= k_cw]
            mv += [((o - s + 1) % n, (o - s) % n, o) for o in range(n) if s <= k_ccw]
            steps.append(mv)
        return steps
    if not bidirectional:
        raise ValueError("a line (no wraparound) can only gather with links in both directions: "
                         "pass bidirectional=True or a topology that wraps")
    steps = []
    for s in range(1, n):
        mv = [(o + s - 1, o + s, o) for o in range(n) if o + s <= n - 1]
        mv += [(o - s + 1, o - s, o) for o in range(n) if o - s >= 0]
        steps.append(mv)
    return steps


def _ag_steps(shape, wraps, names, bidirectional):
    """AllGather over every axis of ``shape``. One axis: the ring/line moves. Several axes: the
    array is split into as many parts as axes; part p gathers along the axes in order rotated by
    p, all parts at once (so every axis's links are busy in every phase, the model behind
    ``collective_time``'s V / Σ axis bandwidth). Returns (steps, phase names, n_parts)."""
    N = math.prod(shape)
    na = len(shape)
    parts = na if na > 1 else 1
    held = [[{d} for d in range(N)] for _ in range(parts)]   # held[p][d]: origins of part p at d
    moves = [_line_ag_moves(shape[a], wraps[a], bidirectional) for a in range(na)]
    steps, phases = [], []
    for k in range(na):
        snap = [[set(h) for h in held[p]] for p in range(parts)]
        axis_of = [(p + k) % na for p in range(parts)]
        n_sub = max(len(moves[a]) for a in axis_of)
        for s in range(n_sub):
            st = []
            for p in range(parts):
                a = axis_of[p]
                if s >= len(moves[a]):
                    continue
                for src_i, dst_i, org_i in moves[a][s]:
                    for d in range(N):
                        c = list(np.unravel_index(d, shape))
                        if c[a] != 0:
                            continue                 # enumerate each line along axis a once
                        def dev(i, c=c, a=a):
                            cc = list(c)
                            cc[a] = i
                            return int(np.ravel_multi_index(cc, shape))
                        src, dst, org = dev(src_i), dev(dst_i), dev(org_i)
                        ch = tuple(sorted(o * parts + p for o in snap[p][org]))
                        st.append(Transfer(src, dst, ch, len(ch) / (N * parts), names[a]))
                        held[p][dst] |= snap[p][org]
            steps.append(tuple(st))
            phases.append("、".join(dict.fromkeys(names[a] for a in axis_of)) + " 轴")
    return steps, phases, parts


def _a2a_steps(shape, wraps, names):
    """AllToAll: every block (s → t) takes its shortest route, axis by axis (dimension order;
    on a ring a block exactly half-way round goes forward, the book's convention). Step k moves
    every block still travelling by its k-th hop; blocks on the same link travel together."""
    N = math.prod(shape)
    routes = {}
    for s in range(N):
        cs = list(np.unravel_index(s, shape))
        for t in range(N):
            ct = list(np.unravel_index(t, shape))
            cur = list(cs)
            path = []
            for a, n in enumerate(shape):
                delta = (ct[a] - cur[a]) % n if (wraps[a] and n > 2) else ct[a] - cur[a]
                if wraps[a] and n > 2 and delta > n - delta:
                    delta -= n
                step = 1 if delta > 0 else -1
                for _ in range(abs(delta)):
                    nxt = list(cur)
                    nxt[a] = (cur[a] + step) % n
                    path.append((int(np.ravel_multi_index(cur, shape)),
                                 int(np.ravel_multi_index(nxt, shape)), names[a]))
                    cur = nxt
            routes[(s, t)] = path
    n_steps = max(len(p) for p in routes.values())
    steps = []
    for k in range(n_steps):
        links: dict = {}
        for (s, t), path in routes.items():
            if k < len(path):
                links.setdefault(path[k], []).append(s * N + t)
        steps.append(tuple(Transfer(a, b, tuple(sorted(ch)), len(ch) / N**2, ax)
                           for (a, b, ax), ch in sorted(links.items())))
    return steps, ["AllToAll"] * n_steps


def collective_schedule(kind, topo, axes=None, *, bidirectional: bool = True) -> CollectiveSchedule:
    """The step-by-step schedule of a collective on a ring or torus: which chunk each device sends
    to which neighbour at each step, and what every device holds after it.

    kind: "all_gather", "reduce_scatter", "all_reduce" or "all_to_all" (aliases as in
    ``collective_time``). topo: a ``topology.Torus``/``Ring``/``TpuSlice`` or a preset name; axes:
    the axes it runs over (default all of them). ``bidirectional=False``: a one-way ring.

    The schedules are the algorithms behind ``collective_time``'s formulas: on one axis the busiest
    link carries exactly its bandwidth term (AllGather ⌊N/2⌋/N·V on a ring, (N−1)/N·V on a line;
    AllToAll the exact V(N+2)/(8N) of ``alltoall_ring_exact``, which ``collective_time``
    rounds to V/8) and the step count is its hop count. ReduceScatter is the AllGather run
    backwards (each chunk's broadcast tree becomes its reduction tree); AllReduce is ReduceScatter
    then AllGather. On several axes the array is split into one part per axis and the parts
    gather along the axes in rotated order at once: that keeps every link busy, as the formula
    V/Σ(axis bandwidth) assumes, but the first phase (1/n of the data) adds a factor (1 + 1/n)
    on an n×n torus that the formula leaves out.
    """
    k = _kind(kind)
    if k == "permute":
        raise ValueError("collective_schedule draws all_gather, reduce_scatter, all_reduce or "
                         "all_to_all; a permute is a single step")
    if not isinstance(bidirectional, bool):
        raise TypeError(f"bidirectional must be True or False, got {bidirectional!r}")
    t = topo_mod.get(topo)
    if not isinstance(t, Torus):
        raise ValueError(f"schedules are for rings and tori; got {t.describe()} (GPU nodes and "
                         f"fat trees go through switches)")
    if axes is None:
        axes = tuple(t.names)
    elif isinstance(axes, str):
        axes = (axes,)
    idx = [t.axis_index(a) for a in axes]
    if len(set(idx)) != len(idx):
        raise ValueError(f"axes {tuple(axes)} repeat an axis")
    shape = tuple(t.shape[i] for i in idx)
    wraps = tuple(bool(t.wraps[i]) for i in idx)
    names = tuple(t.names[i] for i in idx)
    N = math.prod(shape)
    if N < 2:
        raise ValueError("a collective needs at least 2 devices")
    if k == "all_to_all":
        if not bidirectional:
            raise ValueError("the AllToAll schedule routes both ways; bidirectional=False is for "
                             "AllGather/ReduceScatter/AllReduce")
        steps, phase = _a2a_steps(shape, wraps, names)
        n_chunks = N * N
        owner = tuple(c // N for c in range(n_chunks))
        st = np.zeros((N, n_chunks), dtype=int)
        st[owner, np.arange(n_chunks)] = 1
        states = [st.copy()]
        for step in steps:
            new = st.copy()
            for tr in step:
                for c in tr.chunks:
                    if st[tr.src, c] != 1:
                        raise AssertionError(f"device {tr.src} sends block {c} it does not hold")
                    new[tr.src, c] -= 1
                    new[tr.dst, c] += 1
            st = new
            states.append(st.copy())
        return CollectiveSchedule(k, shape, wraps, names, True, n_chunks, owner, tuple(steps),
                                  tuple(states), tuple(phase))
    ag, ag_phase, parts = _ag_steps(shape, wraps, names, bidirectional)
    n_chunks = N * parts
    owner = tuple(c // parts for c in range(n_chunks))
    rs = [tuple(Transfer(tr.dst, tr.src, tr.chunks, tr.fraction, tr.axis) for tr in step)
          for step in reversed(ag)]
    rs_phase = [f"ReduceScatter（{p}）" for p in reversed(ag_phase)]
    if k == "all_gather":
        steps, phase = ag, [f"AllGather（{p}）" for p in ag_phase]
        st = np.zeros((N, n_chunks), dtype=int)
        st[owner, np.arange(n_chunks)] = 1
    else:
        steps, phase = rs, rs_phase
        if k == "all_reduce":
            steps = rs + ag
            phase = rs_phase + [f"AllGather（{p}）" for p in ag_phase]
        st = np.ones((N, n_chunks), dtype=int)
    states = [st.copy()]
    n_rs = len(rs) if k != "all_gather" else 0
    for i, step in enumerate(steps):
        new = st.copy()
        for tr in step:
            for c in tr.chunks:
                if st[tr.src, c] == 0:
                    raise AssertionError(f"device {tr.src} sends chunk {c} it does not hold")
                if i < n_rs:               # reduce: add the partial sum and hand it on
                    new[tr.dst, c] += st[tr.src, c]
                    new[tr.src, c] = 0
                else:                      # gather: copy
                    new[tr.dst, c] = st[tr.src, c]
        st = new
        states.append(st.copy())
    return CollectiveSchedule(k, shape, wraps, names, bidirectional, n_chunks, owner, tuple(steps),
                              tuple(states), tuple(phase))


__all__ += ["Transfer", "CollectiveSchedule", "collective_schedule"]


# =============================================================================================
# Collectives of a group of chips placed in a System (vectorised; the planner's entry point)
# =============================================================================================

#: How a collective's cost is written. "book": chapter 5's V/(n_axes·W) (no (n−1)/n factors, rings
#: assumed to wrap, the teaching formulas); "ring": the exact ring/switch costs of chapters 3 and
#: 12 ((n−1)/n factors, lines without wraparound at half the bandwidth).
CONVENTIONS = ("book", "ring")


def group_time(kind, nbytes, system, group, inner=1, *, convention: str = "book",
               top_k=None, node_limit=None, latency: bool = False, tiers: bool = False):
    """Seconds of one collective over a group of ``group`` chips of ``system``, placed after
    ``inner`` chips of inner mesh axes (the group's members are ``inner`` chips apart).

    Vectorised over ``nbytes``, ``group`` and ``inner`` (numpy broadcasting): the planner prices
    every candidate strategy with one call. ``nbytes`` is the book's V (see the module docstring;
    permute: the bytes each chip sends). The tiers of ``system`` (a ``topology.System``):

    - inside one scale-up domain: a TPU torus (the group gets ``topology.group_axes`` axes of
      W_ici each: AG = V/(M·W_ici)) or an NVLink switch (AG = V/W_nvl; AllToAll V(n−1)/(n²W)
      as chapter 12's F17, never the torus ring formula);
    - across domains, hierarchically (ch. 3 multi-slice, ch. 12 F22): each chip moves
      V/(members per domain) over its DCN/NIC egress; TPU tiers add up (as
      ``collective_time`` on a ``MultiSlice``), GPU tiers overlap (max, as on a ``FatTree``).
    - AllReduce = 2 × AllGather, or 1 × with SHARP (``system.sharp`` across nodes,
      ``system.nvls`` inside one); AllToAll across GPU nodes with ``node_limit``: each token
      crosses to at most that many nodes (DeepSeek-V3's node-limited routing), so the cross-
      node bytes scale by min(top_k, node_limit)/top_k.

    ``convention`` "book" (default) or "ring" (see ``CONVENTIONS``). ``tiers=True`` returns the
    bandwidth time split as ``(scale_up, scale_out)`` (their sum on TPUs, their max on GPUs is
    the total). With ``latency=True``
    returns ``(t_bandwidth, t_latency)``; otherwise the bandwidth time (the planner's model;
    latency matters only for small messages, ch. 3). Book: sec-03-collectives, sec-05-planner,
    sec-12-collectives.
    """
    from .topology import System, group_axes, HOP_LATENCY
    k = _kind(kind)
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    if not isinstance(system, System):
        raise TypeError(f"system must be a topology.System, got {type(system).__name__}")
    v = np.asarray(check_nonneg("nbytes", nbytes), dtype=float)
    g = np.asarray(group, dtype=float)
    inn = np.asarray(inner, dtype=float)
    if np.any(g < 1) or np.any(inn < 1):
        raise ValueError("group and inner must be >= 1")
    ring = convention == "ring"
    D = float(system.pod_chips)
    gpu = system.family == "gpu"
    inside = inn * g <= D * (1 + 1e-12)
    across = inn >= D * (1 - 1e-12)
    g_in = np.where(inside, g, np.where(across, 1.0, D / inn))
    g_out = np.where(inside, 1.0, np.where(across, g, inn * g / D))
    f_in = np.where(g_in > 1, (g_in - 1) / g_in, 0.0) if ring else (g_in > 1).astype(float)
    f_out = np.where(g_out > 1, (g_out - 1) / g_out, 0.0) if ring else (g_out > 1).astype(float)
    w_out = system.w_scale_out if system.n_pods > 1 else np.inf
    lat_up = np.zeros(np.broadcast(v, g, inn).shape)
    if k == "permute":
        if gpu:
            t_up = v / system.w_scale_up
        else:
            t_up = v / hardware_link(system)
        t = np.where(g_out > 1, v / w_out, np.where(g > 1, t_up, 0.0))
        if tiers:
            z = 0 * lat_up
            return _arr(np.where(g_out > 1, 0.0, t) + z), _arr(np.where(g_out > 1, t, 0.0) + z)
        if latency:
            lat = np.where(g_out > 1, system.scale_out_latency, np.where(g > 1, HOP_LATENCY, 0.0))
            return _arr(t + 0 * lat_up), _arr(lat + 0 * lat_up)
        return _arr(t + 0 * lat_up)
    # ---- scale-up tier ----
    if gpu:
        W = system.w_scale_up
        if k == "all_to_all":
            up = (v / g_out) * np.where(g_in > 1, (g_in - 1) / g_in, 0.0) / (g_in * W)
        else:
            up = v * f_in / W
            if k == "all_reduce":
                up = np.where(system.nvls & (g_in > 1), v / W, 2 * up)
        lat_up = np.where(g_in > 1, (g_in - 1) * HOP_LATENCY, 0.0)
    else:
        wraps = None
        if ring and system.shape is not None:
            wraps = tuple(bool(w) for w in topo_mod.wraparound(system.chip, system.shape))
        m, wf = group_axes(g_in, np.minimum(inn, D), system.axis_sizes, wraps)
        W = system.w_scale_up                                  # W_ici, both directions
        if ring:   # wrapped axes: V/W_ici each (even rings, ch. 3); lines (n−1)/n·V/W_1way
            w_eff = m * W * (wf + (1 - wf) * 0.5)
            f_in = wf + (1 - wf) * np.where(g_in > 1, (g_in - 1) / g_in, 0.0)
        else:
            w_eff = m * W
        if k == "all_to_all":
            if ring:   # bisection-bound torus AllToAll (ch. 3): V·max_axis/(8·n·W_1way)
                fmax = np.minimum(g_in, float(max(system.axis_sizes)))
                up = (v / g_out) * fmax / (4 * g_in * np.minimum(m, 1.0) * W)
            else:      # the book's V/4 per ring over M axes (ch. 5)
                up = (v / g_out) / (4 * m * W)
            up = np.where(g_in > 1, up, 0.0)
        else:
            up = np.where(g_in > 1, v * f_in / w_eff, 0.0)
            if k == "all_reduce":
                up = 2 * up
        lat_up = np.where(g_in > 1, m * np.minimum(g_in, float(max(system.axis_sizes))) / 2
                          * HOP_LATENCY, 0.0)
    # ---- scale-out tier ----
    if k == "all_to_all":
        dedup = 1.0
        if node_limit is not None:
            if top_k is None:
                raise ValueError("node_limit needs top_k (the experts each token picks)")
            kk = check_positive("top_k", top_k, allow_array=False)
            nl = check_positive("node_limit", node_limit, allow_array=False)
            dedup = min(kk, nl) / kk
        f_a2a = np.where(g_out > 1, (g_out - 1) / g_out, 0.0)   # F17/F20 in both conventions
        out = v * f_a2a / (np.maximum(g_out, 1) * g_in * w_out) * dedup
    else:
        out = v * f_out / (g_in * w_out)
        if k == "all_reduce":
            out = np.where(system.sharp & (g_out > 1), v / (g_in * w_out), 2 * out)
    out = np.where(g_out > 1, out, 0.0)
    if tiers:
        return _arr(up + 0 * out), _arr(out + 0 * up)
    t = np.maximum(up, out) if gpu else up + out
    if latency:
        n_lat = 2 if k == "all_reduce" else 1
        lat_out = np.where(g_out > 1, (g_out - 1) * system.scale_out_latency, 0.0)
        return _arr(t), _arr(n_lat * (lat_up + lat_out))
    return _arr(t)


def hardware_link(system) -> float:
    """One TPU ICI link, one direction (a pipeline hop's bandwidth on a torus)."""
    from . import hardware
    return hardware.require(system.chip, "ici_link_bw_1way")


__all__ += ["CONVENTIONS", "group_time"]
