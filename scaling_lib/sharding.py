"""The book's sharding notation as data, and the rules for multiplying sharded matrices.

Units: SI (bytes, FLOPs, seconds). Book: sec-03-notation … sec-03-collectives (第3章); used by
the training (第5章), inference (第7章) and JAX (第10章) chapters.

``parse("A[I_X, J]")`` gives a ``ShardedArray``: an array name, its dimension names, the mesh
axes each dimension is sharded over (in major-to-minor order: ``I_XY`` means X then Y) and the
axes over which it is unreduced (``{U_X}``: every device holds a partial sum). A mesh is a dict
``{"X": 4, "Y": 2}`` (a ``jax.sharding.Mesh`` is accepted too). ``str()`` round-trips the notation.

``matmul(a, b, mesh)`` applies the chapter's four cases:

1. neither contracting dimension sharded: multiply locally, no communication;
2. one contracting dimension sharded: AllGather it first (or slice the other operand for free
   and treat it as case 3, ``strategy="reduce"``);
3. both contracting dimensions sharded over the same axes: multiply locally into an unreduced
   result, then AllReduce or ReduceScatter it;
4. the same mesh axis on a non-contracting dimension of each operand: AllGather one operand.

and returns a ``MatmulPlan`` with the collectives (kind, mesh axes, bytes as chapter 3 defines
them), the output sharding, FLOPs per device, and, given a chip, compute and communication time.
The subscript edits ``all_gather``, ``reduce_scatter``, ``all_reduce``, ``all_to_all`` and
``reshard_steps`` move between shardings.

Ignores: the cost of the local dynamic slices (free), overlap of communication with compute
(the plan reports both the max and the sum), batch dimensions shared by both operands.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from .units import dtype_bytes, fmt_bytes, fmt_num, fmt_time

__all__ = ["ShardedArray", "Step", "MatmulPlan", "parse", "as_mesh", "all_gather",
           "reduce_scatter", "all_reduce", "all_to_all", "reshard_steps", "matmul",
           "matmul_case", "collective_bytes", "strategy_times", "reshard_cost",
           "ring_link_load", "expected_hlo", "compiled_collectives", "COLLECTIVES", "T_HOP"]

#: the collectives a plan may contain, with their Chinese names for tables
COLLECTIVES = {"all_gather": "AllGather", "reduce_scatter": "ReduceScatter",
               "all_reduce": "AllReduce", "all_to_all": "AllToAll", "permute": "ppermute",
               "slice": "本地切片"}

_SPEC = re.compile(r"^\s*(?P<name>[A-Za-z][A-Za-z0-9]*(?:_[a-z][A-Za-z0-9]*)*)?\s*"
                   r"\[(?P<dims>[^\]]*)\]\s*(?:\{(?P<unred>[^}]*)\})?\s*$")
_DIM = re.compile(r"^(?P<dim>[A-Za-z][A-Za-z0-9]*)(?:_(?:\{(?P<braced>[^}]*)\}|(?P<plain>[A-Z]+)))?$")


# ---------------------------------------------------------------------------------------------
# meshes
# ---------------------------------------------------------------------------------------------
def as_mesh(mesh) -> dict[str, int]:
    """A mesh as an ordered ``{axis: size}`` dict; accepts a dict or a ``jax.sharding.Mesh``."""
    if isinstance(mesh, dict):
        items = mesh.items()
    elif hasattr(mesh, "axis_names") and hasattr(mesh, "shape"):
        items = dict(mesh.shape).items()
    else:
        raise TypeError(f"mesh must be a dict like {{'X': 4, 'Y': 2}} or a jax Mesh, "
                        f"got {type(mesh).__name__} {mesh!r}")
    out = {}
    for k, v in items:
        if not isinstance(k, str) or not re.fullmatch(r"[A-Z]", k):
            raise ValueError(f"mesh axis names must be single capital letters (X, Y, Z, ...), "
                             f"got {k!r}")
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"mesh axis {k} must have a positive int size, got {v!r}")
        out[k] = int(v)
    if not out:
        raise ValueError("mesh must have at least one axis, e.g. {'X': 4, 'Y': 2}")
    return out


def _nbytes_per_elem(dtype) -> float:
    if isinstance(dtype, str):
        return dtype_bytes(dtype)
    if isinstance(dtype, bool) or not isinstance(dtype, (int, float)) or dtype <= 0:
        raise TypeError(f"dtype must be a name such as 'bf16' or bytes per element (> 0), "
                        f"got {dtype!r}")
    return float(dtype)


# ---------------------------------------------------------------------------------------------
# the notation
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ShardedArray:
    """One array in the book's notation, e.g. ``A[I_X, J_Y]`` or ``Out[I, K]{U_X}``.

    name: array name ("A"); dims: dimension names ("I", "J"); axes: for each dimension the mesh
    axes that shard it, major first (``()`` = not sharded); unreduced: mesh axes over which the
    devices hold partial sums that still have to be added up.
    """

    name: str
    dims: tuple
    axes: tuple
    unreduced: tuple = ()

    def __post_init__(self):
        if len(self.dims) != len(self.axes):
            raise ValueError(f"{self.name}: {len(self.dims)} dims but {len(self.axes)} axis tuples")
        object.__setattr__(self, "dims", tuple(self.dims))
        object.__setattr__(self, "axes", tuple(tuple(a) for a in self.axes))
        object.__setattr__(self, "unreduced", tuple(self.unreduced))
        if len(set(self.dims)) != len(self.dims):
            dup = next(d for d in self.dims if self.dims.count(d) > 1)
            raise ValueError(f"{self}: dimension name {dup!r} appears twice")
        seen: dict[str, str] = {}
        for d, ax in zip(self.dims, self.axes):
            for a in ax:
                part = _dim_str(d, ax)
                if a in seen:
                    where = "twice in " + repr(part) if seen[a] == part else \
                        f"in {seen[a]!r} and in {part!r}"
                    raise ValueError(f"mesh axis {a!r} is used {where} of {self}: a mesh axis "
                                     f"may shard only one dimension, once")
                seen[a] = part
        for a in self.unreduced:
            if a in seen:
                raise ValueError(f"mesh axis {a!r} is both sharding {seen[a]!r} and unreduced "
                                 f"(U_{a}) in {self}: reduce or move it first")
            if self.unreduced.count(a) > 1:
                raise ValueError(f"mesh axis {a!r} appears twice in the unreduced set of {self}")

    # -- notation -------------------------------------------------------------------------
    def __str__(self) -> str:
        body = ", ".join(_dim_str(d, ax) for d, ax in zip(self.dims, self.axes))
        red = "{U_" + "".join(self.unreduced) + "}" if self.unreduced else ""
        return f"{self.name}[{body}]{red}"

    def latex(self) -> str:
        """The notation as LaTeX: ``A[I_{X},J]\\{U_{Y}\\}``."""
        body = ",".join(d + ("_{" + "".join(ax) + "}" if ax else "") for d, ax in zip(self.dims, self.axes))
        red = r"\{U_{" + "".join(self.unreduced) + r"}\}" if self.unreduced else ""
        name = self.name if len(self.name) == 1 else r"\text{" + self.name.replace("_", r"\_") + "}"
        return f"{name}[{body}]{red}"

    @property
    def used_axes(self) -> tuple:
        """Mesh axes that shard some dimension, in order of appearance."""
        return tuple(a for ax in self.axes for a in ax)

    def axes_of(self, dim: str) -> tuple:
        """The mesh axes sharding dimension ``dim``."""
        return self.axes[self._index(dim)]

    def _index(self, dim: str) -> int:
        if dim not in self.dims:
            raise ValueError(f"{self} has no dimension {dim!r}; its dimensions are "
                             f"{', '.join(self.dims)}")
        return self.dims.index(dim)

    def with_axes(self, dim: str, axes) -> "ShardedArray":
        i = self._index(dim)
        new = list(self.axes)
        new[i] = tuple(axes)
        return replace(self, axes=tuple(new))

    def renamed(self, name: str) -> "ShardedArray":
        return replace(self, name=name)

    # -- arithmetic on a mesh -------------------------------------------------------------
    def validate(self, mesh, shape=None) -> None:
        """Raise ValueError on an axis missing from ``mesh`` or a dimension its axes don't divide."""
        m = as_mesh(mesh)
        for d, ax in zip(self.dims, self.axes):
            for a in ax:
                if a not in m:
                    raise ValueError(f"unknown mesh axis {a!r} in {_dim_str(d, ax)!r} of {self}; "
                                     f"the mesh has {', '.join(m)}")
        for a in self.unreduced:
            if a not in m:
                raise ValueError(f"unknown mesh axis {a!r} in 'U_{a}' of {self}; the mesh has "
                                 f"{', '.join(m)}")
        if shape is not None:
            sizes = self._sizes(shape)
            for d, ax, n in zip(self.dims, self.axes, sizes):
                k = math.prod(m[a] for a in ax)
                if n % k:
                    raise ValueError(f"dimension {_dim_str(d, ax)!r} of {self} has size {n}, which "
                                     f"is not divisible by {'·'.join(f'|{a}|' for a in ax)} = {k}")

    def _sizes(self, shape) -> tuple:
        if isinstance(shape, dict):
            missing = [d for d in self.dims if d not in shape]
            if missing:
                raise ValueError(f"sizes for {self} lack {', '.join(missing)}; got {shape}")
            vals = tuple(shape[d] for d in self.dims)
        else:
            vals = tuple(shape)
            if len(vals) != len(self.dims):
                raise ValueError(f"{self} has {len(self.dims)} dimensions but the shape "
                                 f"{vals} has {len(vals)}")
        for d, v in zip(self.dims, vals):
            if isinstance(v, bool) or not isinstance(v, (int,)) or v < 1:
                try:
                    import numpy as np
                    if isinstance(v, np.integer) and v >= 1:
                        continue
                except ImportError:  # pragma: no cover
                    pass
                raise ValueError(f"size of dimension {d!r} of {self} must be a positive int, got {v!r}")
        return tuple(int(v) for v in vals)

    def local_shape(self, global_shape, mesh) -> tuple:
        """The shape each device holds: every dimension divided by its mesh axes' sizes."""
        m = as_mesh(mesh)
        self.validate(m, global_shape)
        return tuple(n // math.prod(m[a] for a in ax)
                     for n, ax in zip(self._sizes(global_shape), self.axes))

    def bytes_per_device(self, global_shape, dtype, mesh) -> float:
        """Bytes one device holds: local elements × bytes per element."""
        return math.prod(self.local_shape(global_shape, mesh)) * _nbytes_per_elem(dtype)

    def total_bytes(self, global_shape, dtype, mesh) -> float:
        """Bytes summed over all devices of the mesh (= devices × bytes per device)."""
        m = as_mesh(mesh)
        return self.bytes_per_device(global_shape, dtype, m) * math.prod(m.values())

    def replication_factor(self, mesh) -> int:
        """How many devices hold each element: product of the mesh axes the array doesn't use."""
        m = as_mesh(mesh)
        self.validate(m)
        used = set(self.used_axes) | set(self.unreduced)
        return math.prod(v for a, v in m.items() if a not in used)

    def partition_spec(self) -> tuple:
        """Arguments for ``jax.sharding.PartitionSpec``: ``("X", None)``, ``(("X", "Y"), None)``."""
        if self.unreduced:
            raise ValueError(f"{self} is unreduced; a PartitionSpec cannot say U_"
                             f"{''.join(self.unreduced)} (reduce it first)")
        return tuple(None if not ax else (ax[0] if len(ax) == 1 else tuple(ax)) for ax in self.axes)

    def named_sharding(self, mesh):
        """A ``jax.sharding.NamedSharding`` for a jax ``Mesh`` (built in ``scaling_lib.xla``)."""
        from . import hooks
        self.validate(mesh)
        return hooks.call("named_sharding", self, mesh)


