"""A parallel training layout as one table: logical axes → mesh axes, plus schedule, ZeRO stage,
remat policy and precision.

Units: counts. Book: sec-03-notation (the sharding notation), sec-05-summary (DP, FSDP, TP, PP,
EP and their mixes), sec-05-planner. The table is MaxText's ``logical_axis_rules`` written in the
book's notation: each logical dimension of the model's arrays (``batch``, ``sequence``,
``d_model``, ``heads``, ``kv_heads``, ``d_ff``, ``experts``, ``d_ff_expert``, ``layers``,
``vocab``) is sharded over a tuple of mesh axes (``data``, ``fsdp``, ``expert``, ``context``,
``tensor``, ``pipe``). Three consumers read the same table:

1. the cost model (``scaling_lib.step``): ``layer_comms`` runs ``sharding.matmul`` on the layer's
   matmuls with these shardings and returns the collectives each pass needs;
2. the JAX proof on simulated devices (``partition_specs``: the ``PartitionSpec`` of every
   parameter; ``scaling_lib.xla.checks``);
3. the HLO cross-check (``expected_hlo``: which collective kinds the compiled step must hold).

A ``Strategy`` is built from degrees (``Strategy(fsdp=512, tp=8)``, the book's way of naming a
layout) or from a table (``Strategy.from_rules(mesh, rules)``); either way ``.mesh`` and
``.rules`` are what the consumers read. Placement on the network: mesh axes are laid out in
``order``, innermost first (default tensor, context, expert, fsdp, pipe, data: TP on the fastest
links, DP outermost), so a collective over an axis spans the chips of the axes inside it.
Ignores: layouts that shard one logical dimension over axes in a non-standard role (e.g. d_ff
over data) — ``from_rules`` rejects them by name.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from types import MappingProxyType

from . import pipeline as _pl
from . import memory as _mem
from . import sharding as _sh
from .sharding import ShardedArray, matmul as _matmul, reshard_steps as _reshard_steps
from .units import check_int, dtype_bytes

__all__ = ["Strategy", "MESH_AXES", "DEFAULT_ORDER", "LOGICAL_AXES", "AXIS_LETTERS",
           "STRATEGY_KINDS", "CommItem", "layer_comms", "partition_specs", "expected_hlo",
           "PRECISIONS", "CP_KINDS"]

#: mesh axes by role; the letter is the axis's name in the book's notation (X = FSDP, Y = TP,
#: Z = pipeline, as in chapter 5; R = plain data-parallel replicas, E = experts, C = context)
AXIS_LETTERS = MappingProxyType({"data": "R", "fsdp": "X", "expert": "E", "context": "C",
                                 "tensor": "Y", "pipe": "Z"})
MESH_AXES = tuple(AXIS_LETTERS)
DEFAULT_ORDER = ("tensor", "context", "expert", "fsdp", "pipe", "data")
LOGICAL_AXES = ("batch", "sequence", "d_model", "heads", "kv_heads", "d_ff", "experts",
                "d_ff_expert", "layers", "vocab")
PRECISIONS = ("bf16", "fp8", "int8")
CP_KINDS = ("ring", "allgather")
#: the four simplified-layer strategies of chapter 5's summary table
STRATEGY_KINDS = ("dp", "fsdp", "tp", "fsdp_tp")
_DEG = {"data": "dp", "fsdp": "fsdp", "expert": "ep", "context": "cp", "tensor": "tp",
        "pipe": "pp"}


@dataclass(frozen=True)
class Strategy:
    """How a training step is split over chips (degrees multiply to the chip count).

    dp: data-parallel replicas (weights replicated, gradients AllReduced); fsdp: the ZeRO axis
    (stage ``zero`` 1/2/3 shards optimizer state / gradients / parameters over fsdp × ep for
    dense parameters and over fsdp for experts: the whole data group, expert ranks included);
    tp: tensor (Megatron) parallel, with sequence parallelism between blocks when ``sp``;
    pp: pipeline stages (``schedule`` gpipe | 1f1b | interleaved | zb | dualpipe,
    ``virtual_stages`` for interleaved, ``stage_layers`` for uneven stages); ep: expert
    parallel (MoE; also shards the batch outside the experts, ``ep_node_limit`` caps the nodes a
    token is sent to); cp: context parallel (sequence sharded, attention by ``cp_kind`` 'ring'
    or 'allgather' KV); microbatches: pipeline / gradient-accumulation microbatches; remat:
    'none' | 'selective' | 'full' (aliases 'dots', 'block'); precision: the matmul dtype
    (bf16 | fp8 | int8); order: mesh axes innermost first.
    """

    dp: int = 1
    fsdp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    microbatches: int = 1
    remat: str = "selective"
    zero: int = 3
    schedule: str = "1f1b"
    cp: int = 1
    virtual_stages: int = 1
    stage_layers: tuple | None = None
    precision: str = "bf16"
    sp: bool = True
    cp_kind: str = "ring"
    ep_node_limit: int | None = None
    order: tuple = DEFAULT_ORDER
    name: str = ""

    def __post_init__(self):
        for nm in ("dp", "fsdp", "tp", "pp", "ep", "cp", "microbatches", "virtual_stages"):
            check_int(nm, getattr(self, nm))
        object.__setattr__(self, "remat", _mem.remat_policy(self.remat))
        if self.zero not in (1, 2, 3):
            raise ValueError(f"zero must be 1, 2 or 3, got {self.zero!r}")
        object.__setattr__(self, "schedule", _pl.schedule_name(self.schedule))
        if self.virtual_stages > 1 and self.schedule != "interleaved":
            raise ValueError(f"virtual_stages={self.virtual_stages} needs schedule='interleaved'")
        if self.stage_layers is not None:
            sl = tuple(self.stage_layers)
            if len(sl) != self.pp:
                raise ValueError(f"stage_layers has {len(sl)} entries but pp = {self.pp}")
            for x in sl:
                check_int("layers per stage", x, minimum=0)
            object.__setattr__(self, "stage_layers", sl)
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if not isinstance(self.sp, bool):
            raise TypeError(f"sp must be True or False, got {self.sp!r}")
        if self.cp_kind not in CP_KINDS:
            raise ValueError(f"cp_kind must be one of {CP_KINDS}, got {self.cp_kind!r}")
        if self.ep_node_limit is not None:
            check_int("ep_node_limit", self.ep_node_limit)
        order = tuple(self.order)
        if sorted(order) != sorted(MESH_AXES):
            raise ValueError(f"order must list each mesh axis once: {', '.join(MESH_AXES)}; got "
                             f"{order}")
        object.__setattr__(self, "order", order)

    # -- sizes ------------------------------------------------------------------------------
    @property
    def n_chips(self) -> int:
        return self.dp * self.fsdp * self.tp * self.pp * self.ep * self.cp

    @property
    def data_ways(self) -> int:
        """Ways the batch is split: dp × fsdp × ep (cp splits each sequence instead)."""
        return self.dp * self.fsdp * self.ep

    def degree(self, axis: str) -> int:
        """Size of mesh axis ``axis`` ('data', 'fsdp', 'expert', 'context', 'tensor', 'pipe')."""
        if axis not in _DEG:
            raise ValueError(f"unknown mesh axis {axis!r}; allowed: {', '.join(MESH_AXES)}")
        return getattr(self, _DEG[axis])

    @property
    def mesh(self) -> tuple:
        """((axis, size), ...) innermost first, every axis (size 1 where unused)."""
        return tuple((a, self.degree(a)) for a in self.order)

    @property
    def rules(self) -> MappingProxyType:
        """The sharding table: logical axis → mesh axes (MaxText's logical_axis_rules)."""
        return MappingProxyType(_rules(self.zero, self.sp))

    def table(self) -> list:
        """[(logical axis, mesh axes with sizes)] rows of the table, for display."""
        return [(k, " × ".join(f"{a}({self.degree(a)})" for a in v) or "—")
                for k, v in self.rules.items()]

    @classmethod
    def from_rules(cls, mesh, rules=None, **kw) -> "Strategy":
        """A Strategy from a mesh {axis: size} and (optionally) a logical→mesh table.

        The table must follow the standard roles (``Strategy().rules``): batch over data/fsdp/
        expert, d_model over fsdp(/expert) iff ZeRO-3, heads/kv_heads/d_ff/vocab over tensor,
        experts over expert, layers over pipe, sequence over context (+ tensor with sequence
        parallelism). Anything else raises ValueError naming the rule. ``kw``: the other fields.
        """
        m = dict(mesh)
        bad = [a for a in m if a not in _DEG]
        if bad:
            raise ValueError(f"unknown mesh axes {bad}; allowed: {', '.join(MESH_AXES)}")
        for a, n in m.items():
            check_int(f"mesh[{a!r}]", n)
        deg = {_DEG[a]: n for a, n in m.items()}
        if rules is not None:
            zero = kw.get("zero", 3 if tuple(rules.get("d_model", ())) else 1)
            sp = kw.get("sp", "tensor" in tuple(rules.get("sequence", ())))
            want = _rules(zero, sp)
            for k in set(rules) | set(want):
                if k not in LOGICAL_AXES and k != "expert_d_model" and k != "expert_batch":
                    raise ValueError(f"unknown logical axis {k!r}; allowed: {', '.join(LOGICAL_AXES)}")
                got = tuple(rules.get(k, want.get(k, ())))
                if tuple(got) != tuple(want.get(k, ())):
                    raise ValueError(f"rule {k} → {got} is not a layout this model knows; "
                                     f"expected {k} → {want.get(k, ())} (zero={zero}, sp={sp})")
            kw.setdefault("zero", zero)
            kw.setdefault("sp", sp)
        return cls(**deg, **kw)

    def replace(self, **changes) -> "Strategy":
        import dataclasses
        return dataclasses.replace(self, **changes)

    def __str__(self) -> str:
        if self.name:
            return self.name
        parts = [f"{k.upper()}{v}" for k, v in (("dp", self.dp), ("fsdp", self.fsdp),
                                                 ("tp", self.tp), ("cp", self.cp),
                                                 ("pp", self.pp), ("ep", self.ep)) if v > 1]
        if not parts:
            parts = ["1chip"]
        if self.fsdp > 1 and self.zero != 3:
            parts[[p.startswith("FSDP") for p in parts].index(True)] = f"ZeRO{self.zero}-{self.fsdp}"
        if self.microbatches > 1:
            parts.append(f"mb{self.microbatches}")
        if self.remat != "selective":
            parts.append({"none": "noremat", "full": "remat"}[self.remat])
        if self.pp > 1 and self.schedule != "1f1b":
            parts.append(self.schedule + (f"{self.virtual_stages}" if self.virtual_stages > 1
                                          else ""))
        if self.stage_layers is not None and len(set(self.stage_layers)) > 1:
            parts.append("uneven")
        if self.precision != "bf16":
            parts.append(self.precision)
        return "·".join(parts)


def _rules(zero: int, sp: bool) -> dict:
    return {"batch": ("data", "fsdp", "expert"),
            "sequence": ("context",) + (("tensor",) if sp else ()),
            "d_model": ("fsdp", "expert") if zero == 3 else (),
            "heads": ("tensor",), "kv_heads": ("tensor",), "d_ff": ("tensor",),
            "experts": ("expert",), "d_ff_expert": ("tensor",),
            "expert_d_model": ("fsdp",) if zero == 3 else (),
            "expert_batch": ("data", "fsdp"),
            "layers": ("pipe",), "vocab": ("tensor",)}


# =============================================================================================
# consumer 1: the collectives of one layer, from sharding.matmul on the table's shardings
# =============================================================================================

@dataclass(frozen=True)
class CommItem:
    """One collective of a transformer layer's step, read off a ``sharding.matmul`` plan.

    pass_: 'fwd' or 'bwd'; kind: collective; axes: mesh axes (long names) it runs over;
    matrix: which weight ('qkv', 'o', 'in', 'out'); operand: 'act' (activations, per token),
    'weight' (gathered weights, repeated every microbatch) or 'grad' (weight gradients, once
    per step); array: the ShardedArray whose bytes per device give the book's V (with
    ``factor`` = the group size for AllGather/AllToAll, 1 otherwise); step: the notation.
    """

    pass_: str
    kind: str
    axes: tuple
    matrix: str
    operand: str
    array: ShardedArray
    factor_axes: tuple
    step: str


_LONG = {v: k for k, v in AXIS_LETTERS.items()}
_MATRICES = {"qkv": ("D", "Q"), "o": ("O", "D"), "in": ("D", "F2"), "out": ("F", "D")}


def _sa(name, dims, axes_long, unreduced=()):
    return ShardedArray(name, tuple(dims), tuple(tuple(AXIS_LETTERS[a] for a in ax) for ax in axes_long),
                        tuple(AXIS_LETTERS[a] for a in unreduced))


@functools.lru_cache(maxsize=None)
def layer_comms(zero: int, sp: bool, parallel_block: bool = False) -> tuple:
    """The collectives of one dense transformer layer (attention projections and MLP) under the
    table ``_rules(zero, sp)``, as ``CommItem``s, derived with ``sharding.matmul`` on a mesh
    with every axis present (an axis of size 1 costs nothing).

    Activations are [S, D] with S = tokens (batch × sequence) sharded over the batch and
    sequence axes. Forward: X·W_qkv, A·W_o, X·W_in, H·W_out. Backward: dX = dY·Wᵀ for each, and
    dW = Xᵀ·dY with X as multiplied in the forward (saved); the gradient is reduced to the
    weight's sharding (ReduceScatter over the ZeRO axes, AllReduce over the others). ZeRO-1/2
    then AllGather the updated parameters over the ZeRO axes (once per step).

    ``parallel_block`` (PaLM's attention and MLP side by side on one normalised input, outputs
    added): the MLP's input is the attention's X and the two outputs are summed before they are
    reduced, so the MLP's activation collectives over the tensor axis (the gather of X and the
    reduction of dX; the reduction of its output and the gather of dOut) are the attention's own
    and are not paid twice.
    """
    if not isinstance(parallel_block, bool):
        raise TypeError(f"parallel_block must be True or False, got {parallel_block!r}")
    r = _rules(zero, sp)
    mesh = {AXIS_LETTERS[a]: 2 for a in MESH_AXES}
    tok = r["batch"] + r["sequence"]                       # activations between blocks
    tok_in = r["batch"] + tuple(a for a in r["sequence"] if a != "tensor")  # inside a block
    wd = r["d_model"]
    grad_d = ("fsdp", "expert")                            # ZeRO shards gradients/states here
    items: list[CommItem] = []

    def add(pass_, matrix, operand, plan_steps):
        for st in plan_steps:
            if st.kind == "slice":
                continue
            arr = st.after if st.kind in ("all_gather", "permute") else st.before
            fac = st.axes if st.kind == "all_to_all" else ()
            role = operand
            if operand == "auto":
                role = "weight" if arr.name.startswith("W") else "act"
            items.append(CommItem(pass_, st.kind, tuple(_LONG[a] for a in st.axes), matrix, role,
                                  arr, tuple(_LONG[a] for a in fac), st.notation()))

    def fwd_bwd(matrix, a_in, w, out_dims, out_axes, in_out_axes):
        # forward
        p = _matmul(a_in, w, mesh, out=ShardedArray("Out", out_dims, out_axes), out_name="Out")
        add("fwd", matrix, "auto", p.steps)
        saved = p.a_local                                   # the activation as multiplied
        # backward, input gradient: dOut · Wᵀ → dIn (back to the input's sharding)
        d_out = ShardedArray("dOut", out_dims, out_axes)
        wt = ShardedArray(w.name, (w.dims[1], w.dims[0]), (w.axes[1], w.axes[0]))
        pd = _matmul(d_out, wt, mesh, out=ShardedArray("dIn", a_in.dims, in_out_axes),
                     out_name="dIn")
        add("bwd", matrix, "auto", pd.steps)
        # backward, weight gradient: savedᵀ · dOut' → dW at the gradient's sharding
        xt = ShardedArray("XT", (saved.dims[1], saved.dims[0]), (saved.axes[1], saved.axes[0]))
        d_out_l = pd.a_local if pd.a_local.dims == d_out.dims else d_out
        d_out_l = ShardedArray("dY", d_out_l.dims, d_out_l.axes)
        g_axes = list(w.axes)
        d_idx = w.dims.index("D")
        g_axes[d_idx] = tuple(AXIS_LETTERS[a] for a in grad_d)
        pg = _matmul(xt, d_out_l, mesh, out_name="dW")
        # reduce the partial gradient: ReduceScatter over the ZeRO axes first (onto D, where
        # the parameter or its optimizer state is sharded), then AllReduce the 1/|ZeRO| shard
        # over the remaining replicas (data, context): what ZeRO does, and cheaper than the
        # other order
        gw = pg.product
        zaxes = tuple(AXIS_LETTERS[a] for a in grad_d if AXIS_LETTERS[a] in gw.unreduced)
        if zaxes:
            nxt = _sh.reduce_scatter(gw, "".join(zaxes), "D")
            items.append(CommItem("bwd", "reduce_scatter", tuple(_LONG[a] for a in zaxes), matrix,
                                  "grad", gw, (), f"RS_{''.join(zaxes)}: {gw} → {nxt}"))
            gw = nxt
        if gw.unreduced:
            rest = gw.unreduced
            nxt = _sh.all_reduce(gw, "".join(rest))
            items.append(CommItem("bwd", "all_reduce", tuple(_LONG[a] for a in rest), matrix,
                                  "grad", gw, (), f"AR_{''.join(rest)}: {gw} → {nxt}"))
            gw = nxt
        g_axes = list(w.axes)
        g_axes[w.dims.index("D")] = tuple(AXIS_LETTERS[a] for a in grad_d)
        if zero < 3:   # ZeRO-1/2: gather the updated parameter shards once per step
            gw = ShardedArray("W", w.dims, tuple(g_axes))
            for st in _reshard_steps(gw, w, mesh):
                if st.kind != "slice":
                    items.append(CommItem("bwd", st.kind, tuple(_LONG[a] for a in st.axes),
                                          matrix, "update", st.after, (), st.notation()))

    x = _sa("X", ("S", "D"), (tok, ()))
    wq = _sa("Wqkv", ("D", "Q"), (wd, ("tensor",)))
    fwd_bwd("qkv", x, wq, ("S", "Q"), tuple(tuple(AXIS_LETTERS[a] for a in ax) for ax in (tok_in, ("tensor",))),
            x.axes)
    a = _sa("A", ("S", "O"), (tok_in, ("tensor",)))
    wo = _sa("Wo", ("O", "D"), (("tensor",), wd))
    fwd_bwd("o", a, wo, ("S", "D"), x.axes, a.axes)
    wi = _sa("Win", ("D", "F2"), (wd, ("tensor",)))
    fwd_bwd("in", x, wi, ("S", "F2"), tuple(tuple(AXIS_LETTERS[a] for a in ax) for ax in (tok_in, ("tensor",))),
            x.axes)
    h = _sa("H", ("S", "F"), (tok_in, ("tensor",)))
    wout = _sa("Wout", ("F", "D"), (("tensor",), wd))
    fwd_bwd("out", h, wout, ("S", "D"), x.axes, h.axes)
    if parallel_block:
        items = [it for it in items if not (it.matrix in ("in", "out") and it.operand == "act"
                                             and "tensor" in it.axes)]
    return tuple(items)


# =============================================================================================
# consumer 2: PartitionSpecs of the parameters (the JAX proof)
# =============================================================================================

#: logical dimensions of ``scaling_lib.jax_model``'s parameters
JAX_MODEL_PARAMS = MappingProxyType({
    "embed": ("vocab_rows", "d_model"), "unembed": ("d_model", "vocab_cols"),
    "final_norm": (None,), "attn_norm": ("layers", None), "mlp_norm": ("layers", None),
    "wq": ("layers", "d_model", "heads", None), "wk": ("layers", "d_model", "kv_heads", None),
    "wv": ("layers", "d_model", "kv_heads", None), "wo": ("layers", "heads", None, "d_model"),
    "w_gate": ("layers", "d_model", "d_ff"), "w_up": ("layers", "d_model", "d_ff"),
    "w_down": ("layers", "d_ff", "d_model")})


def partition_specs(strategy: Strategy, params: dict, axis_names=None) -> dict:
    """Mesh axes of every ``jax_model`` parameter under ``strategy``'s table, as tuples usable
    as ``PartitionSpec(*spec)`` (None = replicated). ``axis_names`` maps roles to the JAX mesh's
    axis names (default: the book's letters, X = fsdp, Y = tensor ...); axes of size 1 are left
    out. Embedding tables are sharded over the FSDP axes on d_model only (vocab not split, as in
    the chapter-5 proof)."""
    names = dict(AXIS_LETTERS) if axis_names is None else dict(axis_names)
    r = dict(strategy.rules)
    r.update({"vocab_rows": (), "vocab_cols": (), "layers": ()})

    def spec(dims):
        out = []
        for d in dims:
            ax = tuple(names[a] for a in r.get(d, ()) if d is not None and strategy.degree(a) > 1) \
                if d is not None else ()
            out.append(None if not ax else (ax[0] if len(ax) == 1 else ax))
        return tuple(out)

    res = {}
    for k, v in params.items():
        if k == "layers":
            res[k] = {kk: spec(JAX_MODEL_PARAMS[kk]) for kk in v}
        else:
            if k not in JAX_MODEL_PARAMS:
                raise ValueError(f"no logical dimensions known for parameter {k!r}")
            res[k] = spec(JAX_MODEL_PARAMS[k])
    return res


# =============================================================================================
# consumer 3: the collectives the compiled step must contain
# =============================================================================================

_HLO = {"all_gather": "all-gather", "reduce_scatter": "reduce-scatter", "all_reduce": "all-reduce",
        "all_to_all": "all-to-all", "permute": "collective-permute"}


def expected_hlo(strategy: Strategy, platform: str = "cpu", n_weight_matrices=None) -> dict:
    """{HLO collective kind: (min count, max count or None)} that a compiled train step of
    ``strategy`` must hold, from the same ``layer_comms`` the cost model uses: every kind a
    step with an axis of size > 1 needs is required (at least one; all-gathers of weights at
    least ``n_weight_matrices`` when given), every other kind must be absent. On CPU XLA writes
    a ReduceScatter as all-reduce + dynamic-slice (JAX-COMPAT.md) and combines the gradient
    all-reduces into one tuple all-reduce."""
    if platform not in ("cpu", "tpu", "gpu"):
        raise ValueError(f"platform must be 'cpu', 'tpu' or 'gpu', got {platform!r}")
    need: dict[str, int] = {}
    for it in layer_comms(strategy.zero, strategy.sp):
        if math.prod(strategy.degree(a) for a in it.axes) <= 1:
            continue
        kind = _HLO[it.kind]
        if kind == "reduce-scatter" and platform == "cpu":
            kind = "all-reduce"
        lo = 1
        if kind == "all-gather" and it.operand == "weight" and n_weight_matrices:
            lo = n_weight_matrices
        need[kind] = max(need.get(kind, 0), lo)
    if strategy.ep > 1:
        need["all-to-all"] = max(need.get("all-to-all", 0), 1)
    out = {k: (need[k], None) if k in need else (0, 0)
           for k in ("all-gather", "all-reduce", "all-to-all")}
    if platform != "cpu" and "reduce-scatter" in need:
        out["reduce-scatter"] = (1, None)
    return out
