"""Profiling JAX programs: compiled HLO, XLA's cost numbers, roofline predictions and traces.

What it models: the path from a jitted function to what runs on the device, and the numbers a
reader needs to judge it — the optimised HLO (fusions, dots, collectives), XLA's
``cost_analysis`` FLOPs/bytes turned into a roofline time for a chosen chip,
``memory_analysis``, a measured time, and a ``jax.profiler`` trace summarised as a table
(no TensorBoard needed). Also the HLO shape/layout/tiling notation and, for chapter 10, the
time model of a collective matmul.

Units: SI (seconds, bytes, FLOPs, FLOPs/s, bytes/s).
Book: chapter 9 (sec-09-profiling: stack, HLO, profiler, roofline of ops) and chapter 10
(sec-10-collective-matmul: the overlap model).
Ignores: the exact ring factor (n-1)/n of collectives, latency terms, caches below HBM, and
whatever XLA does not report (on CPU, bf16 dots run in f32 and ReduceScatter prints as an
AllReduce). Imports jax only inside the functions that need it.
"""
from __future__ import annotations

import glob
import math
import os
import re
import time
from dataclasses import dataclass, field

import numpy as np

from .. import hardware
from ..units import check_nonneg, check_positive, fmt_bytes, fmt_num, fmt_time

__all__ = [
    "TPU_V2_CORE", "HLO_DTYPE_BYTES", "HloShape", "parse_hlo_shape", "padded_shape",
    "tiled_shape", "layout_overhead", "tiled_offset", "memory_order",
    "HloOp", "hlo_ops", "hlo_summary", "Collective", "collectives", "decode_replica_groups",
    "stages", "CompileError", "CompileReport", "compile_report", "OpTime", "expected_op_time",
    "NoTraceError", "capture_trace", "find_trace", "TraceEvent", "trace_events", "OpRow",
    "OpTable", "op_table", "step_times", "viewer_help",
    "CollectiveMatmulTime", "collective_matmul_time", "collective_matmul_timeline",
]

#: One TPU v2 *core* treated as a device, as chapter 9's worked example does (book numbers:
#: 23e12 bf16 FLOPs/s per core, 1.2e11 B/s bidirectional ICI for one hop, 8 GB HBM per core).
#: The book never uses a v2 HBM bandwidth; 3.5e11 B/s is half the public 700 GB/s per chip and
#: only matters for memory-bound ops. Not in ``hardware.CATALOGUE`` (a core is not a chip).
TPU_V2_CORE = hardware.Chip(
    name="TPU v2 core", family="tpu", flops_per_s={"bf16": 23e12}, hbm_bytes=8e9,
    hbm_bw=3.5e11, ici_link_bw_1way=6e10, ici_links=4, chips_per_host=8, cores=1,
    source="book ch.9 worked example (23e12/core, ICI 1.2e11 bidi); HBM BW assumed 700GB/s/2")


def _pad(s: str, width: int) -> str:
    """Left-justify ``s`` to ``width`` display columns (CJK characters count as two)."""
    import unicodedata
    w = sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in s)
    return s + " " * max(width - w, 1)


def _chip(chip):
    if isinstance(chip, str) and chip.strip().lower() in ("tpu v2 core", "v2 core", "v2"):
        return TPU_V2_CORE
    return hardware.get(chip)


# ---- HLO shapes, layouts and tiles ----------------------------------------------------------