def _dim_str(dim: str, axes) -> str:
    return dim + ("_" + "".join(axes) if axes else "")


def parse(spec) -> ShardedArray:
    """Parse the book's notation: ``"A[I_X, J]"``, ``"W[D_XY, F]"``, ``"C[I, K]{U_X}"``.

    Subscripts are single capital letters (mesh axes), major first; ``I_{XY}`` is accepted too.
    A ``ShardedArray`` passes through unchanged. Errors name the offending part of the string.
    """
    if isinstance(spec, ShardedArray):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"spec must be a string like 'A[I_X, J]', got {type(spec).__name__} {spec!r}")
    m = _SPEC.match(spec)
    if not m:
        raise ValueError(f"cannot read sharding {spec!r}: expected NAME[DIM_AXES, ...] with an "
                         f"optional {{U_AXES}}, e.g. 'A[I_X, J]' or 'C[I, K]{{U_Y}}'")
    name = m.group("name") or "A"
    parts = [p.strip() for p in m.group("dims").split(",")]
    if parts == [""]:
        raise ValueError(f"{spec!r} has no dimensions inside [...]")
    dims, axes = [], []
    for p in parts:
        dm = _DIM.match(p)
        if not dm:
            raise ValueError(f"cannot read dimension {p!r} in {spec!r}: write a name with an "
                             f"optional subscript of capital mesh-axis letters, e.g. 'I', 'I_X', 'I_XY'")
        sub = dm.group("braced") if dm.group("braced") is not None else (dm.group("plain") or "")
        sub = sub.replace(",", "").replace(" ", "")
        if not re.fullmatch(r"[A-Z]*", sub):
            raise ValueError(f"subscript of {p!r} in {spec!r} must be capital mesh-axis letters")
        for a in set(sub):
            if sub.count(a) > 1:
                raise ValueError(f"mesh axis {a!r} appears twice in {p!r} of {spec!r}")
        dims.append(dm.group("dim"))
        axes.append(tuple(sub))
    unred: tuple = ()
    if m.group("unred") is not None:
        raw = m.group("unred").replace(" ", "")
        items = [t for t in raw.split(",") if t]
        letters = []
        for t in items:
            if not re.fullmatch(r"U_(?:\{[A-Z]+\}|[A-Z]+)", t):
                raise ValueError(f"cannot read {{{m.group('unred')}}} in {spec!r}: write the "
                                 f"unreduced axes as {{U_X}} or {{U_XY}}")
            letters += list(t[2:].strip("{}"))
        unred = tuple(letters)
    return ShardedArray(name, tuple(dims), tuple(axes), unred)


