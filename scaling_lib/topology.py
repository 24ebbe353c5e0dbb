"""Network topologies: rings, TPU tori and slices, multi-slice over DCN, NVLink nodes, fat trees.

Units: SI (bytes/s per direction unless a name says ``bidi``; seconds).
Book: 第2章 (sec-02-ici: tori, wraparound, optical cubes, hops and point-to-point times) and
第12章 (sec-12-nodes, sec-12-fattree: NVLink/NVSwitch nodes, InfiniBand fat trees, SHARP).
The collective costs over these topologies live in ``scaling_lib.collectives``.

Conventions (CANON §3): a link's one-way bandwidth is ``link_bw_1way``; the book's
$W_\\text{ici}$ is both directions of one link (``2 * link_bw_1way``); GPU bandwidths
(``gpu_bw``, ``node_egress``) are per direction, as chapter 12 uses them.
Ignores: contention with other traffic, routing detail inside switches, twisted tori.
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field

from . import hardware
from .units import check_nonneg, check_positive

__all__ = ["HOP_LATENCY", "wraparound", "max_hops", "Torus", "Ring", "TpuSlice", "MultiSlice",
           "NvlinkNode", "TreeLevel", "FatTree", "GpuCluster", "dgx_h100_superpod",
           "nvl72_superpod", "get", "names", "p2p_time", "P2PResult"]

#: per-hop ICI latency (book: ≈1 µs; 02 Table D). Also used, as an assumption, for one NVLink/IB
#: switch traversal (the specs give no GPU hop latency).
HOP_LATENCY = 1e-6


from .units import check_int as _check_int  # noqa: E402


def _check_shape(shape):
    if isinstance(shape, str):
        try:
            shape = tuple(int(p) for p in shape.lower().replace("×", "x").split("x"))
        except ValueError:
            raise ValueError(f"shape string must look like '4x4' or '4x4x8', got {shape!r}") from None
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(shape)
    if not shape:
        raise ValueError("shape needs at least one axis")
    for s in shape:
        _check_int("each axis size", s)
    return shape


def wraparound(chip, shape) -> tuple:
    """Which axes of a TPU slice of ``shape`` have wraparound links (one rule, book ch. 2).

    - 2D-torus chips (v2, v3, v5e, v6e): an axis wraps iff its length equals the full pod axis
      (16 on v5e/v6e, 32 on v3); e.g. v5e 8×16 wraps only on the 16-axis, 4×4 nowhere.
    - 3D-torus chips (v4p, v5p, TPU7x): the pod is built from 4×4×4 cubes joined by optical
      switches (OCS) that also provide the wrap links, so every axis wraps iff the slice is made of
      whole cubes (every axis a multiple of 4, three axes); 2×2×4 has an axis of 4 but no wrap
      (CANON D18: the footnote's "axis a multiple of 4" is looser; the whole-cube rule wins).
    - An axis of length 1 or 2 never needs a wrap link (its ends are already neighbours).
    """
    chip = hardware.get(chip)
    if chip.family != "tpu":
        raise ValueError(f"wraparound rules are for TPU slices; {chip.name} is a {chip.family}")
    shape = _check_shape(shape)
    pod = chip.pod_shape
    if chip.torus_dims == 2:
        if len(shape) != 2:
            raise ValueError(f"{chip.name} slices are 2D (e.g. '4x4', '8x16'); got {shape}")
        for s, p in zip(sorted(shape), sorted(pod)):
            if s > p:
                raise ValueError(f"{chip.name} slice {shape} exceeds the {pod} pod")
        return tuple(s == max(pod) for s in shape)
    if len(shape) != 3:
        raise ValueError(f"{chip.name} slices are 3D (e.g. '2x2x1', '4x4x8'); got {shape}")
    whole_cubes = all(s % 4 == 0 for s in shape)
    return tuple(whole_cubes for _ in shape)


def max_hops(n, wrap: bool = True) -> int:
    """Worst-case hops along one axis of ``n`` chips: ``n-1`` on a line, ``n//2`` on a ring (G13)."""
    _check_int("n", n)
    if not isinstance(wrap, bool):
        raise TypeError(f"wrap must be True or False, got {wrap!r}")
    return n // 2 if wrap else n - 1


@dataclass(frozen=True)
class Torus:
    """An N-D mesh of chips with nearest-neighbour links; each axis may or may not wrap.

    ``link_bw_1way``: one link, one direction (bytes/s). ``latency``: seconds per hop.
    """

    shape: tuple
    wraps: tuple
    link_bw_1way: float
    names: tuple = ()
    latency: float = HOP_LATENCY
    label: str = ""

    def __post_init__(self):
        shape = _check_shape(self.shape)
        object.__setattr__(self, "shape", shape)
        wraps = tuple(self.wraps) if not isinstance(self.wraps, bool) else (self.wraps,) * len(shape)
        if len(wraps) != len(shape) or any(not isinstance(w, bool) for w in wraps):
            raise ValueError(f"wraps must be one bool per axis ({len(shape)}), got {self.wraps!r}")
        object.__setattr__(self, "wraps", wraps)
        names = tuple(self.names) if self.names else tuple("XYZW"[:len(shape)]) if len(shape) <= 4 \
            else tuple(f"A{i}" for i in range(len(shape)))
        if len(names) != len(shape) or len(set(names)) != len(names):
            raise ValueError(f"names must be {len(shape)} distinct axis names, got {self.names!r}")
        object.__setattr__(self, "names", names)
        check_positive("link_bw_1way", self.link_bw_1way, allow_array=False)
        check_nonneg("latency", self.latency, allow_array=False)

    # -- sizes ------------------------------------------------------------------------------
    @property
    def num_chips(self) -> int:
        return math.prod(self.shape)

    @property
    def link_bw_bidi(self) -> float:
        """The book's W_ici: one link, both directions."""
        return 2 * self.link_bw_1way

    def axis_index(self, axis) -> int:
        if isinstance(axis, int) and not isinstance(axis, bool):
            if not 0 <= axis < len(self.shape):
                raise ValueError(f"axis index {axis} out of range for {len(self.shape)} axes")
            return axis
        if axis not in self.names:
            raise ValueError(f"{self.describe()} has no axis {axis!r}; axes: {', '.join(self.names)}")
        return self.names.index(axis)

    def axis_size(self, axis) -> int:
        return self.shape[self.axis_index(axis)]

    def axis_wraps(self, axis) -> bool:
        return self.wraps[self.axis_index(axis)]

    def sizes(self) -> dict:
        """{axis name: size}."""
        return dict(zip(self.names, self.shape))

    # -- geometry ---------------------------------------------------------------------------
    def _coord(self, c):
        c = tuple(c)
        if len(c) != len(self.shape):
            raise ValueError(f"coordinate {c} must have {len(self.shape)} entries")
        for i, (x, n) in enumerate(zip(c, self.shape)):
            _check_int(f"coordinate[{i}]", x, minimum=0)
            if x >= n:
                raise ValueError(f"coordinate {c} is outside the {self.shape} slice")
        return c

    def axis_distance(self, a: int, b: int, axis) -> int:
        i = self.axis_index(axis)
        d = abs(a - b)
        return min(d, self.shape[i] - d) if self.wraps[i] else d

    def hops(self, src, dst) -> int:
        """Fewest ICI hops between two chips (G14)."""
        src, dst = self._coord(src), self._coord(dst)
        return sum(self.axis_distance(a, b, i) for i, (a, b) in enumerate(zip(src, dst)))

    def max_hops(self) -> int:
        """The diameter: worst-case hops between any two chips."""
        return sum(max_hops(n, w) for n, w in zip(self.shape, self.wraps))

    def ports(self, coord) -> int:
        """Links attached to a chip inside this slice (corner chips of a no-wrap slice have fewer)."""
        c = self._coord(coord)
        k = 0
        for x, n, w in zip(c, self.shape, self.wraps):
            if n == 1:
                continue
            if n == 2:
                k += 1
            elif w:
                k += 2
            else:
                k += (x > 0) + (x < n - 1)
        return k

    def productive_ports(self, src, dst) -> int:
        """Outgoing links of ``src`` that shorten the path to ``dst`` (usable in parallel, G15)."""
        src, dst = self._coord(src), self._coord(dst)
        k = 0
        for i, (a, b) in enumerate(zip(src, dst)):
            n, w = self.shape[i], self.wraps[i]
            d = abs(a - b)
            if d == 0:
                continue
            k += 2 if (w and n > 2 and 2 * d == n) else 1
        return k

    def links(self):
        """All links as ((coord_a, coord_b), is_wrap) pairs, each undirected link once."""
        import itertools
        out = []
        for c in itertools.product(*(range(n) for n in self.shape)):
            for i, (n, w) in enumerate(zip(self.shape, self.wraps)):
                if n == 1:
                    continue
                if c[i] + 1 < n:
                    d = list(c)
                    d[i] += 1
                    out.append(((c, tuple(d)), False))
                elif w and n > 2:
                    d = list(c)
                    d[i] = 0
                    out.append(((c, tuple(d)), True))
        return out

    def bisection_links(self) -> int:
        """Links cut by the narrowest plane that halves the slice (for AllToAll bounds)."""
        best = None
        for i, (n, w) in enumerate(zip(self.shape, self.wraps)):
            if n == 1:
                continue
            cut = (self.num_chips // n) * (2 if (w and n > 2) else 1)
            best = cut if best is None else min(best, cut)
        return best or 0

    def describe(self) -> str:
        ax = "，".join(f"{nm}={n}{'（环绕）' if w else ''}" for nm, n, w in
                      zip(self.names, self.shape, self.wraps))
        lab = self.label or "×".join(map(str, self.shape)) + " 环面"
        return f"{lab}（{ax}）"

    def __str__(self) -> str:
        from .units import fmt_bw
        return (f"{self.describe()}：{self.num_chips} 颗芯片，每条链路单向 {fmt_bw(self.link_bw_1way)}，"
                f"每跳延迟 {self.latency * 1e6:.3g} µs，直径 {self.max_hops()} 跳")

    def draw(self, ax=None, path=None, annotate: bool = True):
        """Draw a 1D/2D slice: chips as squares, links as lines, wrap links dashed arcs;
        ``path`` highlights a route. Drawn by the presentation layer (``plots.draw_torus``,
        loaded with ``scaling_lib.plots``); returns the axes."""
        from . import hooks
        return hooks.call("draw_torus", self, ax=ax, path=path, annotate=annotate)


def _all_coords(shape):
    import itertools
    return list(itertools.product(*(range(n) for n in shape)))


def Ring(n, link_bw_1way, wrap: bool = True, latency: float = HOP_LATENCY, name: str = "X") -> Torus:
    """A 1D ring (``wrap=True``) or line of ``n`` chips."""
    _check_int("n", n)
    return Torus(shape=(n,), wraps=(wrap,), link_bw_1way=link_bw_1way, names=(name,),
                 latency=latency, label=f"{n} 芯片{'环' if wrap else '链'}")


class TpuSlice(Torus):
    """A TPU slice: ``TpuSlice("v5e", (4, 4), ("X", "Y"))``.

    Axis sizes from ``shape`` (tuple or "4x4"), wraparound from ``wraparound(chip, shape)``,
    per-link bandwidth from the catalogue (``ici_link_bw_1way``), hop latency ``HOP_LATENCY``.
    """

    def __init__(self, chip, shape, names=None, latency: float = HOP_LATENCY):
        c = hardware.get(chip)
        shape = _check_shape(shape)
        wraps = wraparound(c, shape)
        object.__setattr__(self, "chip", c)
        Torus.__init__(self, shape=shape, wraps=wraps, link_bw_1way=c.ici_link_bw_1way,
                       names=tuple(names) if names else (), latency=latency,
                       label=f"{c.name} {'×'.join(map(str, shape))} 切片")

    @property
    def num_hosts(self) -> int:
        return max(1, self.num_chips // self.chip.chips_per_host)

    def __reduce__(self):
        return (TpuSlice, (self.chip.name, self.shape, self.names, self.latency))


@dataclass(frozen=True)
class MultiSlice:
    """``n_slices`` identical TPU slices joined by the data-center network (DCN).

    The DCN axis is named ``dcn_name``; each chip's DCN egress is ``dcn_bw_1way`` (catalogue
    ``dcn_bw_1way``, per direction). ``dcn_latency`` is an ASSUMPTION (the book gives none):
    10 µs per traversal, host to host.
    """

    slice: Torus
    n_slices: int
    dcn_bw_1way: float = 0.0
    dcn_latency: float = 10e-6
    dcn_name: str = "DCN"

    def __post_init__(self):
        if not isinstance(self.slice, Torus):
            raise TypeError(f"slice must be a Torus/TpuSlice, got {type(self.slice).__name__}")
        _check_int("n_slices", self.n_slices)
        if not self.dcn_bw_1way:
            chip = getattr(self.slice, "chip", None)
            if chip is None or not chip.dcn_bw_1way:
                raise ValueError("give dcn_bw_1way (bytes/s per chip); the slice's chip has none")
            object.__setattr__(self, "dcn_bw_1way", chip.dcn_bw_1way)
        check_positive("dcn_bw_1way", self.dcn_bw_1way, allow_array=False)
        check_nonneg("dcn_latency", self.dcn_latency, allow_array=False)
        if self.dcn_name in self.slice.names:
            raise ValueError(f"dcn_name {self.dcn_name!r} clashes with a slice axis")

    @property
    def names(self) -> tuple:
        return self.slice.names + (self.dcn_name,)

    @property
    def num_chips(self) -> int:
        return self.slice.num_chips * self.n_slices

    def axis_size(self, axis) -> int:
        return self.n_slices if axis == self.dcn_name else self.slice.axis_size(axis)

    def describe(self) -> str:
        return f"{self.n_slices} 个 {self.slice.describe()}，经 DCN 相连"

    def __str__(self) -> str:
        from .units import fmt_bw
        return f"{self.describe()}：共 {self.num_chips} 颗芯片，DCN 每芯片单向 {fmt_bw(self.dcn_bw_1way)}"


@dataclass(frozen=True)
class NvlinkNode:
    """One NVLink domain: ``n_gpus`` GPUs all-to-all through NVSwitches (one switch hop).

    ``gpu_bw``: NVLink bandwidth per GPU, per direction (H100 18×25 GB/s = 4.5e11);
    ``node_egress``: scale-out bandwidth of the whole node, per direction (8 NICs × 50 GB/s).
    ``sharp``: whether the NVSwitches reduce in-network (NVLink SHARP / NVLS).
    """

    gpu: hardware.Chip
    n_gpus: int = 8
    gpu_bw: float = 0.0
    node_egress: float = 0.0
    n_switches: int = 0
    switch_ports: int = 64
    latency: float = HOP_LATENCY
    sharp: bool = False
    name: str = "X"
    label: str = ""

    def __post_init__(self):
        g = hardware.get(self.gpu)
        if g.family != "gpu":
            raise ValueError(f"an NVLink node needs a GPU, got {g.name} ({g.family})")
        object.__setattr__(self, "gpu", g)
        _check_int("n_gpus", self.n_gpus, minimum=2)
        if not self.gpu_bw:
            object.__setattr__(self, "gpu_bw", g.nvlink_bw_1way)
        if not self.node_egress and g.dcn_bw_1way:
            object.__setattr__(self, "node_egress", g.dcn_bw_1way * self.n_gpus)
        if not self.n_switches:
            object.__setattr__(self, "n_switches", g.nvswitches_per_node)
        check_positive("gpu_bw", self.gpu_bw, allow_array=False)
        check_nonneg("node_egress", self.node_egress, allow_array=False)
        check_nonneg("latency", self.latency, allow_array=False)
        if not isinstance(self.sharp, bool):
            raise TypeError(f"sharp must be True or False, got {self.sharp!r}")

    @property
    def names(self) -> tuple:
        return (self.name,)

    @property
    def num_chips(self) -> int:
        return self.n_gpus

    def axis_size(self, axis) -> int:
        if axis != self.name:
            raise ValueError(f"{self.describe()} has one axis {self.name!r}, not {axis!r}")
        return self.n_gpus

    @property
    def switch_capacity(self) -> float:
        """NVSwitch capacity, per direction: switches × ports × per-link bandwidth (P2.1)."""
        return self.n_switches * self.switch_ports * (self.gpu.nvlink_link_bw_1way or 0.0)

    @property
    def total_bw(self) -> float:
        """Node's usable all-to-all bandwidth: min(GPUs × per-GPU, switch capacity) (F10)."""
        cap = self.switch_capacity
        gpus = self.n_gpus * self.gpu_bw
        return min(gpus, cap) if cap else gpus

    @property
    def bisection_bw(self) -> float:
        """Bisection bandwidth counting both directions: 2 · (N/2) · W_GPU = N · W_GPU (F11)."""
        return self.n_gpus * self.gpu_bw

    def describe(self) -> str:
        return self.label or f"{self.n_gpus}×{self.gpu.name} NVLink 节点{'（SHARP）' if self.sharp else ''}"

    def __str__(self) -> str:
        from .units import fmt_bw
        return (f"{self.describe()}：每 GPU NVLink 单向 {fmt_bw(self.gpu_bw)}，节点出口 "
                f"{fmt_bw(self.node_egress)}，NVSwitch {self.n_switches} 个")


@dataclass(frozen=True)
class TreeLevel:
    """One level of a switched tree (F19): ``degree`` children, each with ``link_bw`` per direction.

    ``link_bw`` is the bandwidth of ONE child's uplink into this level (node: one GPU's NVLink;
    leaf: one node's 8 NICs; spine: one SU's uplinks). ``switches`` and ``port_bw`` describe the
    switch hardware for capacity checks.
    """

    name: str
    degree: int
    link_bw: float
    switches: int = 0
    ports_per_switch: int = 64
    port_bw: float = 0.0
    latency: float = HOP_LATENCY

    def __post_init__(self):
        _check_int("degree", self.degree, minimum=1)
        check_positive("link_bw", self.link_bw, allow_array=False)
        check_nonneg("port_bw", self.port_bw, allow_array=False)
        check_nonneg("latency", self.latency, allow_array=False)

    @property
    def cable_bw(self) -> float:
        """All children's uplinks together: degree × link_bw."""
        return self.degree * self.link_bw

    @property
    def switch_bw(self) -> float:
        """Switch capacity of this level's unit: switches × ports × port bandwidth."""
        return self.switches * self.ports_per_switch * self.port_bw

    @property
    def allgather_bw(self) -> float:
        """Effective AllGather bandwidth of this level: D·W/(D−1) (F19); inf for D = 1."""
        return math.inf if self.degree == 1 else self.degree * self.link_bw / (self.degree - 1)


@dataclass(frozen=True)
class FatTree:
    """A multi-level switched network: levels from the inside out (node → leaf → spine ...).

    ``sharp``: in-network reduction on every level (NVLS inside the node, IB SHARP above).
    ``rail_optimized``: GPU i of every node hangs off leaf (rail) switch i, so traffic between
    same-rank GPUs of different nodes crosses one switch instead of three (latency only; the
    per-node bandwidth is the same 8 × NIC).
    """

    levels: tuple
    gpu: hardware.Chip | None = None
    sharp: bool = False
    rail_optimized: bool = False
    name: str = "X"
    label: str = ""

    def __post_init__(self):
        levels = tuple(self.levels)
        if not levels or not all(isinstance(lv, TreeLevel) for lv in levels):
            raise ValueError("levels must be a non-empty sequence of TreeLevel")
        object.__setattr__(self, "levels", levels)
        if self.gpu is not None:
            object.__setattr__(self, "gpu", hardware.get(self.gpu))

    @property
    def names(self) -> tuple:
        return (self.name,)

    @property
    def num_chips(self) -> int:
        return math.prod(lv.degree for lv in self.levels)

    def axis_size(self, axis) -> int:
        if axis != self.name:
            raise ValueError(f"{self.describe()} has one axis {self.name!r}, not {axis!r}")
        return self.num_chips

    def gpus_under(self, i: int) -> int:
        """GPUs under one unit of level ``i`` (level 0 = node)."""
        return math.prod(lv.degree for lv in self.levels[:i + 1])

    def level_allgather_bandwidth(self) -> list:
        """Per-level effective AllGather bandwidth D·W/(D−1) (F19; P3.4)."""
        return [lv.allgather_bw for lv in self.levels]

    def bisection_bandwidth(self, both_directions: bool = True) -> float:
        """Top-level bisection: half the children of the top level × their uplink bandwidth."""
        top = self.levels[-1]
        one = (top.degree / 2) * top.link_bw
        return one * (2 if both_directions else 1)

    def per_node_bandwidth(self) -> list:
        """Bandwidth each node gets through every level above the node (F13): should be constant
        for a non-blocking tree (400 GB/s per DGX H100 node at leaf and spine)."""
        out = []
        nodes_below = 1
        for i, lv in enumerate(self.levels):
            if i == 0:
                out.append(lv.cable_bw)
                continue
            out.append(lv.cable_bw / (nodes_below * lv.degree))
            nodes_below *= lv.degree
        return out

    def is_nonblocking(self) -> bool:
        """Every level above the node gives each node the same bandwidth as its own egress, and no
        level's switches are slower than its cables (full bisection)."""
        per = self.per_node_bandwidth()[1:]
        caps_ok = all(lv.switch_bw == 0 or lv.switch_bw >= lv.cable_bw * (1 - 1e-9)
                      for lv in self.levels[1:])
        return caps_ok and all(abs(p - per[0]) <= 1e-9 * per[0] for p in per)

    def describe(self) -> str:
        if self.label:
            return self.label
        return "胖树（" + " → ".join(f"{lv.name}×{lv.degree}" for lv in self.levels) + \
            ("，SHARP" if self.sharp else "") + "）"

    def __str__(self) -> str:
        from .units import fmt_bw
        rows = "；".join(f"{lv.name}：{lv.degree} 个子单元，每个上行 {fmt_bw(lv.link_bw)}"
                        for lv in self.levels)
        return f"{self.describe()}：{self.num_chips} 个 GPU；{rows}"

    def draw(self, ax=None, max_children: int = 8):
        """Schematic of the tree (GPUs at the bottom, one row of units per level), drawn by the
        presentation layer (``plots.draw_fat_tree``); returns the axes."""
        from . import hooks
        return hooks.call("draw_fat_tree", self, ax=ax, max_children=max_children)


@dataclass(frozen=True)
class GpuCluster:
    """``n_nodes`` NVLink nodes under a fat tree: the topology chapter 12's rooflines use."""

    node: NvlinkNode
    tree: FatTree
    n_nodes: int
    name: str = "X"

    def __post_init__(self):
        if not isinstance(self.node, NvlinkNode):
            raise TypeError("node must be an NvlinkNode")
        if not isinstance(self.tree, FatTree):
            raise TypeError("tree must be a FatTree")
        _check_int("n_nodes", self.n_nodes)
        cap = self.tree.num_chips // self.node.n_gpus
        if self.n_nodes > cap:
            raise ValueError(f"{self.n_nodes} nodes exceed the tree's {cap} nodes")

    @property
    def names(self) -> tuple:
        return (self.name,)

    @property
    def num_chips(self) -> int:
        return self.n_nodes * self.node.n_gpus

    def axis_size(self, axis) -> int:
        if axis != self.name:
            raise ValueError(f"{self.describe()} has one axis {self.name!r}, not {axis!r}")
        return self.num_chips

    def describe(self) -> str:
        return f"{self.n_nodes} 个 {self.node.describe()}（{self.num_chips} 个 GPU，{self.tree.describe()}）"

    def __str__(self) -> str:
        return self.describe()


def dgx_h100_superpod(sharp: bool = False, rail_optimized: bool = False, gpu="H100") -> FatTree:
    """The 1024-GPU DGX H100 SuperPOD reference (12 Facts): node(8, 450 GB/s per GPU, 4
    NVSwitches of 64×25 GB/s) → leaf/SU(32 nodes, 400 GB/s per node, 8 IB switches of 64×50 GB/s)
    → spine(4 SUs, 12.8 TB/s per SU, 16 IB switches)."""
    g = hardware.get(gpu)
    nic = hardware.require(g, "dcn_bw_1way")          # no silent substitute (issue 16)
    node = TreeLevel("节点", 8, hardware.require(g, "nvlink_bw_1way"),
                     switches=hardware.require(g, "nvswitches_per_node"),
                     port_bw=hardware.require(g, "nvlink_link_bw_1way"))
    leaf = TreeLevel("叶（SU）", 32, 8 * nic, switches=8, port_bw=5e10)
    spine = TreeLevel("脊", 4, 32 * 8 * nic, switches=16, port_bw=5e10)
    return FatTree((node, leaf, spine), gpu=g, sharp=sharp, rail_optimized=rail_optimized,
                   label=f"DGX {g.name} SuperPOD（1024 GPU）" + ("，SHARP" if sharp else ""))


def nvl72_superpod(sharp: bool = False) -> FatTree:
    """576-GPU GB200 SuperPOD: 8 NVL72 racks (72 GPUs at 900 GB/s each, 3.6 TB/s rack egress)."""
    g = hardware.get("GB200")
    node = TreeLevel("NVL72", 72, g.nvlink_bw_1way, switches=18, port_bw=5e10)
    top = TreeLevel("脊", 8, 72 * g.dcn_bw_1way, port_bw=5e10)
    return FatTree((node, top), gpu=g, sharp=sharp, label="GB200 NVL72 SuperPOD（576 GPU）")


def _presets():
    return {
        "v5e-4x4": lambda: TpuSlice("v5e", (4, 4)),
        "v5e-8x16": lambda: TpuSlice("v5e", (8, 16)),
        "v5e-16x16": lambda: TpuSlice("v5e", (16, 16)),
        "v6e-16x16": lambda: TpuSlice("v6e", (16, 16)),
        "v5p-2x2x1": lambda: TpuSlice("v5p", (2, 2, 1)),
        "v5p-4x4x4": lambda: TpuSlice("v5p", (4, 4, 4)),
        "v5p-8x8x8": lambda: TpuSlice("v5p", (8, 8, 8)),
        "v5p-16x16x24": lambda: TpuSlice("v5p", (16, 16, 24)),
        "v4p-4x4x4": lambda: TpuSlice("v4p", (4, 4, 4)),
        "v5e-2pods": lambda: MultiSlice(TpuSlice("v5e", (16, 16)), 2),
        "v5p-2slices": lambda: MultiSlice(TpuSlice("v5p", (16, 16, 24)), 2),
        "a100-node": lambda: NvlinkNode("A100"),
        "h100-node": lambda: NvlinkNode("H100"),
        "h100-node-sharp": lambda: NvlinkNode("H100", sharp=True),
        "h800-node": lambda: NvlinkNode("H800"),
        "b200-node": lambda: NvlinkNode("B200"),
        "gb200-nvl72": lambda: NvlinkNode("GB200", n_gpus=72, label="GB200 NVL72 机架"),
        "h100-superpod": lambda: dgx_h100_superpod(),
        "h100-superpod-sharp": lambda: dgx_h100_superpod(sharp=True),
        "h100-superpod-rail": lambda: dgx_h100_superpod(rail_optimized=True),
        "gb200-superpod": lambda: nvl72_superpod(),
    }


def names() -> list:
    """Names of the preset topologies accepted by ``get``."""
    return list(_presets())


def get(name):
    """A preset topology by name ('v5e-4x4', 'v5p-4x4x4', 'h100-node', 'h100-superpod', ...);
    topology objects pass through. Also accepts 'CHIP-AxB[xC]' for any TPU slice shape.
    Unknown names raise KeyError with near matches."""
    if isinstance(name, (Torus, MultiSlice, NvlinkNode, FatTree, GpuCluster)):
        return name
    if not isinstance(name, str):
        raise TypeError(f"topology must be a name or a topology object, got {type(name).__name__}")
    key = name.strip().lower().replace("_", "-").replace("×", "x")
    p = _presets()
    if key in p:
        return p[key]()
    if "-" in key:
        chip, shape = key.split("-", 1)
        try:
            c = hardware.get(chip)
        except KeyError:
            c = None
        if c is not None and c.family == "tpu" and all(t.isdigit() for t in shape.split("x")):
            return TpuSlice(c, shape)
    close = difflib.get_close_matches(key, list(p), n=4, cutoff=0.4)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise KeyError(f"unknown topology {name!r}{hint} Known: {', '.join(p)} "
                   f"(or 'CHIP-AxB' for any TPU slice)")


@dataclass(frozen=True)
class P2PResult:
    """A point-to-point transfer over ICI (G15): first-byte and total times."""

    nbytes: float
    hops: int
    ports: int
    t_first: float
    t_bandwidth: float

    @property
    def total(self) -> float:
        return self.t_first + self.t_bandwidth

    def as_dict(self) -> dict:
        return {"nbytes": self.nbytes, "hops": self.hops, "ports": self.ports,
                "t_first": self.t_first, "t_bandwidth": self.t_bandwidth, "total": self.total}

    def __str__(self) -> str:
        from .units import fmt_bytes, fmt_time
        return (f"点对点传输 {fmt_bytes(self.nbytes)}：{self.hops} 跳，{self.ports} 个端口并行，"
                f"首字节 {fmt_time(self.t_first)}，带宽项 {fmt_time(self.t_bandwidth)}，"
                f"合计 {fmt_time(self.total)}")


def p2p_time(nbytes, topo, src, dst, ports=None) -> P2PResult:
    """Send ``nbytes`` from chip ``src`` to chip ``dst`` of a torus (G15).

    First byte ≈ hops × hop latency; total = first byte + bytes / (ports × one-way link
    bandwidth): latency and bandwidth add (the last byte also crosses every hop, but store-and-
    forward is pipelined, so the bandwidth term is paid once). ``ports`` defaults to the links of
    ``src`` that lead towards ``dst`` (2 for a corner-to-corner route in 2D).
    """
    topo = get(topo)
    if not isinstance(topo, Torus):
        raise ValueError("p2p_time needs a torus/TPU slice")
    n = float(check_nonneg("nbytes", nbytes, allow_array=False))
    h = topo.hops(src, dst)
    k = topo.productive_ports(src, dst) if ports is None else _check_int("ports", ports)
    if h == 0:
        return P2PResult(n, 0, 0, 0.0, 0.0)
    return P2PResult(n, h, k, h * topo.latency, n / (k * topo.link_bw_1way))


# =============================================================================================
# System: a chip and its network tiers (HBM → scale-up domain → scale-out), as the book composes
# them (ch. 2 TPU slices and DCN, ch. 12 NVLink nodes and fat trees)
# =============================================================================================

#: GPU node presets: the NVLink domain a chip's catalogue entry describes (chips per domain from
#: ``Chip.pod_shape``); the name is what chapter 12 calls the node.
NODE_PRESETS = {"DGX A100": "A100", "DGX H100": "H100", "DGX H200": "H200", "H800": "H800",
                "H800 节点": "H800", "DGX B200": "B200", "GB200 NVL72": "GB200"}

#: Scale-out fabrics for GPU systems: name -> (label, default SHARP-capable). Bandwidth is the
#: catalogue's NIC per GPU either way; the fabric changes latency/SHARP, not the bandwidth.
FABRICS = {"infiniband": "InfiniBand", "roce": "RoCE", "dcn": "DCN"}

#: an ASSUMPTION (the book gives no number): one DCN traversal, host to host.
DCN_LATENCY = 10e-6


@dataclass(frozen=True)
class System:
    """``n_chips`` chips of one type and the networks that join them, in tiers.

    - **HBM**: per chip (``chip.hbm_bw``).
    - **scale-up domain** of ``pod_chips`` chips: a TPU slice's ICI torus (``torus_dims`` axes;
      groups are placed on it ``axis_len`` chips per axis, the book's convention, unless
      ``shape`` gives the slice's real axes), or a GPU NVLink switch domain (8 GPUs in a DGX
      node, 72 in a GB200 NVL72 rack) with ``chip.nvlink_bw_1way`` per GPU; ``nvls``: NVLink
      SHARP (in-switch reduction).
    - **scale-out** between domains: TPU DCN (``chip.dcn_bw_1way`` per chip) or a GPU fabric
      (``fabric`` 'infiniband' or 'roce') with ``chip.dcn_bw_1way`` = the NIC per GPU, non-
      blocking, ``rail_optimized`` (GPU i of every node on rail switch i: same-rank GPUs of
      different nodes are one switch apart) and ``sharp`` (in-network reduction).

    Every bandwidth comes from the catalogue; one the catalogue lacks raises ValueError naming
    the chip and the field (``hardware.require``), never a substitute. ``pod_chips`` defaults to
    the chip's whole pod (8960 for v5p) or NVLink domain (8 for H100, 72 for GB200).
    Book: sec-02-ici, sec-05-planner (Cluster), sec-12-nodes, sec-12-fattree.
    """

    chip: object
    n_chips: int
    pod_chips: int | None = None
    axis_len: int = 16
    shape: tuple | None = None
    fabric: str = ""
    rail_optimized: bool = True
    sharp: bool = False
    nvls: bool = False
    name: str = ""

    def __post_init__(self):
        c = hardware.get(self.chip)
        object.__setattr__(self, "chip", c)
        _check_int("n_chips", self.n_chips)
        if c.family not in ("tpu", "gpu"):
            raise ValueError(f"{c.name}: a system needs a TPU or GPU (family {c.family!r})")
        if self.shape is not None:
            shp = _check_shape(self.shape)
            if c.family != "tpu":
                raise ValueError("shape describes a TPU slice; GPU domains are NVLink switches")
            if len(shp) != c.torus_dims:
                raise ValueError(f"{c.name} slices have {c.torus_dims} axes; got shape {shp}")
            object.__setattr__(self, "shape", shp)
            if self.pod_chips is not None and self.pod_chips != math.prod(shp):
                raise ValueError(f"pod_chips={self.pod_chips} disagrees with shape {shp}")
            object.__setattr__(self, "pod_chips", math.prod(shp))
        pod = self.pod_chips
        if pod is None:
            pod = c.pod_chips if c.pod_shape else 0
            if not pod:
                raise ValueError(f"the catalogue has no pod_shape (scale-up domain) for {c.name}; "
                                 f"pass pod_chips")
            pod = min(pod, self.n_chips)
        _check_int("pod_chips", pod)
        if self.n_chips > pod and self.n_chips % pod:
            raise ValueError(f"n_chips ({self.n_chips}) must be a multiple of pod_chips ({pod}) "
                             f"when the system spans several pods")
        object.__setattr__(self, "pod_chips", int(min(pod, self.n_chips)))
        _check_int("axis_len", self.axis_len, minimum=2)
        fab = self.fabric.lower() if self.fabric else ("dcn" if c.family == "tpu" else "infiniband")
        if fab not in FABRICS:
            raise ValueError(f"unknown fabric {self.fabric!r}; allowed: {', '.join(FABRICS)}")
        if (fab == "dcn") != (c.family == "tpu"):
            raise ValueError(f"{c.name} systems use {'DCN' if c.family == 'tpu' else 'a GPU fabric'}"
                             f" between domains, not {self.fabric!r}")
        object.__setattr__(self, "fabric", fab)
        for nm in ("rail_optimized", "sharp", "nvls"):
            if not isinstance(getattr(self, nm), bool):
                raise TypeError(f"{nm} must be True or False, got {getattr(self, nm)!r}")
        if self.nvls and c.family != "gpu":
            raise ValueError("nvls (NVLink SHARP) is a GPU feature")

    # -- sizes ------------------------------------------------------------------------------
    @property
    def family(self) -> str:
        return self.chip.family

    @property
    def n_pods(self) -> int:
        """Scale-up domains in the system (TPU slices/pods, GPU nodes/racks)."""
        return self.n_chips // self.pod_chips

    @property
    def torus_dims(self) -> int:
        """Axes of the scale-up network: the TPU torus dimension; 1 for an NVLink switch."""
        return hardware.network_axes(self.chip)

    @property
    def axis_sizes(self) -> tuple:
        """Chips per axis used to place groups on the torus (innermost first): the slice's real
        shape if given, else ``axis_len`` per axis (the book's 16-chip axes); GPU: (pod_chips,)."""
        if self.family == "gpu":
            return (self.pod_chips,)
        if self.shape is not None:
            return tuple(self.shape)
        return (self.axis_len,) * self.torus_dims

    # -- bandwidths (per chip, per direction unless said) ----------------------------------
    @property
    def w_scale_up(self) -> float:
        """The scale-up W: TPU W_ici (both directions of one link, the book's convention);
        GPU NVLink per GPU per direction (W_nvl)."""
        if self.family == "tpu":
            return 2 * hardware.require(self.chip, "ici_link_bw_1way")
        return hardware.require(self.chip, "nvlink_bw_1way")

    @property
    def w_scale_out(self) -> float:
        """Scale-out egress per chip per direction: TPU DCN per chip, GPU NIC per GPU."""
        return hardware.require(self.chip, "dcn_bw_1way")

    @property
    def w_node(self) -> float:
        """Egress of one scale-up domain's hosts: GPU node egress W_node = NICs × NIC bandwidth
        (4e11 for a DGX H100); TPU: DCN of the whole slice."""
        return self.w_scale_out * self.pod_chips

    @property
    def hop_latency(self) -> float:
        return HOP_LATENCY

    @property
    def scale_out_latency(self) -> float:
        """One traversal of the scale-out tier: DCN (an assumption, 10 µs) or the GPU fabric
        (one switch hop with rails, three without; HOP_LATENCY each, an assumption)."""
        if self.family == "tpu":
            return DCN_LATENCY
        return HOP_LATENCY * (1 if self.rail_optimized else 3)

    def tiers(self) -> list:
        """[(name, chips in the tier, bandwidth per chip per direction)] from the chip outwards."""
        up = ("ICI" if self.family == "tpu" else "NVLink")
        out = [("HBM", 1, self.chip.hbm_bw), (up, self.pod_chips,
                                              self.w_scale_up / (2 if self.family == "tpu" else 1)
                                              * (hardware.require(self.chip, "ici_links")
                                                 if self.family == "tpu" else 1))]
        if self.n_pods > 1:
            out.append((FABRICS[self.fabric], self.n_chips, self.w_scale_out))
        return out

    # -- topology objects of chapters 2, 3 and 12 (for collective_time cross-checks) --------
    def domain(self):
        """One scale-up domain as a ``topology`` object: a ``TpuSlice`` (real shape) / ``Torus``
        (``axis_len`` per axis), or an ``NvlinkNode``."""
        if self.family == "gpu":
            return NvlinkNode(self.chip, n_gpus=self.pod_chips, sharp=self.nvls,
                              node_egress=self.w_node)
        shape = self.axis_sizes
        return Torus(shape=shape, wraps=True, link_bw_1way=self.chip.ici_link_bw_1way,
                     label=f"{self.chip.name} {'×'.join(map(str, shape))}")

    def fat_tree(self) -> FatTree:
        """GPU systems: the two-tier tree chapter 12 draws (NVLink node → scale-out fabric),
        non-blocking, with this system's SHARP/rail settings."""
        if self.family != "gpu":
            raise ValueError("fat_tree() describes GPU systems; TPUs join slices over DCN")
        node = TreeLevel("节点", self.pod_chips, self.w_scale_up)
        fab = TreeLevel(FABRICS[self.fabric], max(self.n_pods, 1), self.w_node)
        return FatTree((node, fab), gpu=self.chip, sharp=self.sharp,
                       rail_optimized=self.rail_optimized)

    def describe(self) -> str:
        if self.name:
            return self.name
        if self.family == "tpu":
            unit = "个切片" if self.shape is not None else "个 Pod"
        else:
            unit = "个 NVLink 域"
        pods = f"（{self.n_pods} {unit}）" if self.n_pods > 1 else ""
        return f"{self.n_chips} 颗 {self.chip.name}{pods}"

    def __str__(self):
        return self.describe()


def system(name, n_chips: int | None = None, **kw) -> System:
    """A ``System`` by node/pod name: 'DGX A100', 'DGX H100', 'DGX H200', 'H800', 'DGX B200',
    'GB200 NVL72' (GPUs) or any catalogue chip ('v5p', 'TPU v4p' ...). ``n_chips`` defaults to
    one node / one pod; keyword arguments go to ``System`` (fabric, sharp, shape, ...)."""
    if isinstance(name, System):
        return name
    if not isinstance(name, str):
        raise TypeError(f"system name must be a str, got {type(name).__name__}")
    chip = NODE_PRESETS.get(name)
    if chip is None:
        try:
            chip = hardware.get(name).name
        except KeyError:
            close = difflib.get_close_matches(name, list(NODE_PRESETS) + hardware.names(), n=4)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise KeyError(f"unknown system {name!r}{hint} Known nodes: "
                           f"{', '.join(NODE_PRESETS)}, or any chip of the catalogue") from None
    c = hardware.get(chip)
    if n_chips is None:
        n_chips = c.pod_chips if c.pod_shape else 0
        if not n_chips:
            raise ValueError(f"give n_chips: the catalogue has no pod_shape for {c.name}")
    if name in NODE_PRESETS and "name" not in kw:
        n_nodes = n_chips // (c.pod_chips or 1)
        kw["name"] = f"{n_chips} 颗 {c.name}（{n_nodes} 个 {name}）" if n_nodes > 1 else name
    return System(c, n_chips, **kw)


__all__ += ["System", "system", "NODE_PRESETS", "FABRICS", "DCN_LATENCY"]


def group_axes(group, inner, axis_sizes, wraps=None):
    """How much of a torus a group of ``group`` chips gets, placed after ``inner`` chips of inner
    groups (chips fill the axes in order, innermost first). Vectorised over group and inner.

    Returns ``(m, wrap_frac)``: ``m`` = effective axes, ``wrap_frac`` = the share of ``m`` on
    axes that wrap (1 when ``wraps`` is None, the book's pod convention).

    A group *owns* every axis on which it is the innermost group: its rings there run over
    consecutive chips and have the axis's links to themselves. An axis an inner group has started
    belongs to that inner group, so nested groups never own more axes than the torus has
    (FSDP 512 × TP 8 on 16×16×16: TP 1 axis, FSDP 2; review ch04-06 M1). A group that owns no
    axis (it sits on the rest of an axis an inner group started) runs strided rings over links
    that ``s`` interleaved rings share, ``s`` = the inner factor on that axis: it gets 1/s of the
    axis. The last axis absorbs any excess (a v5p pod's longer axes). A group of 1 gets 1.
    Book: sec-05-mixed (M_X, M_Y), sec-02-ici.
    """
    import numpy as np
    sizes = [int(_check_int("axis size", a, minimum=2)) for a in axis_sizes]
    dims = len(sizes)
    if wraps is not None and len(wraps) != dims:
        raise ValueError(f"wraps needs one bool per axis ({dims}), got {wraps!r}")
    group = np.asarray(group, dtype=float)
    inner = np.asarray(inner, dtype=float)
    eps = 1e-9
    bounds = np.concatenate(([0.0], np.cumsum(np.log(sizes))))      # log-chip position of axis j
    li = np.log(np.maximum(inner, 1))
    lg = np.log(np.maximum(inner * group, 1))
    own = np.zeros(np.broadcast(group, inner).shape)
    own_w = np.zeros_like(own)
    for j in range(dims):
        o = (li <= bounds[j] + eps) & (lg > bounds[j] + eps)
        own = own + o
        if wraps is None or wraps[j]:
            own_w = own_w + o
    j0 = np.minimum(np.searchsorted(bounds[1:-1], li + eps, side="right"), dims - 1)
    shared = 1.0 / np.exp(np.maximum(li - bounds[j0], 0.0))
    m = np.where(group > 1, np.where(own > 0, own, shared), 1.0)
    if wraps is None:
        wf = np.ones_like(m)
    else:
        wj0 = np.asarray(wraps, dtype=float)[j0]
        wf = np.where(own > 0, own_w / np.maximum(own, 1), wj0)
    return m, wf


__all__ += ["group_axes"]