#: Bytes per element of the HLO element types the book meets.
HLO_DTYPE_BYTES = {"pred": 1, "s4": 0.5, "u4": 0.5, "s8": 1, "u8": 1, "f8e4m3fn": 1,
                   "f8e5m2": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
                   "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}

_SHAPE = re.compile(r"^\s*(?P<dtype>[a-z][a-z0-9]*)\[(?P<dims>[0-9,\s]*)\]"
                    r"(?:\{(?P<layout>[^{}]*)\})?\s*$")


@dataclass(frozen=True)
class HloShape:
    """One array shape as HLO prints it, e.g. ``bf16[32,32,8192]{2,1,0:T(8,128)(2,1)S(1)}``.

    ``minor_to_major`` lists logical dims from the fastest-varying to the slowest (None: no
    layout printed, i.e. row-major); ``tiles`` the nested tiles, outermost first;
    ``memory_space`` the ``S(n)`` annotation (None or 0: HBM; 1: VMEM on TPU).
    """

    dtype: str
    dims: tuple
    minor_to_major: tuple | None = None
    tiles: tuple = ()
    memory_space: int | None = None

    @property
    def bytes_per_element(self) -> float:
        return HLO_DTYPE_BYTES[self.dtype]

    @property
    def n_elements(self) -> int:
        return math.prod(self.dims)

    @property
    def nbytes(self) -> float:
        """Logical size in bytes (no padding)."""
        return self.n_elements * self.bytes_per_element

    @property
    def physical_order(self) -> tuple:
        """Logical dims listed from most major to most minor (the order in memory)."""
        if self.minor_to_major is None:
            return tuple(range(len(self.dims)))
        return tuple(reversed(self.minor_to_major))

    @property
    def memory(self) -> str:
        return {None: "HBM", 0: "HBM", 1: "VMEM"}.get(self.memory_space, f"S({self.memory_space})")

    def __str__(self) -> str:
        s = f"{self.dtype}[{','.join(map(str, self.dims))}]"
        if self.minor_to_major is not None:
            lay = ",".join(map(str, self.minor_to_major))
            if self.tiles or self.memory_space is not None:
                lay += ":" + "".join("T(" + ",".join(map(str, t)) + ")" if i == 0 else
                                     "(" + ",".join(map(str, t)) + ")" for i, t in enumerate(self.tiles))
                if self.memory_space is not None:
                    lay += f"S({self.memory_space})"
            s += "{" + lay + "}"
        return s


def parse_hlo_shape(s) -> HloShape:
    """Parse an HLO array shape string such as ``f32[3,5]{1,0:T(2,2)}``. Book: sec-09-hlo-op."""
    if isinstance(s, HloShape):
        return s
    if not isinstance(s, str):
        raise TypeError(f"shape must be an HLO shape string like 'bf16[4,8]{{1,0}}', got {type(s).__name__}")
    m = _SHAPE.match(s)
    if not m:
        raise ValueError(f"not an HLO array shape: {s!r}; expected e.g. 'bf16[32,32,8192]{{2,1,0:T(8,128)(2,1)}}'")
    dtype = m["dtype"]
    if dtype not in HLO_DTYPE_BYTES:
        raise ValueError(f"unknown HLO element type {dtype!r}; known: {', '.join(HLO_DTYPE_BYTES)}")
    dims = tuple(int(d) for d in m["dims"].replace(" ", "").split(",") if d != "")
    m2m, tiles, space = None, (), None
    lay = m["layout"]
    if lay is not None:
        order, _, rest = lay.partition(":")
        order = order.strip()
        m2m = tuple(int(d) for d in order.split(",") if d.strip() != "") if order else ()
        if sorted(m2m) != list(range(len(dims))):
            raise ValueError(f"layout {{{order}}} of {s!r} must be a permutation of 0..{len(dims) - 1}")
        sm = re.search(r"S\((\d+)\)", rest)
        if sm:
            space = int(sm.group(1))
            rest = rest[:sm.start()] + rest[sm.end():]
        rest = rest.strip()
        if rest:
            if not rest.startswith("T("):
                raise ValueError(f"cannot read the tiling {rest!r} in {s!r}; expected T(a,b)(c,d)...")
            tiles = tuple(tuple(int(x) for x in t.split(",")) for t in re.findall(r"\(([\d,\s]+)\)", rest))
            if any(any(x <= 0 for x in t) for t in tiles):
                raise ValueError(f"tile sizes must be positive in {s!r}")
    return HloShape(dtype, dims, m2m, tiles, space)


def _tile_index(shape: list, idx: list | None, tile: tuple):
    """Apply one tile to the trailing dims of a (physical) shape (and an index into it)."""
    k = len(tile)
    if k > len(shape):
        # a tile may be wider than the array rank: missing major dims count as size 1
        pad = k - len(shape)
        shape = [1] * pad + shape
        idx = None if idx is None else [0] * pad + idx
    head, tail = shape[:-k], shape[-k:]
    outer = [-(-d // t) for d, t in zip(tail, tile)]
    new_shape = head + outer + list(tile)
    if idx is None:
        return new_shape, None
    ih, it = idx[:-k], idx[-k:]
    return new_shape, ih + [i // t for i, t in zip(it, tile)] + [i % t for i, t in zip(it, tile)]


def tiled_shape(s) -> tuple:
    """The physical shape after all nested tiles (its product is the slots in memory)."""
    sh = parse_hlo_shape(s)
    phys = [sh.dims[d] for d in sh.physical_order]
    for t in sh.tiles:
        phys, _ = _tile_index(phys, None, t)
    return tuple(phys)


def padded_shape(s) -> tuple:
    """Logical dims padded to multiples of the outer tile, e.g. f32[3,5] T(2,2) -> (4, 6).

    The outer tile ``T(a, b)`` covers the most-minor physical dims. Book: eq-09-padding.
    """
    sh = parse_hlo_shape(s)
    dims = list(sh.dims)
    if sh.tiles:
        t = sh.tiles[0]
        order = sh.physical_order
        for ti, d in zip(reversed(t), reversed(order)):
            dims[d] = -(-dims[d] // ti) * ti
    return tuple(dims)


def layout_overhead(s) -> float:
    """Memory slots used / logical elements (1.0 = no padding). Book: eq-09-padding."""
    sh = parse_hlo_shape(s)
    if sh.n_elements == 0:
        raise ValueError(f"{s!r} has no elements")
    return math.prod(tiled_shape(sh)) / sh.n_elements


def tiled_offset(index, s) -> int:
    """Linear memory slot of the element at logical ``index`` under the layout and tiles of ``s``.

    Example: ``bf16[4,8]{1,0:T(2,4)(2,1)}``: (0,0)->0, (1,0)->1, (0,1)->2, (0,4)->8, (2,0)->16.
    Book: sec-09-tiling.
    """
    sh = parse_hlo_shape(s)
    index = tuple(index)
    if len(index) != len(sh.dims):
        raise ValueError(f"index {index} has {len(index)} dims; the shape {sh} has {len(sh.dims)}")
    for i, (x, d) in enumerate(zip(index, sh.dims)):
        if not isinstance(x, (int, np.integer)) or not 0 <= x < d:
            raise ValueError(f"index[{i}] = {x!r} is outside 0..{d - 1}")
    phys = [sh.dims[d] for d in sh.physical_order]
    idx = [int(index[d]) for d in sh.physical_order]
    for t in sh.tiles:
        phys, idx = _tile_index(phys, idx, t)
    return int(np.ravel_multi_index(idx, phys))


def memory_order(s) -> np.ndarray:
    """Array of the logical shape holding each element's memory slot (2-D pictures, tests)."""
    sh = parse_hlo_shape(s)
    if sh.n_elements > 1 << 16:
        raise ValueError(f"{sh} has {sh.n_elements} elements; memory_order is meant for small pictures")
    out = np.empty(sh.dims, dtype=np.int64)
    for ix in np.ndindex(*sh.dims):
        out[ix] = tiled_offset(ix, sh)
    return out


# ---- HLO text: instructions, fusions, dots and collectives ----------------------------------

_INSTR = re.compile(r"^\s*(?P<root>ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<rest>.*)$")
_COMP_RX = re.compile(r"^\s*(?P<entry>ENTRY\s+)?%?(?P<name>[\w.\-]+)\s*(\(.*\))?\s*(->.*)?\{\s*$")


class _Comp:
    """Matches a computation header ('%name (params) -> shape {' or 'ENTRY main.1 {'), never an
    instruction (those always contain ' = '; headers may hold '/*index=5*/' comments)."""

    @staticmethod
    def match(line: str):
        return None if " = " in line else _COMP_RX.match(line)


_COMP = _Comp()
COLLECTIVE_KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")


@dataclass(frozen=True)
class HloOp:
    """One HLO instruction: name, opcode, result shape text, and the attributes a reader wants."""

    name: str
    opcode: str
    shape: str
    computation: str
    in_entry: bool
    operands: tuple = ()
    fusion_kind: str = ""
    calls: str = ""
    op_name: str = ""
    attrs: str = ""

    @property
    def nbytes(self) -> float:
        """Bytes of the result (a tuple result sums its arrays)."""
        return sum(parse_hlo_shape(a).nbytes for a in _array_shapes(self.shape))


def _array_shapes(shape_text: str) -> list:
    return re.findall(r"[a-z][a-z0-9]*\[[0-9,]*\](?:\{[^{}]*\})?", shape_text)


def _split_result(rest: str):
    """'f32[2]{0} add(%a, %b), k=v' -> ('f32[2]{0}', 'add', '%a, %b', ', k=v')."""
    if rest.startswith("("):
        depth = 0
        for i, ch in enumerate(rest):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                shape, rest2 = rest[:i + 1], rest[i + 1:].lstrip()
                break
        else:
            return None
    else:
        shape, _, rest2 = rest.partition(" ")
    m = re.match(r"([\w\-]+)\(", rest2)
    if not m:
        return None
    opcode = m.group(1)
    depth, j = 0, m.end() - 1
    for i in range(j, len(rest2)):
        depth += rest2[i] == "("
        depth -= rest2[i] == ")"
        if depth == 0:
            return shape, opcode, rest2[j + 1:i], rest2[i + 1:]
    return None


def _operand_names(text: str) -> tuple:
    names = re.findall(r"%([\w.\-]+)", text)
    if not names:  # unoptimised HLO prints operands without the % sigil
        names = [t.strip().split()[-1] for t in text.split(",") if t.strip() and "[" not in t.strip().split()[-1]]
    return tuple(names)


def hlo_ops(hlo_text: str) -> list:
    """Every instruction of an HLO module text (``compiled.as_text()``), in order."""
    if not isinstance(hlo_text, str):
        raise TypeError(f"hlo_text must be the HLO module text (str), got {type(hlo_text).__name__}")
    if "HloModule" not in hlo_text and "ENTRY" not in hlo_text:
        raise ValueError("this does not look like HLO text (no 'HloModule'/'ENTRY'); pass "
                         "jax.jit(f).lower(...).compile().as_text()")
    ops, comp, entry = [], "", False
    for line in hlo_text.splitlines():
        cm = _COMP.match(line)
        if cm:
            comp, entry = cm["name"], bool(cm["entry"])
            continue
        m = _INSTR.match(line)
        if not m:
            continue
        parts = _split_result(m["rest"])
        if parts is None:
            continue
        shape, opcode, operands, attrs = parts
        kind = re.search(r"kind=(k\w+)", attrs)
        calls = re.search(r"calls=%([\w.\-]+)", attrs)
        opn = re.search(r'op_name="([^"]*)"', attrs)
        ops.append(HloOp(name=m["name"], opcode=opcode, shape=shape, computation=comp,
                         in_entry=entry, operands=_operand_names(operands),
                         fusion_kind=kind.group(1) if kind else "",
                         calls=calls.group(1) if calls else "", op_name=opn.group(1) if opn else "",
                         attrs=attrs))
    if not ops:
        raise ValueError("no HLO instructions found in the text")
    return ops


def hlo_lines(hlo_text: str, pattern: str | None = None, entry_only: bool = True,
              max_lines: int = 40) -> list:
    """Instruction lines of an HLO text without metadata/backend_config (stable to print).

    ``pattern``: keep only lines matching this regex (e.g. ``"dot|all-reduce"``).
    """
    if not isinstance(max_lines, int) or max_lines < 1:
        raise ValueError(f"max_lines must be a positive int, got {max_lines!r}")
    rx = re.compile(pattern) if pattern else None
    out, entry = [], False
    for line in hlo_text.splitlines():
        cm = _COMP.match(line)
        if cm:
            entry = bool(cm["entry"])
            continue
        if not _INSTR.match(line) or (entry_only and not entry):
            continue
        clean = re.sub(r",\s*(metadata|backend_config|frontend_attributes)=(\{.*?\}(?=,\s*\w+=|$)|\S+)", "", line)
        clean = re.sub(r",\s*(metadata|backend_config)=.*$", "", clean).strip()
        if rx is None or rx.search(clean):
            out.append(clean)
        if len(out) >= max_lines:
            break
    return out


__all__.append("hlo_lines")


def _base_kind(opcode: str) -> str:
    return opcode[:-6] if opcode.endswith("-start") else opcode


def hlo_summary(hlo_text: str) -> list:
    """The part of a compiled module a reader needs: the entry computation's fusions, dots,
    convolutions, collectives and custom calls, each with what its fused body contains.

    Returns a list of dicts (name, op, shape, fusion kind, contains, source) in program order.
    Book: sec-09-cost.
    """
    ops = hlo_ops(hlo_text)
    by_comp: dict = {}
    for o in ops:
        by_comp.setdefault(o.computation, []).append(o)

    def body(comp, depth=0):
        found = []
        for o in by_comp.get(comp, []):
            k = _base_kind(o.opcode)
            if k in ("dot", "convolution") or k in COLLECTIVE_KINDS:
                found.append(k)
            if o.calls and depth < 4:
                found += body(o.calls, depth + 1)
        return found

    rows = []
    for o in ops:
        if not o.in_entry:
            continue
        k = _base_kind(o.opcode)
        if o.opcode.endswith("-done"):
            continue
        interesting = k in ("fusion", "dot", "convolution", "custom-call", "while",
                            "conditional", "call") or k in COLLECTIVE_KINDS
        if not interesting:
            continue
        inside = body(o.calls) if o.calls else []
        rows.append({"name": o.name, "op": k, "shape": o.shape, "kind": o.fusion_kind,
                     "contains": ",".join(sorted(set(inside))), "source": o.op_name})
    return rows


def decode_replica_groups(text: str, n_devices: int | None = None):
    """Decode XLA's three replica-group spellings into a tuple of device-id tuples.

    ``{{0,1},{2,3}}`` (explicit), ``[2,4]<=[8]`` / ``[2,4]<=[4,2]T(1,0)`` (iota) and
    ``mesh['axis_0'=4,'axis_1'=2] {'axis_1'}`` (mesh form). Delegates to ``hlo`` (chapter 3).
    """
    from ..hlo import decode_replica_groups as _dec
    return _dec(text, n_devices)


@dataclass(frozen=True)
class Collective:
    """One collective in compiled HLO: kind, result dtype/shape/bytes and its device groups."""

    kind: str
    dtype: str
    shape: tuple
    bytes: float
    replica_groups: str
    groups: tuple | None
    name: str = ""
    operand_bytes: float = 0.0

    @property
    def group_size(self) -> int | None:
        return len(self.groups[0]) if self.groups else None


def collectives(hlo_text: str) -> list:
    """All collectives of a compiled module, in program order (async start/done pairs once).

    Handles the explicit, iota and mesh spellings of replica groups (see
    ``decode_replica_groups``) and tuple-shaped results (CPU's all-to-all). Book: sec-09-collectives.
    """
    ops = hlo_ops(hlo_text)
    shapes = {o.name: o.shape for o in ops}
    npart = re.search(r"num_partitions=(\d+)", hlo_text)
    n_dev = int(npart.group(1)) if npart else None
    out = []
    for o in ops:
        k = _base_kind(o.opcode)
        if k not in COLLECTIVE_KINDS or o.opcode.endswith("-done"):
            continue
        arrs = [parse_hlo_shape(a) for a in _array_shapes(o.shape)]
        if o.opcode.endswith("-start") and len(arrs) > 1 and k != "all-to-all":
            arrs = arrs[-1:]  # async start returns (operand, result[, ...]); keep the result
        rg = re.search(r"replica_groups=(\{(?:\{[\d,\s]*\},?)*\}|\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?"
                       r"|mesh\[[^\]]*\](?:,\s*device_ids=\([^{]*\))?\s*\{[^}]*\})", o.attrs)
        if k == "collective-permute":
            rg = re.search(r"source_target_pairs=(\{(?:\{[\d,\s]*\},?)*\})", o.attrs)
        text = rg.group(1) if rg else ""
        try:
            groups = decode_replica_groups(text, n_dev) if text else None
        except (ValueError, IndexError):
            groups = None
        op_bytes = sum(sum(parse_hlo_shape(a).nbytes for a in _array_shapes(shapes.get(x, "")))
                       for x in o.operands)
        a0 = arrs[0] if arrs else HloShape("f32", ())
        out.append(Collective(kind=k, dtype=a0.dtype, shape=a0.dims,
                              bytes=float(sum(a.nbytes for a in arrs)), replica_groups=text,
                              groups=groups, name=o.name, operand_bytes=float(op_bytes)))
    return out


def collective_counts(hlo_text: str) -> dict:
    """{kind: count} of the collectives in a compiled module (every kind present, 0 if none):
    the library's one counter, ``hlo.count_collectives``, with the absent kinds filled in."""
    from .. import hlo
    hlo_ops(hlo_text)                       # same input check as the rest of this module
    n = hlo.count_collectives(hlo_text)
    return {k: n.get(k, 0) for k in COLLECTIVE_KINDS}


__all__.append("collective_counts")


# ---- stages, compile report, roofline prediction --------------------------------------------

class CompileError(ValueError):
    """The function could not be traced, lowered or compiled (the message says which step)."""


def _lower(f, args, kwargs, jit_kwargs):
    import jax
    if not callable(f):
        raise TypeError(f"f must be a callable (a function or a jax.jit-wrapped function), got {type(f).__name__}")
    name = getattr(f, "__name__", type(f).__name__)
    jf = f if hasattr(f, "lower") and not jit_kwargs else jax.jit(f, **jit_kwargs)
    try:
        return jf.lower(*args, **kwargs), name
    except Exception as e:  # tracing/lowering failed: say so in one line, drop JAX's frames
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise CompileError(f"could not trace/lower {name}(...) with these arguments: "
                           f"{type(e).__name__}: {first[:300]}") from None


def _compile(lowered, name):
    try:
        return lowered.compile()
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise CompileError(f"XLA could not compile {name}(...): {type(e).__name__}: {first[:300]}") from None


def stages(f, *args, jit_kwargs: dict | None = None, **kwargs) -> dict:
    """The IR ladder of ``f`` at ``args`` (arrays or ``jax.ShapeDtypeStruct``): texts of the
    jaxpr, StableHLO, HLO before optimisation and optimised HLO. Book: sec-09-irs."""
    import jax
    jk = jit_kwargs or {}
    lowered, name = _lower(f, args, kwargs, jk)
    try:
        jaxpr = jax.make_jaxpr(f)(*args, **kwargs).pretty_print(use_color=False)
    except Exception:
        jaxpr = ""
    compiled = _compile(lowered, name)
    return {"jaxpr": jaxpr, "stablehlo": lowered.as_text(),
            "hlo_before": lowered.as_text(dialect="hlo"), "hlo_after": compiled.as_text()}


@dataclass(frozen=True)
class OpTime:
    """Roofline time of one op on one device: the three clocks and the binding one (seconds)."""

    t_flops: float
    t_hbm: float
    t_ici: float
    chip: str = ""

    @property
    def t(self) -> float:
        """Perfect-overlap estimate: the slowest of the three clocks."""
        return max(self.t_flops, self.t_hbm, self.t_ici)

    @property
    def bound(self) -> str:
        """'compute', 'hbm' or 'ici'."""
        return max((self.t_flops, "compute"), (self.t_hbm, "hbm"), (self.t_ici, "ici"))[1]

    @property
    def bottleneck(self) -> str:
        return {"compute": "计算受限", "hbm": "HBM 带宽受限", "ici": "ICI 通信受限"}[self.bound]

    def achieved(self, measured_s: float) -> float:
        """Fraction of roofline reached: T_roofline / T_measured. Book: eq-09-achieved."""
        m = float(check_positive("measured_s", measured_s, allow_array=False))
        return self.t / m

    def as_dict(self) -> dict:
        return {"t_flops": self.t_flops, "t_hbm": self.t_hbm, "t_ici": self.t_ici, "t": self.t,
                "bound": self.bound}

    def _rows(self):
        return [("计算 FLOPs/C", fmt_time(self.t_flops)), ("HBM 字节/W_hbm", fmt_time(self.t_hbm)),
                ("ICI 字节/W_ici", fmt_time(self.t_ici)), ("Roofline 估计（取最大）", fmt_time(self.t))]

    def __str__(self) -> str:
        head = f"{self.chip} 上的 Roofline 估计" if self.chip else "Roofline 估计"
        return "\n".join([head] + [f"  {_pad(k, 24)}{v}" for k, v in self._rows()] + [f"  结论：{self.bottleneck}"])

    __repr__ = __str__

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in self._rows())
        return (f"<table><caption>{self.chip} 上的 Roofline 估计</caption>{rows}"
                f"<tr><td><b>结论</b></td><td><b>{self.bottleneck}</b></td></tr></table>")


def expected_op_time(flops, hbm_bytes=0.0, ici_bytes=0.0, chip="v5e", n_devices: int = 1,
                     dtype: str = "bf16") -> OpTime:
    """T_op ≈ max(FLOPs/C, bytes_HBM/W_hbm, bytes_ICI/W_ici) per device. Book: eq-09-optime.

    ``flops``, ``hbm_bytes`` and ``ici_bytes`` are totals over the ``n_devices`` devices the op
    is split over (evenly); pass per-device numbers with ``n_devices=1``. ICI time uses the
    bidirectional bandwidth of one link (the book's W_ici; chapter 3's AllGather ≈ V/W_ici).
    """
    c = _chip(chip)
    f = float(check_nonneg("flops", flops, allow_array=False))
    hb = float(check_nonneg("hbm_bytes", hbm_bytes, allow_array=False))
    ib = float(check_nonneg("ici_bytes", ici_bytes, allow_array=False))
    if not isinstance(n_devices, (int, np.integer)) or isinstance(n_devices, bool) or n_devices < 1:
        raise ValueError(f"n_devices must be a positive int, got {n_devices!r}")
    if ib > 0 and not c.ici_link_bw_1way:
        raise ValueError(f"{c.name} has no ICI bandwidth in the catalogue; set ici_bytes=0 or pick a TPU")
    t_ici = ib / n_devices / c.ici_bw_bidi if ib else 0.0
    return OpTime(t_flops=f / n_devices / c.peak(dtype), t_hbm=hb / n_devices / c.hbm_bw,
                  t_ici=t_ici, chip=c.name)


#: bytes on the busiest link per byte of the collective's array, under chapter 3's ring model
_ICI_FACTOR = {"all-gather": 1.0, "reduce-scatter": 1.0, "all-reduce": 2.0, "all-to-all": 0.25,
               "collective-permute": 1.0}


@dataclass(frozen=True)
class CompileReport:
    """What XLA says about one compiled program (numbers are per device for sharded programs)."""

    name: str
    flops: float
    bytes_accessed: float
    transcendentals: float
    argument_bytes: float
    output_bytes: float
    temp_bytes: float
    alias_bytes: float
    n_devices: int
    collectives: tuple
    ops: tuple
    hlo: str = field(repr=False, default="")

    @property
    def memory_bytes(self) -> float:
        """argument + output + temp − alias: our estimate of the program's device memory."""
        return self.argument_bytes + self.output_bytes + self.temp_bytes - self.alias_bytes

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes_accessed if self.bytes_accessed else float("inf")

    @property
    def ici_bytes(self) -> float:
        """Bytes the collectives push over the busiest link (ring model, (n-1)/n ignored)."""
        tot = 0.0
        for c in self.collectives:
            base = c.operand_bytes if c.kind == "reduce-scatter" and c.operand_bytes else c.bytes
            tot += _ICI_FACTOR[c.kind] * base
        return tot

    def sources(self) -> dict:
        """{HLO op name: source op_name metadata} of the entry's fusions/dots/collectives, to
        attribute trace time (which names HLO ops) to lines of the JAX program."""
        return {dict(o)["name"]: dict(o)["source"] for o in self.ops}

    def collective_counts(self) -> dict:
        return {k: sum(c.kind == k for c in self.collectives) for k in COLLECTIVE_KINDS
                if any(c.kind == k for c in self.collectives)}

    def predict(self, chip, dtype: str = "bf16", include_ici: bool = True) -> OpTime:
        """Roofline time of this program on one device of ``chip`` from XLA's own counts."""
        return expected_op_time(self.flops, self.bytes_accessed,
                                self.ici_bytes if include_ici else 0.0, chip, 1, dtype)

    def as_dict(self) -> dict:
        return {"flops": self.flops, "bytes_accessed": self.bytes_accessed,
                "transcendentals": self.transcendentals, "argument_bytes": self.argument_bytes,
                "output_bytes": self.output_bytes, "temp_bytes": self.temp_bytes,
                "alias_bytes": self.alias_bytes, "memory_bytes": self.memory_bytes,
                "n_devices": self.n_devices, "ici_bytes": self.ici_bytes,
                "collectives": self.collective_counts()}

    def _rows(self):
        cc = self.collective_counts()
        return [("每设备 FLOPs", fmt_num(self.flops)), ("每设备访存字节", fmt_bytes(self.bytes_accessed)),
                ("算术强度", f"{fmt_num(self.intensity)} FLOPs/字节"),
                ("超越函数次数", fmt_num(self.transcendentals)),
                ("参数 + 输出 + 临时 − 别名", fmt_bytes(self.memory_bytes)),
                ("设备数", str(self.n_devices)),
                ("集合通信", "，".join(f"{k}×{v}" for k, v in cc.items()) or "无")]

    def __str__(self) -> str:
        return "\n".join([f"{self.name} 的编译报告"] + [f"  {_pad(k, 26)}{v}" for k, v in self._rows()])

    __repr__ = __str__

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in self._rows())
        return f"<table><caption>{self.name} 的编译报告</caption>{rows}</table>"


def compile_report(f, *args, jit_kwargs: dict | None = None, **kwargs) -> CompileReport:
    """Compile ``f`` at ``args`` (arrays or ``ShapeDtypeStruct``, possibly sharded) and collect
    cost_analysis, memory_analysis, collectives and the entry fusions. Book: sec-09-cost.

    A function that fails to trace or compile raises ``CompileError`` naming the step.
    """
    lowered, name = _lower(f, args, kwargs, jit_kwargs or {})
    compiled = _compile(lowered, name)
    cost = compiled.cost_analysis()
    if isinstance(cost, (list, tuple)):  # older JAX returned a list with one dict
        cost = cost[0] if cost else {}
    cost = cost or {}
    mem = compiled.memory_analysis()
    hlo = compiled.as_text()
    npart = re.search(r"num_partitions=(\d+)", hlo.split("\n", 1)[0])
    g = (lambda k: float(getattr(mem, k, 0) or 0)) if mem is not None else (lambda k: 0.0)
    return CompileReport(name=name, flops=float(cost.get("flops", 0.0)),
                         bytes_accessed=float(cost.get("bytes accessed", 0.0)),
                         transcendentals=float(cost.get("transcendentals", 0.0)),
                         argument_bytes=g("argument_size_in_bytes"),
                         output_bytes=g("output_size_in_bytes"), temp_bytes=g("temp_size_in_bytes"),
                         alias_bytes=g("alias_size_in_bytes"),
                         n_devices=int(npart.group(1)) if npart else 1,
                         collectives=tuple(collectives(hlo)), ops=tuple(map(_freeze, hlo_summary(hlo))),
                         hlo=hlo)


def _freeze(d: dict) -> tuple:
    return tuple(d.items())


# ---- traces ---------------------------------------------------------------------------------

class NoTraceError(ValueError):
    """A folder (or path) that holds no ``*.xplane.pb`` trace."""


def find_trace(logdir) -> str:
    """The newest ``*.xplane.pb`` under ``logdir`` (searched recursively; names are globbed,
    never assumed). Raises ``NoTraceError`` if there is none."""
    if not isinstance(logdir, (str, os.PathLike)):
        raise TypeError(f"logdir must be a path, got {type(logdir).__name__}")
    p = os.fspath(logdir)
    if os.path.isfile(p):
        if p.endswith(".xplane.pb"):
            return p
        raise NoTraceError(f"{p} is not an .xplane.pb trace file")
    if not os.path.isdir(p):
        raise NoTraceError(f"trace folder {p} does not exist; capture one with capture_trace(f, ..., logdir={p!r})")
    hits = glob.glob(os.path.join(p, "**", "*.xplane.pb"), recursive=True)
    if not hits:
        raise NoTraceError(f"no *.xplane.pb trace under {p}; the folder exists but holds no profile "
                           "(was jax.profiler.trace pointed at it, and did the traced block run?)")
    return max(hits, key=lambda h: (os.path.getmtime(h), h))


def capture_trace(f, *args, logdir, steps: int = 3, perfetto: bool = True) -> str:
    """Run ``f(*args)`` once to compile, then ``steps`` times under ``jax.profiler.trace`` with
    a ``StepTraceAnnotation`` per step; return the path of the new ``.xplane.pb``. Book:
    sec-09-profiler. Open the folder with TensorBoard/XProf or the ``perfetto_trace.json.gz``
    in ui.perfetto.dev (see ``viewer_help``)."""
    import jax
    if not callable(f):
        raise TypeError(f"f must be callable, got {type(f).__name__}")
    if not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= 100:
        raise ValueError(f"steps must be an int in 1..100, got {steps!r}")
    if not isinstance(logdir, (str, os.PathLike)):
        raise TypeError(f"logdir must be a path, got {type(logdir).__name__}")
    logdir = os.fspath(logdir)
    try:
        jax.block_until_ready(f(*args))  # compile outside the trace
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise CompileError(f"{getattr(f, '__name__', 'f')}(...) failed before tracing: "
                           f"{type(e).__name__}: {first[:300]}") from None
    os.makedirs(logdir, exist_ok=True)
    before = set(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))
    t0 = time.time()
    with jax.profiler.trace(logdir, create_perfetto_trace=perfetto):
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation("step", step_num=i):
                jax.block_until_ready(f(*args))
    new = [h for h in glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)
           if h not in before or os.path.getmtime(h) >= t0 - 1]
    if not new:
        raise NoTraceError(f"jax.profiler.trace wrote no .xplane.pb under {logdir}")
    return max(new, key=lambda h: (os.path.getmtime(h), h))


@dataclass(frozen=True)
class TraceEvent:
    """One event of a trace: where it ran (plane/line), what it was, when and how long (ns)."""

    plane: str
    line: str
    name: str
    start_ns: float
    duration_ns: float
    hlo_op: str = ""
    hlo_module: str = ""
    step: int | None = None
    device: int | None = None       #: device ordinal of an XLA op (CPU traces: ``device_ordinal``)
    run_id: int | None = None       #: which execution of the program the op belongs to


def trace_events(path) -> list:
    """Events of an ``.xplane.pb`` (or the newest one under a folder) as ``TraceEvent`` rows.

    XLA ops carry ``hlo_op``/``hlo_module`` (on TPU/GPU they sit on the device planes' "XLA Ops"
    line; on CPU on the ``…PjRtCpuClient`` thread lines); ``StepTraceAnnotation`` events carry
    ``step``. Zero-length bookkeeping events are dropped.
    """
    from jax.profiler import ProfileData
    pb = find_trace(path)
    try:
        data = ProfileData.from_file(pb)
    except Exception as e:
        raise NoTraceError(f"{pb} could not be read as a trace: {type(e).__name__}") from None
    out = []
    for plane in data.planes:
        for line in plane.lines:
            for ev in line.events:
                if ev.duration_ns <= 0 or ev.name.startswith("end: "):
                    continue
                st = dict(ev.stats)
                step = st.get("step_num")
                dev = st.get("device_ordinal", st.get("global_device_id"))
                run = st.get("run_id")
                out.append(TraceEvent(plane=plane.name, line=line.name, name=ev.name,
                                      start_ns=float(ev.start_ns), duration_ns=float(ev.duration_ns),
                                      hlo_op=str(st.get("hlo_op", "")),
                                      hlo_module=str(st.get("hlo_module", "")),
                                      step=int(step) if step is not None else None,
                                      device=int(dev) if dev is not None else None,
                                      run_id=int(run) if run is not None else None))
    return out


@dataclass(frozen=True)
class OpRow:
    op: str
    module: str
    count: int
    total_s: float
    share: float

    @property
    def mean_s(self) -> float:
        return self.total_s / self.count


@dataclass(frozen=True)
class OpTable:
    """XLA op time in a trace, largest first (what Trace Viewer's op rows add up to)."""

    rows: tuple
    total_s: float

    def __str__(self) -> str:
        lines = [f"{'HLO 算子':<28}{'模块':<22}{'次数':>6}{'总耗时':>12}{'平均':>12}{'占比':>8}"]
        for r in self.rows:
            lines.append(f"{r.op[:27]:<28}{r.module[:21]:<22}{r.count:>6}{fmt_time(r.total_s):>12}"
                         f"{fmt_time(r.mean_s):>12}{r.share:>8.1%}")
        lines.append(f"合计 XLA 算子时间：{fmt_time(self.total_s)}")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        body = "".join(f"<tr><td>{r.op}</td><td>{r.module}</td><td>{r.count}</td>"
                       f"<td>{fmt_time(r.total_s)}</td><td>{fmt_time(r.mean_s)}</td>"
                       f"<td>{r.share:.1%}</td></tr>" for r in self.rows)
        return ("<table><thead><tr><th>HLO 算子</th><th>模块</th><th>次数</th><th>总耗时</th>"
                f"<th>平均</th><th>占比</th></tr></thead><tbody>{body}</tbody>"
                f"<caption>合计 XLA 算子时间：{fmt_time(self.total_s)}</caption></table>")


def op_table(events, top: int = 15, module: str | None = None) -> OpTable:
    """Sum XLA op durations by (hlo_op, hlo_module). ``events`` is a list of ``TraceEvent`` or a
    trace path/folder. Book: sec-09-trace-table."""
    if isinstance(events, (str, os.PathLike)):
        events = trace_events(events)
    if not isinstance(top, int) or top < 1:
        raise ValueError(f"top must be a positive int, got {top!r}")
    acc: dict = {}
    for e in events:
        if not e.hlo_op or (module is not None and module not in e.hlo_module):
            continue
        k = (e.hlo_op, e.hlo_module)
        n, t = acc.get(k, (0, 0.0))
        acc[k] = (n + 1, t + e.duration_ns * 1e-9)
    if not acc:
        raise NoTraceError("the trace has no XLA op events (events with an hlo_op stat)"
                           + (f" for module {module!r}" if module else ""))
    total = sum(t for _, t in acc.values())
    rows = sorted(((op, mod, n, t) for (op, mod), (n, t) in acc.items()), key=lambda r: (-r[3], r[0]))
    return OpTable(rows=tuple(OpRow(op, mod, n, t, t / total) for op, mod, n, t in rows[:top]),
                   total_s=total)


def step_times(events) -> list:
    """Durations (s) of the ``StepTraceAnnotation`` steps in a trace, in step order."""
    if isinstance(events, (str, os.PathLike)):
        events = trace_events(events)
    steps = sorted((e.step, e.duration_ns * 1e-9) for e in events if e.step is not None)
    return [t for _, t in steps]


def viewer_help(logdir) -> str:
    """How to open a captured trace (Chinese text, relative paths only)."""
    pb = find_trace(logdir)
    folder = os.path.dirname(pb)
    perf = sorted(glob.glob(os.path.join(folder, "*perfetto*.json.gz"))
                  or glob.glob(os.path.join(folder, "*.trace.json.gz")))
    lines = ["打开这个 profile 的两种办法：",
             "  1. Perfetto：浏览器打开 https://ui.perfetto.dev ，点 Open trace file，选"
             + (f" {os.path.basename(perf[0])}" if perf else "文件夹里的 .trace.json.gz") + "。",
             "  2. TensorBoard + XProf：pip install -U xprof（旧版：tensorboard tensorboard-plugin-profile），"
             "再运行 tensorboard --logdir <你的 logdir>，打开 Profile 页的 Trace Viewer。"]
    return "\n".join(lines)


# ---- chapter 10: collective matmul time model -----------------------------------------------

@dataclass(frozen=True)
class CollectiveMatmulTime:
    """Modelled time of A[B_X, D_Y]·W[D, F_Y] on one device: naive (AllGather, then matmul)
    against the ring collective matmul that overlaps each ppermute with a chunk of compute."""

    naive: float
    collective: float
    no_comm: float
    t_compute_step: float
    t_permute_step: float
    n: int

    @property
    def hidden(self) -> bool:
        """True when every ppermute fits under the chunk of compute beside it."""
        return self.t_permute_step <= self.t_compute_step

    @property
    def speedup(self) -> float:
        return self.naive / self.collective

    def as_dict(self) -> dict:
        return {"naive": self.naive, "collective": self.collective, "no_comm": self.no_comm,
                "t_compute_step": self.t_compute_step, "t_permute_step": self.t_permute_step,
                "hidden": self.hidden}


def _cm_checks(B, D, F, X, Y, bytes_per_elem):
    for nm, v in (("B", B), ("D", D), ("F", F), ("bytes_per_elem", bytes_per_elem)):
        check_positive(nm, v, allow_array=False)
    for nm, v in (("X", X), ("Y", Y)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{nm} must be a positive int (mesh axis size), got {v!r}")


def collective_matmul_time(B, D, F, X, Y, chip="v5e", bytes_per_elem=2, bidirectional=False,
                           dtype="bf16", wrap: bool = True,
                           peak_flops: float | None = None) -> CollectiveMatmulTime:
    """Time model of the AllGather-side collective matmul. Book: eq-10-cm-time.

    Both sides are counted the same way (bandwidth terms exact, no latency):

    - compute chunk t_c = 2(B/X)(D/n)(F/n)/C; no_comm = n·t_c;
    - naive = exact AllGather of V = b(B/X)D over the n devices of the Y axis, then n·t_c:
      ring with wraparound (``wrap=True``) (n-1)/n·V/W_bi (both directions of every link);
      line without wraparound (``wrap=False``, e.g. a v5e 2x4 slice) (n-1)/n·V/W_1way (the end
      links carry n-1 chunks one way);
    - collective = t_c + (n-1)·max(t_c, t_p), one block b(B/X)(D/n) per step: t_p = block/W_1way,
      or block/W_bi when ``bidirectional`` on a ring (half the block each way). On a line the
      bidirectional version gains nothing: the wrap message of each direction crosses every link,
      so each link direction still carries a whole block per step (t_p = block/W_1way).

    ``peak_flops`` overrides C (e.g. the rate implied by a measured matmul in another dtype).
    """
    _cm_checks(B, D, F, X, Y, bytes_per_elem)
    if not isinstance(wrap, (bool, np.bool_)):
        raise TypeError(f"wrap must be True (ring) or False (line), got {wrap!r}")
    c = _chip(chip)
    if not c.ici_link_bw_1way:
        raise ValueError(f"{c.name} has no ICI bandwidth in the catalogue; pick a TPU")
    C = c.peak(dtype) if peak_flops is None else check_positive("peak_flops", peak_flops,
                                                                   allow_array=False)
    n = int(Y)
    bx = B / X
    t_c = 2 * bx * (D / n) * (F / n) / C
    w1 = c.ici_link_bw_1way
    block = bytes_per_elem * bx * (D / n)
    w_step = 2 * w1 if (bidirectional and wrap and n > 2) else w1
    t_p = block / w_step if n > 1 else 0.0
    no_comm = n * t_c
    w_ag = 2 * w1 if (wrap and n > 2) else w1
    naive = ((n - 1) / n * bytes_per_elem * bx * D / w_ag if n > 1 else 0.0) + no_comm
    coll = t_c + (n - 1) * max(t_c, t_p)
    return CollectiveMatmulTime(naive=naive, collective=coll, no_comm=no_comm,
                                t_compute_step=t_c, t_permute_step=t_p, n=n)


def collective_matmul_timeline(B, D, F, X, Y, chip="v5e", bytes_per_elem=2,
                               bidirectional=False, dtype="bf16", mode="collective",
                               wrap: bool = True, peak_flops: float | None = None) -> list:
    """(kind, device, start_s, end_s) bars of one device row group for a Gantt chart.

    ``mode='collective'``: n compute chunks, ppermute k overlapping chunk k; ``'naive'``: one
    AllGather, then one matmul. Every device of the ring runs the same schedule.
    """
    if mode not in ("collective", "naive"):
        raise ValueError(f"mode must be 'collective' or 'naive', got {mode!r}")
    m = collective_matmul_time(B, D, F, X, Y, chip, bytes_per_elem, bidirectional, dtype,
                               wrap=wrap, peak_flops=peak_flops)
    bars = []
    for dev in range(int(Y)):
        if mode == "naive":
            ag = m.naive - m.no_comm
            if ag > 0:
                bars.append(("allgather", dev, 0.0, ag))
            bars.append(("compute", dev, ag, m.naive))
            continue
        t = 0.0
        for k in range(m.n):
            bars.append(("compute", dev, t, t + m.t_compute_step))
            if k < m.n - 1:
                bars.append(("ppermute", dev, t, t + m.t_permute_step))
                t += max(m.t_compute_step, m.t_permute_step)
    return bars


# ---- what the profiler's viewers show, computed from a trace and from the HLO -----------------
# (drawn by scaling_lib.diagrams.trace_timeline / fusion_graph / memory_timeline; book: sec-09-*)

_COLL_RX = re.compile(r"all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute|"
                      r"\bsend\b|\brecv\b|allreduce|allgather|reducescatter", re.I)
_MATMUL_RX = re.compile(r"dot|ynn_fusion|gemm|matmul|convolution|cublas|custom-call", re.I)

#: categories of timeline bars (Chinese labels as shown in the legend)
BAR_KINDS = {"step": "训练步（StepTraceAnnotation）", "host": "主机 Python", "module": "XLA 模块",
             "matmul": "矩阵乘法融合", "collective": "集合通信", "other": "其他 XLA 算子"}


@dataclass(frozen=True)
class TimelineBar:
    """One bar of a Trace-Viewer-style timeline: lane, label, start and duration (s), kind."""

    lane: str
    name: str
    start_s: float
    duration_s: float
    kind: str
    source: str = ""


def _device_of_line(events_on_line) -> int | None:
    for e in events_on_line:
        m = re.match(r"\[(\d+)\] .*Execute", e.name)
        if m:
            return int(m.group(1))
    return None


def timeline_bars(events, sources: dict | None = None, step: int | None = None,
                  python_min_s: float = 0.0) -> list:
    """A trace arranged as the Trace Viewer arranges it: host lanes (training steps, the longest
    Python calls), and per device an "XLA 模块" lane (the executable) and an "XLA 算子" lane (each
    HLO op, with collectives and matmul fusions told apart). Times in seconds from the start of
    the window (the whole trace, or step ``step`` of the ``StepTraceAnnotation``\\ s).

    Works on CPU traces (XLA ops on the ``…PjRtCpuClient`` thread lines, one per simulated device)
    and on TPU/GPU traces (``/device:…`` planes with "XLA Modules"/"XLA Ops" lines). ``sources``
    (``CompileReport.sources()``) adds each op's JAX source (``op_name``, with named scopes) and
    marks fusions that hold a dot as matmuls.
    """
    if isinstance(events, (str, os.PathLike)):
        events = trace_events(events)
    if not events:
        raise NoTraceError("the trace has no events")
    sources = dict(sources or {})
    t0 = min(e.start_ns for e in events)
    t1 = max(e.start_ns + e.duration_ns for e in events)
    steps = sorted((e.step, e.start_ns, e.start_ns + e.duration_ns) for e in events if e.step is not None)
    if step is not None:
        hit = [s for s in steps if s[0] == step]
        if not hit:
            raise ValueError(f"the trace has no step {step}; steps: {[s[0] for s in steps]}")
        t0, t1 = hit[0][1], hit[0][2]
    by_line: dict = {}
    for e in events:
        by_line.setdefault((e.plane, e.line), []).append(e)
    dev_of = {}
    for (plane, line), evs in by_line.items():
        if plane.startswith("/device:"):
            m = re.search(r"(\d+)$", plane)
            dev_of[(plane, line)] = int(m.group(1)) if m else 0
        elif any(e.hlo_op for e in evs):
            d = _device_of_line(evs)
            dev_of[(plane, line)] = d if d is not None else len(dev_of)
    bars = []

    def add(lane, e, kind, source=""):
        s, f = max(e.start_ns, t0), min(e.start_ns + e.duration_ns, t1)
        if f <= s:
            return
        bars.append(TimelineBar(lane, e.hlo_op or e.name, (s - t0) * 1e-9, (f - s) * 1e-9, kind,
                                source))

    runs: dict = {}
    for (plane, line), evs in sorted(by_line.items()):
        if (plane, line) in dev_of:
            for e in evs:
                d = e.device if e.device is not None else dev_of[(plane, line)]
                if e.hlo_op:
                    src = sources.get(e.hlo_op, "")
                    if _COLL_RX.search(e.hlo_op):
                        kind = "collective"
                    elif src:          # the compiled program says where the op came from
                        kind = ("matmul" if re.search(r"dot_general|conv_general", src)
                                and not re.match(r"(transpose|copy|bitcast)", e.hlo_op) else "other")
                    else:
                        kind = "matmul" if _MATMUL_RX.search(e.hlo_op) else "other"
                    add(f"设备 {d} · XLA 算子", e, kind, src)
                    # the module row: from the first to the last op of one run on one device
                    key = (d, e.run_id if e.run_id is not None else e.hlo_module)
                    a0, b0 = runs.get(key, (e.start_ns, e.start_ns + e.duration_ns))
                    runs[key] = (min(a0, e.start_ns), max(b0, e.start_ns + e.duration_ns))
                elif line == "XLA Modules":
                    add(f"设备 {d} · XLA 模块", e, "module")
        elif line == "python" or line.lower().startswith("python"):
            for e in evs:
                if e.step is not None:
                    add("主机 · 训练步", e, "step")
                elif e.duration_ns * 1e-9 >= python_min_s and not e.name.startswith("$"):
                    add("主机 · Python", e, "host")
    if not any(b.lane.endswith("XLA 模块") for b in bars):
        name = next((e.hlo_module for e in events if e.hlo_module), "XLA 模块")
        for (d, _), (a0, b0) in sorted(runs.items(), key=lambda kv: (kv[0][0], kv[1])):
            add(f"设备 {d} · XLA 模块", TraceEvent("", "", name, a0, b0 - a0), "module")
    if not any(b.kind in ("matmul", "collective", "other") for b in bars):
        raise NoTraceError("the trace has no XLA op events in the window")
    return sorted(bars, key=lambda b: (b.lane, b.start_s))


@dataclass(frozen=True)
class MemoryProfile:
    """Live bytes over the scheduled entry computation of a compiled program.

    ``live[i]``: bytes of the buffers alive while instruction ``i`` (``names[i]``) runs;
    ``peak_index``: where ``live`` peaks; ``at_peak``: the buffers alive there, largest first, as
    (name, opcode, bytes, source). A model of XProf's Memory Profile (bytes over the program) and
    Memory Viewer (buffers at the peak); it works from the HLO alone, so on any backend.
    """

    names: tuple
    opcodes: tuple
    live: np.ndarray
    peak_index: int
    at_peak: tuple
    argument_bytes: float

    @property
    def peak_bytes(self) -> float:
        return float(self.live[self.peak_index])


_ALIAS_OPS = {"bitcast", "get-tuple-element", "tuple", "copy-done", "all-reduce-done",
              "all-gather-done", "collective-permute-done", "opt-barrier"}


def memory_profile(hlo_text: str) -> MemoryProfile:
    """Live-buffer bytes along the entry computation of an optimised HLO module.

    Each instruction's result is allocated when it runs and freed after its last user (or kept
    to the end if it is the ROOT); parameters live throughout; ``bitcast``, ``tuple`` and
    ``get-tuple-element`` allocate nothing and only extend the life of what they refer to.
    Ignores XLA's buffer reuse and in-place updates, and what happens inside fusions and loops
    (their temporaries are not in the entry computation): compare ``CompileReport.memory_bytes``.
    """
    ops = [o for o in hlo_ops(hlo_text) if o.in_entry]
    if not ops:
        raise ValueError("the HLO has no ENTRY computation instructions")
    idx = {o.name: i for i, o in enumerate(ops)}
    n = len(ops)
    root = n - 1
    for i, o in enumerate(ops):
        if re.search(rf"ROOT\s+%?{re.escape(o.name)}\s*=", hlo_text):
            root = i
    # buffer owner of each instruction (aliases point to their operand's owner)
    owner = list(range(n))
    for i, o in enumerate(ops):
        if o.opcode in _ALIAS_OPS and o.operands and o.operands[0] in idx:
            owner[i] = owner[idx[o.operands[0]]]
    size = np.zeros(n)
    for i, o in enumerate(ops):
        if owner[i] == i:
            try:
                size[i] = o.nbytes
            except ValueError:
                size[i] = 0.0
    last = list(range(n))
    for i, o in enumerate(ops):
        for a in o.operands:
            if a in idx:
                j = owner[idx[a]]
                last[j] = max(last[j], i)
    for i in range(n):
        if owner[i] != i:
            last[owner[i]] = max(last[owner[i]], last[i])
    last[owner[root]] = n - 1
    params = [i for i, o in enumerate(ops) if o.opcode == "parameter"]
    for i in params:
        last[i] = n - 1
    live = np.zeros(n)
    for i in range(n):
        if owner[i] == i and size[i]:
            start = 0 if i in params else i
            live[start:last[i] + 1] += size[i]
    peak = int(np.argmax(live))
    alive = [(ops[i].name, ops[i].opcode, float(size[i]), ops[i].op_name) for i in range(n)
             if owner[i] == i and size[i] and (0 if i in params else i) <= peak <= last[i]]
    alive.sort(key=lambda r: (-r[2], r[0]))
    return MemoryProfile(names=tuple(o.name for o in ops), opcodes=tuple(o.opcode for o in ops),
                         live=live, peak_index=peak, at_peak=tuple(alive),
                         argument_bytes=float(size[params].sum()) if params else 0.0)


__all__ += ["BAR_KINDS", "TimelineBar", "timeline_bars", "MemoryProfile", "memory_profile"]