# ---------------------------------------------------------------------------------------------
# collectives as edits of the subscripts
# ---------------------------------------------------------------------------------------------
def _axes_arg(axis) -> tuple:
    if isinstance(axis, str):
        ax = tuple(axis)
    elif isinstance(axis, (tuple, list)) and all(isinstance(a, str) for a in axis):
        ax = tuple("".join(axis))
    else:
        raise TypeError(f"axis must be a mesh-axis name like 'X' (or 'XY'), got {axis!r}")
    if not ax or not all(re.fullmatch(r"[A-Z]", a) for a in ax):
        raise ValueError(f"axis must be capital mesh-axis letters like 'X' or 'XY', got {axis!r}")
    return ax


def all_gather(spec, axis) -> ShardedArray:
    """AllGather over ``axis``: remove it from the dimension it shards. ``A[I_X,J]`` → ``A[I,J]``."""
    s = parse(spec)
    for a in _axes_arg(axis):
        for d, ax in zip(s.dims, s.axes):
            if a in ax:
                s = s.with_axes(d, tuple(x for x in ax if x != a))
                break
        else:
            raise ValueError(f"AllGather over {a!r}: no dimension of {s} is sharded over {a}")
    return s


def reduce_scatter(spec, axis, dim) -> ShardedArray:
    """ReduceScatter over ``axis`` onto ``dim``: ``A[I,J]{U_X}`` → ``A[I,J_X]`` (dim='J')."""
    s = parse(spec)
    for a in _axes_arg(axis):
        if a not in s.unreduced:
            raise ValueError(f"ReduceScatter over {a!r}: {s} is not unreduced over {a} "
                             f"(its unreduced axes: {''.join(s.unreduced) or 'none'})")
        i = s._index(dim)
        s = replace(s, unreduced=tuple(x for x in s.unreduced if x != a))
        s = s.with_axes(dim, s.axes[i] + (a,))
    return s


def all_reduce(spec, axis) -> ShardedArray:
    """AllReduce over ``axis``: drop it from the unreduced set. ``A[I_X,J]{U_Y}`` → ``A[I_X,J]``."""
    s = parse(spec)
    for a in _axes_arg(axis):
        if a not in s.unreduced:
            raise ValueError(f"AllReduce over {a!r}: {s} is not unreduced over {a} "
                             f"(its unreduced axes: {''.join(s.unreduced) or 'none'})")
        s = replace(s, unreduced=tuple(x for x in s.unreduced if x != a))
    return s


def all_to_all(spec, axis, dim) -> ShardedArray:
    """AllToAll over ``axis``: move it to ``dim``. ``A[I_X,J]`` → ``A[I,J_X]`` (dim='J')."""
    s = parse(spec)
    for a in _axes_arg(axis):
        src = next((d for d, ax in zip(s.dims, s.axes) if a in ax), None)
        if src is None:
            raise ValueError(f"AllToAll over {a!r}: no dimension of {s} is sharded over {a}")
        s._index(dim)
        if src == dim:
            raise ValueError(f"AllToAll over {a!r}: {dim!r} is already sharded over {a} in {s}; "
                             f"choose another dimension")
        s = s.with_axes(src, tuple(x for x in s.axes_of(src) if x != a))
        s = s.with_axes(dim, s.axes_of(dim) + (a,))
    return s


@dataclass(frozen=True)
class Step:
    """One communication step of a plan: collective ``kind`` over mesh ``axes``.

    nbytes is the chapter's V: AllGather = gathered bytes per device; ReduceScatter/AllReduce =
    unreduced bytes per device; AllToAll = bytes summed over the devices of one group; slice = 0.
    """

    kind: str
    axes: tuple
    before: ShardedArray
    after: ShardedArray
    nbytes: float | None = None
    time: float | None = None

    def notation(self) -> str:
        op = {"all_gather": "AG", "reduce_scatter": "RS", "all_reduce": "AR",
              "all_to_all": "A2A", "permute": "Permute", "slice": "Slice"}[self.kind]
        return f"{op}_{''.join(self.axes)}: {self.before} → {self.after}"


def _gather_steps(src: ShardedArray, axes) -> list:
    """AllGather ``axes`` out of ``src``; plus a permute when the kept axes are not the major
    end of its dimension's subscript (gathering X out of I_XY leaves the I_Y blocks on the wrong
    devices: XLA inserts a collective-permute)."""
    ax = _axes_arg("".join(axes))
    new = all_gather(src, "".join(ax))
    steps = [Step("all_gather", ax, src, new)]
    for d, old in zip(src.dims, src.axes):
        kept = tuple(a for a in old if a not in ax)
        if kept and old[:len(kept)] != kept:
            steps.append(Step("permute", kept, new, new))
            break
    return steps


def collective_bytes(kind: str, before, shape, dtype, mesh, axes=None) -> float:
    """The chapter's V for ``kind`` applied to ``before`` (global ``shape``): see ``Step``."""
    s = parse(before)
    m = as_mesh(mesh)
    per_dev = s.bytes_per_device(shape, dtype, m)
    if kind == "all_gather":
        ax = _axes_arg(axes)
        return per_dev * math.prod(m[a] for a in ax)
    if kind in ("reduce_scatter", "all_reduce", "permute"):
        return per_dev
    if kind == "all_to_all":
        ax = _axes_arg(axes)
        return per_dev * math.prod(m[a] for a in ax)
    if kind == "slice":
        return 0.0
    raise ValueError(f"unknown collective {kind!r}; allowed: {', '.join(COLLECTIVES)}")


def reshard_steps(src, dst, mesh) -> list:
    """Collectives that turn sharding ``src`` into ``dst`` (same dimensions), as ``Step``s.

    Order: unreduced axes first (ReduceScatter onto the dimension ``dst`` wants, else AllReduce),
    then axes that move between dimensions (AllToAll), axes that disappear (AllGather), and axes
    that appear on a replicated dimension (a free local slice). Bytes are left to the caller.
    """
    s, t = parse(src), parse(dst)
    m = as_mesh(mesh)
    s.validate(m)
    t.validate(m)
    if s.dims != t.dims:
        raise ValueError(f"cannot reshard {s} to {t}: the dimensions differ "
                         f"({', '.join(s.dims)} vs {', '.join(t.dims)})")
    steps = []
    t_where = {a: d for d, ax in zip(t.dims, t.axes) for a in ax}
    # 1. unreduced axes
    rs_groups: dict[str, list] = {}
    ar = []
    for a in s.unreduced:
        if a in t.unreduced:
            continue
        if a in t_where:
            rs_groups.setdefault(t_where[a], []).append(a)
        else:
            ar.append(a)
    if ar:
        new = all_reduce(s, "".join(ar))
        steps.append(Step("all_reduce", tuple(ar), s, new))
        s = new
    for d, axs in rs_groups.items():
        new = reduce_scatter(s, "".join(axs), d)
        steps.append(Step("reduce_scatter", tuple(axs), s, new))
        s = new
    # 2. axes moving between dimensions, then axes to gather
    moves: dict[str, list] = {}
    gathers = []
    for d, ax in zip(s.dims, s.axes):
        for a in ax:
            if a in t_where and t_where[a] != d:
                moves.setdefault(t_where[a], []).append(a)
            elif a not in t_where:
                gathers.append(a)
    for d, axs in moves.items():
        new = all_to_all(s, "".join(axs), d)
        steps.append(Step("all_to_all", tuple(axs), s, new))
        s = new
    if gathers:
        gs = _gather_steps(s, gathers)
        steps += gs
        s = gs[-1].after
    # 3. order within a dimension, then free slices
    for d, ax_s, ax_t in zip(s.dims, s.axes, t.axes):
        common = tuple(a for a in ax_t if a in ax_s)
        if tuple(a for a in ax_s if a in ax_t) != common:
            new = s.with_axes(d, common + tuple(a for a in ax_s if a not in common))
            steps.append(Step("permute", tuple(sorted(set(common), key=list(m).index)), s, new))
            s = new
    for d, ax_s, ax_t in zip(s.dims, s.axes, t.axes):
        if ax_s != ax_t:
            extra = tuple(a for a in ax_t if a not in ax_s)
            new = s.with_axes(d, ax_t)
            steps.append(Step("slice", extra, s, new))
            s = new
    for a in t.unreduced:
        if a not in s.unreduced:
            raise ValueError(f"cannot make {t} from {parse(src)}: an unreduced axis (U_{a}) can "
                             f"only come out of a local contraction")
    return steps


# ---------------------------------------------------------------------------------------------
# communication time (chapter 3's ring/torus formulas)
# ---------------------------------------------------------------------------------------------
from .topology import HOP_LATENCY as T_HOP  # noqa: E402  per-hop ICI latency (s), book ≈1 µs


def _torus(mesh: dict, chip=None, wrap=True, topo=None):
    """The network the mesh axes run on: ``topo`` (a ``topology`` object whose axes include the
    mesh axes, same sizes), else a torus of the mesh's shape on ``chip``'s ICI links whose axes
    wrap per ``wrap`` (bool for all axes, or {axis: bool})."""
    from . import hardware, topology
    if topo is not None:
        t = topology.get(topo)
        names = tuple(getattr(t, "names", ()))
        for a, n in mesh.items():
            if a not in names:
                raise ValueError(f"mesh axis {a!r} is not an axis of {t.describe()} "
                                 f"(axes: {', '.join(map(str, names))})")
            if t.axis_size(a) != n:
                raise ValueError(f"mesh axis {a} has size {n} but {t.describe()} has "
                                 f"{t.axis_size(a)} along {a}")
        return t
    if chip is None:
        raise ValueError("times need a chip (a TPU name such as 'v5e') or a topo")
    c = hardware.get(chip)
    if not c.ici_link_bw_1way:
        raise ValueError(f"{c.name} has no ICI link bandwidth in the catalogue; chapter 3's "
                         f"torus model needs a TPU (or pass topo=...)")
    if isinstance(wrap, dict):
        bad = set(wrap) - set(mesh)
        if bad:
            raise ValueError(f"wrap names axes {sorted(bad)} that are not on the mesh {mesh}")
        wraps = tuple(bool(wrap.get(a, True)) for a in mesh)
    elif isinstance(wrap, bool):
        wraps = (wrap,) * len(mesh)
    else:
        raise TypeError(f"wrap must be a bool or a dict {{axis: bool}}, got {wrap!r}")
    return topology.Torus(shape=tuple(mesh.values()), wraps=wraps, link_bw_1way=c.ici_link_bw_1way,
                          names=tuple(mesh))


def _step_time(st: "Step", net) -> float:
    """Seconds for one step on network ``net`` (scaling_lib.collectives' ch. 3 models)."""
    from . import collectives
    if st.kind == "slice" or not st.nbytes:
        return 0.0
    axes = st.axes if st.kind != "permute" else (st.axes[:1] or (net.names[0],))
    return float(collectives.collective_time(st.kind, st.nbytes, net, axes=axes).total)


# ---------------------------------------------------------------------------------------------
# sharded matmuls
# ---------------------------------------------------------------------------------------------
_CASE_TEXT = {1: "情形1：收缩维度都没有分片，本地直接乘，不用通信",
              2: "情形2：一个操作数的收缩维度分片了，先 AllGather 它",
              3: "情形3：两个收缩维度按同一个轴分片，本地乘出部分和，再 AllReduce 或 ReduceScatter",
              4: "情形4：两个非收缩维度用了同一个网格轴，先 AllGather 其中一个操作数"}


@dataclass(frozen=True)
class MatmulPlan:
    """What a sharded matmul needs: the case, the collectives, the output and the costs."""

    a: ShardedArray
    b: ShardedArray
    contracting: tuple
    mesh: dict
    case: int
    cases: tuple
    steps: tuple
    a_local: ShardedArray          #: operand A as actually multiplied (after gathers/slices)
    b_local: ShardedArray
    product: ShardedArray          #: the local product (may be unreduced)
    out: ShardedArray              #: the final output sharding
    sizes: dict | None = None
    dtype: str | float = "bf16"
    flops_total: float | None = None
    flops_per_device: float | None = None
    t_math: float | None = None
    chip: str | None = None
    mem_per_device: float | None = None

    @property
    def collectives(self) -> tuple:
        """``(kind, axes)`` of each communication step (local slices left out)."""
        return tuple((s.kind, s.axes) for s in self.steps if s.kind != "slice")

    @property
    def comm_bytes(self) -> float | None:
        if any(s.nbytes is None for s in self.steps):
            return None
        return float(sum(s.nbytes for s in self.steps))

    @property
    def t_comms(self) -> float | None:
        if any(s.time is None for s in self.steps):
            return None
        return float(sum(s.time for s in self.steps))

    @property
    def t_lower(self) -> float | None:
        """Perfect overlap: max(T_math, T_comms)."""
        if self.t_math is None or self.t_comms is None:
            return None
        return max(self.t_math, self.t_comms)

    @property
    def t_upper(self) -> float | None:
        """No overlap: T_math + T_comms."""
        if self.t_math is None or self.t_comms is None:
            return None
        return self.t_math + self.t_comms

    @property
    def bottleneck(self) -> str | None:
        if self.t_lower is None:
            return None
        return "通信" if self.t_comms > self.t_math else "计算"

    def notation(self) -> str:
        """One line: ``A[I_X, J] · B[J, K_Y] → Out[I_X, K_Y]``."""
        return f"{self.a} · {self.b} → {self.out}"

    def rows(self) -> list:
        """(项目, 数值) rows for tables."""
        r = [("矩阵乘法", self.notation()), ("情形", _CASE_TEXT[self.case])]
        if not self.steps:
            r.append(("通信", "无"))
        for s in self.steps:
            val = s.notation()
            if s.nbytes is not None and s.kind != "slice":
                val += f"，V = {fmt_bytes(s.nbytes)}"
            if s.time is not None and s.kind != "slice":
                val += f"，{fmt_time(s.time)}"
            r.append((COLLECTIVES[s.kind], val))
        if self.sizes is not None:
            m = self.mesh
            a_sh = self.a.local_shape(self.sizes, m)
            b_sh = self.b.local_shape(self.sizes, m)
            r.append(("每设备本地形状", f"A {a_sh}，B {b_sh}，输出 "
                      f"{self.out.local_shape(self.sizes, m)}"))
            r.append(("每设备 FLOPs", fmt_num(self.flops_per_device)))
        if self.t_math is not None:
            r.append(("计算时间 T_math", fmt_time(self.t_math)))
            r.append(("通信时间 T_comms", fmt_time(self.t_comms)))
            r.append(("瓶颈", f"{self.bottleneck}（完全重叠 {fmt_time(self.t_lower)}，"
                             f"不重叠 {fmt_time(self.t_upper)}）"))
        return r

    def __str__(self) -> str:
        rows = self.rows()
        w = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{w}}  {v}" for k, v in rows)

    def _repr_html_(self) -> str:
        import html
        body = "".join(f"<tr><td style='text-align:left'>{html.escape(k)}</td>"
                       f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
                       for k, v in self.rows())
        return f"<table><thead><tr><th>项目</th><th>数值</th></tr></thead><tbody>{body}</tbody></table>"

    def as_dict(self) -> dict:
        """A flat record (SI units) for tests and tables."""
        return {"a": str(self.a), "b": str(self.b), "out": str(self.out), "case": self.case,
                "collectives": [f"{k}:{''.join(a)}" for k, a in self.collectives],
                "comm_bytes": self.comm_bytes, "flops_per_device": self.flops_per_device,
                "flops_total": self.flops_total, "t_math": self.t_math, "t_comms": self.t_comms,
                "mem_per_device": self.mem_per_device}


def _contracting_pair(a: ShardedArray, b: ShardedArray, contracting) -> tuple:
    if contracting is None:
        shared = [d for d in a.dims if d in b.dims]
        if len(shared) != 1:
            raise ValueError(f"cannot tell the contracting dimension of {a} · {b}: they share "
                             f"{len(shared)} dimension names ({', '.join(shared) or 'none'}); "
                             f"name exactly one in both or pass contracting=('J', 'J2')")
        return shared[0], shared[0]
    if isinstance(contracting, str):
        contracting = (contracting, contracting)
    if not (isinstance(contracting, (tuple, list)) and len(contracting) == 2
            and all(isinstance(c, str) for c in contracting)):
        raise TypeError(f"contracting must be a dimension name or a pair of names, got {contracting!r}")
    ja, jb = contracting
    if ja not in a.dims:
        raise ValueError(f"contracting dimension {ja!r} is not a dimension of {a}")
    if jb not in b.dims:
        raise ValueError(f"contracting dimension {jb!r} is not a dimension of {b}")
    return ja, jb


def matmul_case(a, b, contracting=None) -> int:
    """The chapter's case (1-4) of ``a · b``; raises ValueError where no case applies."""
    a, b = parse(a), parse(b)
    ja, jb = _contracting_pair(a, b, contracting)
    sa, sb = a.axes_of(ja), b.axes_of(jb)
    conflict = _conflicts(a, b, ja, jb)
    if sa and sb and sa != sb:
        raise ValueError(f"mismatched contracting dimensions: {_dim_str(ja, sa)!r} in {a} vs "
                         f"{_dim_str(jb, sb)!r} in {b}; reshard one of them first")
    if sa and sb:
        return 3
    if sa or sb:
        return 2
    return 4 if conflict else 1


def _conflicts(a, b, ja, jb) -> set:
    a_nc = {x for d, ax in zip(a.dims, a.axes) if d != ja for x in ax}
    b_nc = {x for d, ax in zip(b.dims, b.axes) if d != jb for x in ax}
    return a_nc & b_nc


def matmul(a, b, mesh, contracting=None, *, out=None, sizes=None, dtype="bf16", chip=None,
           wrap=True, topo=None, strategy: str = "gather", gather: str | None = None,
           out_name: str = "Out") -> MatmulPlan:
    """Plan ``a · b`` on ``mesh``: the case, the collectives, the output sharding and the costs.

    a, b:        notation strings or ``ShardedArray``s, e.g. "A[I_X, J]", "B[J, K_Y]".
    contracting: the contracted dimension name (default: the one name both share) or a pair.
    out:         the wanted output sharding (e.g. "Out[I, K_Y]" or "[I, K_Y]"); decides
                 AllReduce vs ReduceScatter in case 3 and adds the gathers/AllToAll/slices that
                 turn the natural result into it. Default: the natural result, fully reduced.
    sizes:       {dim: size} (or None for notation only): enables bytes, FLOPs and times.
    chip, wrap:  a TPU (name or ``hardware.Chip``) for T_math and T_comms; ``wrap`` says whether
                 the mesh axes are rings (True), lines (False) or a dict per axis.
    topo:        instead of chip/wrap: a ``topology.TpuSlice`` (or Torus) whose axes include the
                 mesh axes; collective times come from ``scaling_lib.collectives``.
    strategy:    case 2 only: "gather" (AllGather the sharded operand) or "reduce" (slice the
                 other operand for free, multiply, then reduce as in case 3).
    gather:      case 4 only: "A" or "B", the operand to AllGather (default: the one ``out``
                 does not need, else the smaller, else B).
    """
    from . import hardware
    a0, b0 = parse(a), parse(b)
    m = as_mesh(mesh)
    if strategy not in ("gather", "reduce"):
        raise ValueError(f"strategy must be 'gather' or 'reduce', got {strategy!r}")
    if gather not in (None, "A", "B"):
        raise ValueError(f"gather must be None, 'A' or 'B', got {gather!r}")
    if a0.name == b0.name:
        b0 = b0.renamed(b0.name + "2")
    ja, jb = _contracting_pair(a0, b0, contracting)
    for x, nm in ((a0, "A"), (b0, "B")):
        x.validate(m)
        if x.unreduced:
            raise ValueError(f"operand {x} is unreduced (U_{''.join(x.unreduced)}); reduce it "
                             f"before multiplying")
    a_nc = [d for d in a0.dims if d != ja]
    b_nc = [d for d in b0.dims if d != jb]
    both = set(a_nc) & set(b_nc)
    if both:
        raise ValueError(f"{a0} and {b0} share the non-contracting dimension(s) "
                         f"{', '.join(sorted(both))}; batch dimensions are not supported, rename them")
    if sizes is not None:
        if not isinstance(sizes, dict):
            raise TypeError(f"sizes must be a dict {{dim: size}}, got {type(sizes).__name__}")
        a0.validate(m, sizes)
        b0.validate(m, sizes)
        if sizes[ja] != sizes[jb]:
            raise ValueError(f"mismatched contracting dimensions: {ja!r} of {a0} has size "
                             f"{sizes[ja]} but {jb!r} of {b0} has size {sizes[jb]}")
    sa, sb = a0.axes_of(ja), b0.axes_of(jb)
    if sa and sb and sa != sb:
        raise ValueError(f"mismatched contracting dimensions: {_dim_str(ja, sa)!r} in {a0} vs "
                         f"{_dim_str(jb, sb)!r} in {b0}; reshard one of them first "
                         f"(AllToAll or AllGather) so both use the same mesh axes")
    out_t = None
    if out is not None:
        out_t = parse(out) if not (isinstance(out, str) and out.strip().startswith("[")) \
            else parse(out_name + out.strip())
        want = tuple(a_nc + b_nc)
        if out_t.dims != want:
            raise ValueError(f"output {out_t} must have the dimensions {', '.join(want)} "
                             f"(A's then B's non-contracting dimensions)")
        out_t.validate(m, sizes)
        out_name = out_t.name

    steps: list[Step] = []
    cases = []
    a1, b1 = a0, b0

    def add(kind, axes, before, after, shape_src):
        nb = None
        if sizes is not None:
            if kind in ("all_gather", "permute"):
                nb = after.bytes_per_device(sizes, dtype, m)
            else:
                nb = collective_bytes(kind, before, sizes, dtype, m,
                                      axes if kind == "all_to_all" else None)
        steps.append(Step(kind, tuple(axes), before, after, nb))

    # contracting dimensions: cases 1-3
    unreduced: tuple = ()
    if sa and sb:
        cases.append(3)
        unreduced = sa
    elif sa or sb:
        cases.append(2)
        sharded_is_a = bool(sa)
        s_axes = sa or sb
        other = b1 if sharded_is_a else a1
        j_other = jb if sharded_is_a else ja
        can_slice = not (set(s_axes) & set(other.used_axes))
        if strategy == "reduce":
            if not can_slice:
                raise ValueError(f"strategy='reduce' needs to slice {other} over "
                                 f"{''.join(s_axes)}, but it already uses "
                                 f"{''.join(sorted(set(s_axes) & set(other.used_axes)))}")
            new = other.with_axes(j_other, s_axes)
            add("slice", s_axes, other, new, None)
            if sharded_is_a:
                b1 = new
            else:
                a1 = new
            unreduced = s_axes
        else:
            src = a1 if sharded_is_a else b1
            j = ja if sharded_is_a else jb
            new = src.with_axes(j, ())
            add("all_gather", s_axes, src, new, None)
            if sharded_is_a:
                a1 = new
            else:
                b1 = new
    else:
        cases.append(1)
    # non-contracting dimensions on one axis: case 4
    conflict = _conflicts(a1, b1, ja, jb)
    if conflict:
        cases.append(4)
        who = gather
        if who is None:
            if out_t is not None:
                a_keeps = all(any(x in out_t.axes_of(d) for x in a1.axes_of(d) if x in conflict)
                              for d in a_nc if set(a1.axes_of(d)) & conflict)
                who = "B" if a_keeps else "A"
            elif sizes is not None and a1.bytes_per_device(sizes, dtype, m) < \
                    b1.bytes_per_device(sizes, dtype, m):
                who = "A"
            else:
                who = "B"
        src = a1 if who == "A" else b1
        axes = tuple(x for x in src.used_axes if x in conflict)
        for gst in _gather_steps(src, axes):
            add(gst.kind, gst.axes, gst.before, gst.after, None)
        new = steps[-1].after
        if who == "A":
            a1 = new
        else:
            b1 = new
    # the local product
    prod_dims = tuple(a_nc + b_nc)
    prod_axes = tuple(a1.axes_of(d) for d in a_nc) + tuple(b1.axes_of(d) for d in b_nc)
    product = ShardedArray(out_name, prod_dims, prod_axes, unreduced)
    # reduce / reshard to the wanted output
    target = out_t if out_t is not None else product.__class__(out_name, prod_dims, prod_axes, ())
    cur = product
    for st in reshard_steps(cur, target, m):
        nb = None
        if sizes is not None:
            if st.kind in ("all_gather", "permute"):
                nb = st.after.bytes_per_device(sizes, dtype, m)
            else:
                nb = collective_bytes(st.kind, st.before, sizes, dtype, m, st.axes or None)
        steps.append(replace(st, nbytes=nb))
        cur = st.after
    case = 4 if (cases == [1, 4]) else cases[0]

    flops_total = flops_dev = t_math = mem = None
    chip_name = None
    if sizes is not None:
        flops_total = 2.0 * math.prod(sizes[d] for d in a0.dims) * math.prod(sizes[d] for d in b_nc)
        la = a1.local_shape(sizes, m)
        lb = b1.local_shape(sizes, m)
        lb_nc = [n for d, n in zip(b1.dims, lb) if d != jb]
        flops_dev = 2.0 * math.prod(la) * math.prod(lb_nc)
        mem = (a0.bytes_per_device(sizes, dtype, m) + b0.bytes_per_device(sizes, dtype, m)
               + cur.bytes_per_device(sizes, dtype, m))
    if chip is not None or topo is not None:
        net = _torus(m, chip, wrap, topo)
        c = hardware.get(chip) if chip is not None else getattr(net, "chip", None)
        if c is None:
            raise ValueError("T_math needs a chip: pass chip=... (the topology has none)")
        chip_name = c.name
        if sizes is None:
            raise ValueError("times need sizes={dim: size} as well as a chip")
        dname = dtype if isinstance(dtype, str) else "bf16"
        t_math = flops_dev / c.peak(dname)
        steps = [replace(st, time=_step_time(st, net)) for st in steps]
    return MatmulPlan(a=a0, b=b0, contracting=(ja, jb), mesh=m, case=case, cases=tuple(cases),
                      steps=tuple(steps), a_local=a1, b_local=b1, product=product,
                      out=replace(cur, name=out_name), sizes=dict(sizes) if sizes else None,
                      dtype=dtype, flops_total=flops_total, flops_per_device=flops_dev,
                      t_math=t_math, chip=chip_name, mem_per_device=mem)


def strategy_times(B, D, F, X, chip, bytes_per_elem: float = 2) -> dict:
    """Problem Q4: X[B, D] · Y[D_X, F] → Z[B, F] by two strategies (bidirectional ring).

    S1 gathers Y (case 2) then multiplies in full; S2 slices X for free, multiplies locally and
    AllReduces the [B, F] partial sums. Returns {"S1": (t_math, t_comms), "S2": (...)}; numpy
    arrays broadcast (for sweeps over D, B ...).
    """
    import numpy as np
    from . import hardware
    from .units import check_positive
    B, D, F, X = (check_positive(n, v) for n, v in (("B", B), ("D", D), ("F", F), ("X", X)))
    b = check_positive("bytes_per_elem", bytes_per_elem, allow_array=False)
    c = hardware.get(chip)
    C, W = c.peak("bf16"), c.ici_bw_bidi
    if not W:
        raise ValueError(f"{c.name} has no ICI bandwidth in the catalogue")
    t1 = (np.asarray(2 * B * D * F / C), np.asarray(b * D * F / W))
    t2 = (np.asarray(2 * B * D * F / (X * C)), np.asarray(2 * b * B * F / W))
    f = (lambda v: float(v)) if np.ndim(t1[0] + t2[1]) == 0 else (lambda v: v)
    return {"S1": (f(t1[0] + 0 * t2[1]), f(t1[1] + 0 * t1[0])),
            "S2": (f(t2[0] + 0 * t2[1]), f(t2[1] + 0 * t2[0]))}


def strategy_crossover(B, chip, dtype: str | None = None):
    """The contracting dimension D* beyond which strategy 2 of ``strategy_times`` (multiply the
    local shards, AllReduce the [B, F] partial sums) beats strategy 1 (AllGather the weight):
    D* = min(2B, 2C/W_ici). Below C/W_ici both are comms-bound and the bytes decide (4BF < 2DF
    ⇔ D > 2B); above it strategy 1 is compute-bound (4BF/W < 2BDF/C ⇔ D > 2C/W). Vectorised
    over B. Book: sec-03-strategies."""
    import numpy as np
    from . import hardware
    from .units import check_positive
    b = check_positive("B", B)
    c = hardware.get(chip)
    if not c.ici_bw_bidi:
        raise ValueError(f"{c.name} has no ICI bandwidth in the catalogue")
    out = np.minimum(2 * np.asarray(b), 2 * c.peak(dtype) / c.ici_bw_bidi)
    return float(out) if np.ndim(out) == 0 else out


# ---------------------------------------------------------------------------------------------
# the compiler's view (imports jax)
# ---------------------------------------------------------------------------------------------
_HLO_KIND = {"all_gather": "all-gather", "reduce_scatter": "reduce-scatter",
             "all_reduce": "all-reduce", "all_to_all": "all-to-all",
             "permute": "collective-permute"}


def expected_hlo(plan: MatmulPlan, platform: str = "cpu") -> dict:
    """The collectives XLA should insert for ``plan``: ``{hlo kind: set of mesh axes}``.

    On TPU/GPU a ReduceScatter is a ``reduce-scatter``. XLA's CPU backend has no such
    partitioner output: it AllReduces, keeps its slice with a ``dynamic-slice``, and, when the
    scattered axes are not the leading (major) axes of the mesh, adds a ``collective-permute``
    that puts each slice on the device the output layout wants (observed with XLA in JAX 0.7.2
    and 0.10.2). Local slices need no collective.
    """
    if platform not in ("cpu", "tpu", "gpu"):
        raise ValueError(f"platform must be 'cpu', 'tpu' or 'gpu', got {platform!r}")
    out: dict[str, set] = {}
    for st in plan.steps:
        if st.kind == "slice":
            continue
        if st.kind == "reduce_scatter" and platform == "cpu":
            out.setdefault("all-reduce", set()).update(st.axes)
            if tuple(st.axes) != tuple(plan.mesh)[:len(st.axes)]:
                out.setdefault("collective-permute", set())
            continue
        if st.kind == "permute":
            out.setdefault("collective-permute", set())
            continue
        out.setdefault(_HLO_KIND[st.kind], set()).update(st.axes)
    return out


def compiled_collectives(plan: MatmulPlan, mesh, dtype=None) -> dict:
    """Compile ``plan``'s matmul on a jax ``mesh`` and read its collectives, ``{hlo kind: set of
    mesh axes}`` like ``expected_hlo``. Runs in ``scaling_lib.xla`` (``xla.checks``)."""
    from . import hooks
    return hooks.call("compiled_collectives", plan, mesh, dtype)


def reshard_cost(src, dst, mesh, sizes, dtype="bf16", chip=None, wrap=True, topo=None) -> list:
    """``reshard_steps(src, dst)`` with each step's bytes (the chapter's V) and, given a TPU
    ``chip`` (or a ``topo``), its time on rings (``wrap=True``), lines (False) or per axis
    ({"X": False, ...}), from ``scaling_lib.collectives``.

    Example (P3.8a): ``reshard_cost("A[B_X, D_Y]", "A[B, D_Y]", {"X": 4, "Y": 4, "Z": 4},
    {"B": 1024, "D": 4096}, chip="v4p")[0].time`` ≈ 23.3 µs.
    """
    m = as_mesh(mesh)
    s = parse(src)
    s.validate(m, sizes)
    net = _torus(m, chip, wrap, topo) if (chip is not None or topo is not None) else None
    out = []
    for st in reshard_steps(s, dst, m):
        if st.kind in ("all_gather", "permute"):
            nb = st.after.bytes_per_device(sizes, dtype, m)
        else:
            nb = collective_bytes(st.kind, st.before, sizes, dtype, m, st.axes or None)
        st = replace(st, nbytes=nb)
        out.append(replace(st, time=_step_time(st, net) if net is not None else None))
    return out


def ring_link_load(kind: str, n: int, bidirectional: bool = True, split_ties: bool = False) -> float:
    """Bytes on the busiest directed link of an ``n``-device ring, as a fraction of V.

    all_gather / reduce_scatter: V = the gathered (unreduced) array; the book's ring algorithm
    (one-way: n-1 hops of V/n; bidirectional: ⌊n/2⌋ hops of V/n each way).
    all_to_all: V = the whole array (V/n per device, V/n² per source-destination pair), counted
    by routing every pair along its shortest path; a pair exactly half-way round goes one way
    (the book's convention, giving V(n+2)/(8n) for even n) or, with ``split_ties``, half each way.
    Problem 3.16 (P3.16): one-way AG N²(1-1/D) vs A2A N²/2·(1-1/D) scalars per link.
    """
    import numpy as np
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be an int >= 2, got {n!r}")
    n = int(n)
    if kind in ("all_gather", "reduce_scatter"):
        return (n // 2) / n if bidirectional else (n - 1) / n
    if kind != "all_to_all":
        raise ValueError(f"kind must be 'all_gather', 'reduce_scatter' or 'all_to_all', got {kind!r}")
    load = np.zeros((n, 2))
    chunk = 1.0 / n**2
    for d in range(1, n):            # every source sees the same pattern: count from source 0
        if not bidirectional or d < n - d or (d == n - d and not split_ties):
            routes = [(0, d, 1.0)]
        elif d > n - d:
            routes = [(1, n - d, 1.0)]
        else:
            routes = [(0, d, 0.5), (1, d, 0.5)]
        for direction, hops, share in routes:
            for h in range(hops):
                node = h % n if direction == 0 else (-h) % n
                load[node, direction] += chunk * share
    # by symmetry every link of a direction carries the sum over sources = the column total
    return float(load.sum(axis=0).max())


# ---------------------------------------------------------------------------------------------
# which device holds which block (drawn by scaling_lib.diagrams)
# ---------------------------------------------------------------------------------------------
def device_blocks(spec, mesh) -> dict:
    """Which block of the array each device holds: ``{device coords: block index per dim}``.

    Device coords are in the mesh's axis order (``as_mesh``). A dimension sharded over axes
    ``(X, Y)`` (major first) is cut into |X|·|Y| blocks and the device at x, y holds block
    ``x·|Y| + y``; an unsharded dimension is one block (index 0). Devices that differ only along
    axes the array does not use hold the same blocks (replication); along an unreduced axis
    (``{U_X}``) they hold different partial sums of the same block
    (``partial_sum_index``). Example: ``device_blocks("A[I_X, J_Y]", {"X": 2, "Y": 2})[(1, 0)]``
    is ``(1, 0)``.
    """
    import itertools
    a = parse(spec)
    m = as_mesh(mesh)
    a.validate(m)
    names = list(m)
    out = {}
    for coords in itertools.product(*(range(m[n]) for n in names)):
        pos = dict(zip(names, coords))
        idx = []
        for ax in a.axes:
            i = 0
            for name in ax:
                i = i * m[name] + pos[name]
            idx.append(i)
        out[tuple(coords)] = tuple(idx)
    return out


def blocks_per_dim(spec, mesh) -> tuple:
    """How many blocks each dimension is cut into: the product of its mesh axes' sizes."""
    a = parse(spec)
    m = as_mesh(mesh)
    a.validate(m)
    return tuple(math.prod(m[x] for x in ax) for ax in a.axes)


def partial_sum_index(spec, mesh, coords) -> int:
    """Which partial sum (0 … ∏|U axes|−1) the device at ``coords`` holds of an unreduced array
    (0 for a reduced one): its position along the unreduced axes, major first."""
    a = parse(spec)
    m = as_mesh(mesh)
    a.validate(m)
    coords = tuple(coords)
    if len(coords) != len(m):
        raise ValueError(f"coords {coords} must have one entry per mesh axis ({', '.join(m)})")
    pos = dict(zip(m, coords))
    i = 0
    for name in a.unreduced:
        i = i * m[name] + pos[name]
    return i


__all__ += ["device_blocks", "blocks_per_dim", "partial_sum_index", "strategy_crossover"]
