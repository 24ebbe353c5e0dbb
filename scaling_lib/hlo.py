"""Read the collectives XLA inserted into a compiled program, and which mesh axes they run over.

Units: none (device ids and mesh axes). Book: sec-03-compiler (第3章 编译器插入了哪些集合通信),
used again by the profiling chapters (第9、10章).

``collectives_in(hlo_text)`` scans the text of ``jax.jit(f).lower(...).compile().as_text()`` and
returns one ``(kind, groups)`` per collective instruction. ``groups`` is a tuple of tuples of
logical device ids (positions in the mesh's device order). XLA prints replica groups in three
forms, depending on the JAX/XLA version and on who made the collective; all three are decoded:

- explicit: ``replica_groups={{0,2,4,6},{1,3,5,7}}`` (``{}`` = one group of all devices);
- iota: ``replica_groups=[4,2]<=[8]`` or ``[2,4]<=[4,2]T(1,0)``: ``arange(prod(dims))
  .reshape(dims).transpose(perm).reshape(G, S)``;
- mesh: ``replica_groups=mesh['axis_0'=1,'axis_1'=2,'axis_2'=4], device_ids=([4,2]T(1,0))
  {'axis_1'}``: lay the device ids on the listed sizes; devices that differ only along the braced
  axes form one group.

``collective-permute`` has no groups; its ``source_target_pairs`` are returned as 2-tuples instead.
``mesh_axes_of_groups(groups, mesh)`` turns groups back into the book's mesh-axis names.
Ignores: the async ``-done`` halves (only ``-start`` is counted), channel ids, operand shapes.
"""
from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

__all__ = ["KINDS", "collectives_in", "count_collectives", "decode_replica_groups",
           "mesh_axes_of_groups", "collective_axes", "hlo_text"]

#: HLO instruction names of the collectives, in the book's order.
KINDS = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute")

_INSTR = re.compile(r"(?<![%\w.\-])(all-gather|reduce-scatter|all-reduce|all-to-all|"
                    r"collective-permute)(?:-start)?\(")
_PAIRS = re.compile(r"source_target_pairs=\{((?:\{\d+,\d+\},?)*)\}")


def _ints(s: str) -> list[int]:
    return [int(t) for t in re.findall(r"-?\d+", s)]


def _parse_iota_ids(s: str) -> np.ndarray:
    """'[4,2]T(1,0)' or '[8]' -> flat array of ids."""
    m = re.fullmatch(r"\s*\[([\d,]+)\](?:T\(([\d,]+)\))?\s*", s)
    if not m:
        if re.fullmatch(r"\s*[\d,\s]+\s*", s):
            return np.array(_ints(s))
        raise ValueError(f"cannot decode device ids {s!r}; expected '[4,2]' or '[4,2]T(1,0)'")
    dims = _ints(m.group(1))
    perm = _ints(m.group(2)) if m.group(2) else None
    ids = np.arange(math.prod(dims)).reshape(dims)
    if perm is not None:
        ids = ids.transpose(perm)
    return ids.reshape(-1)


def decode_replica_groups(attr: str, n_devices: int | None = None) -> tuple[tuple[int, ...], ...]:
    """Decode the text after ``replica_groups=`` (any of the three forms) into groups of ids.

    ``n_devices`` is needed only for the empty form ``{}`` (one group of every device).
    """
    if not isinstance(attr, str):
        raise TypeError(f"attr must be the replica_groups text (str), got {type(attr).__name__}")
    s = attr.strip()
    if s.startswith("{"):  # explicit
        depth, end = 0, None
        for i, ch in enumerate(s):
            depth += (ch == "{") - (ch == "}")
            if depth == 0:
                end = i
                break
        if end is None:
            raise ValueError(f"unbalanced braces in replica groups {s[:80]!r}")
        inner = s[1:end].strip()
        if not inner:
            if n_devices is None:
                raise ValueError("replica_groups={} means all devices; pass n_devices to decode it")
            return (tuple(range(n_devices)),)
        groups = re.findall(r"\{([\d,\s]*)\}", inner)
        return tuple(tuple(_ints(g)) for g in groups)
    if s.startswith("mesh["):  # mesh form
        m = re.match(r"mesh\[([^\]]*)\]\s*(?:,\s*device_ids=\(([^)]*\)?)\)\s*)?\{([^}]*)\}", s)
        if not m:
            raise ValueError(f"cannot decode mesh-form replica groups {s[:120]!r}")
        axes = re.findall(r"'([^']+)'\s*=\s*(\d+)", m.group(1))
        names = [a for a, _ in axes]
        sizes = [int(n) for _, n in axes]
        ids = _parse_iota_ids(m.group(2)) if m.group(2) else np.arange(math.prod(sizes))
        if ids.size != math.prod(sizes):
            raise ValueError(f"mesh {dict(zip(names, sizes))} has {math.prod(sizes)} devices but "
                             f"device_ids lists {ids.size}")
        grid = ids.reshape(sizes)
        braced = re.findall(r"'([^']+)'", m.group(3))
        unknown = [b for b in braced if b not in names]
        if unknown:
            raise ValueError(f"replica groups name axes {unknown} missing from mesh {names}")
        inner_ax = [names.index(b) for b in braced]
        outer_ax = [i for i in range(len(names)) if i not in inner_ax]
        g = grid.transpose(outer_ax + inner_ax).reshape(-1, math.prod(sizes[i] for i in inner_ax))
        return tuple(tuple(int(v) for v in row) for row in g)
    m = re.match(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", s)  # iota form
    if m:
        gdims = _ints(m.group(1))
        rdims = _ints(m.group(2))
        perm = _ints(m.group(3)) if m.group(3) else None
        ids = np.arange(math.prod(rdims)).reshape(rdims)
        if perm is not None:
            ids = ids.transpose(perm)
        ids = ids.reshape(-1)
        if len(gdims) != 2:
            ids = ids.reshape(gdims[0], -1)
        else:
            ids = ids.reshape(gdims)
        return tuple(tuple(int(v) for v in row) for row in ids)
    raise ValueError(f"unknown replica_groups form {s[:80]!r}; expected '{{{{0,1}},...}}', "
                     f"'[4,2]<=[8]' or \"mesh['axis_0'=...] {{...}}\"")


def _attr_after(line: str, key: str) -> str | None:
    i = line.find(key + "=")
    if i < 0:
        return None
    return line[i + len(key) + 1:]


def collectives_in(hlo_text: str, n_devices: int | None = None) -> list[tuple[str, tuple]]:
    """Every collective in compiled HLO text, in program order, as ``(kind, groups)``.

    kind is one of ``KINDS``; groups is a tuple of device-id tuples (for ``collective-permute``:
    the (source, target) pairs). Only instructions of the module's computations are counted,
    including those inside fusions and async ``-start`` wrappers.
    """
    if not isinstance(hlo_text, str):
        raise TypeError(f"hlo_text must be the str from compiled.as_text(), got "
                        f"{type(hlo_text).__name__}")
    out = []
    for line in hlo_text.splitlines():
        if " = " not in line:
            continue
        m = _INSTR.search(line.split(" = ", 1)[1])
        if not m:
            continue
        kind = m.group(1)
        if kind == "collective-permute":
            pm = _PAIRS.search(line)
            pairs = tuple(tuple(_ints(p)) for p in re.findall(r"\{(\d+,\d+)\}", pm.group(1))) if pm else ()
            out.append((kind, pairs))
            continue
        attr = _attr_after(line, "replica_groups")
        if attr is None:
            groups = (tuple(range(n_devices)),) if n_devices else ()
        else:
            groups = decode_replica_groups(attr, n_devices)
        out.append((kind, groups))
    return out


def count_collectives(hlo_text: str) -> dict[str, int]:
    """How many collectives of each kind the HLO holds (kinds absent from it are left out)."""
    return dict(Counter(k for k, _ in collectives_in(hlo_text)))


def _mesh_layout(mesh) -> tuple[tuple[str, ...], tuple[int, ...], dict[int, tuple[int, ...]]]:
    """(axis names, sizes, logical id -> mesh coordinates) for a jax Mesh or a {name: size} dict."""
    if isinstance(mesh, dict):
        if not mesh:
            raise ValueError("mesh must name at least one axis, e.g. {'X': 4, 'Y': 2}")
        for k, v in mesh.items():
            if not isinstance(k, str) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"mesh entries must be name -> positive int, got {k!r}: {v!r}")
        names, sizes = tuple(mesh), tuple(int(v) for v in mesh.values())
    elif hasattr(mesh, "axis_names") and hasattr(mesh, "devices"):
        names = tuple(mesh.axis_names)
        sizes = tuple(int(s) for s in np.shape(mesh.devices))
    else:
        raise TypeError(f"mesh must be a jax Mesh or a dict like {{'X': 4, 'Y': 2}}, "
                        f"got {type(mesh).__name__}")
    coords = {int(i): tuple(int(c) for c in np.unravel_index(i, sizes))
              for i in range(math.prod(sizes))}
    return names, sizes, coords


def mesh_axes_of_groups(groups, mesh) -> tuple[str, ...]:
    """The mesh axes a collective runs over, from its replica groups (or permute pairs).

    Logical device ids are positions in the mesh's device order (row-major over the mesh shape).
    For replica groups, each group must be exactly the devices that differ along the returned
    axes (otherwise ``ValueError``, the groups do not match any set of mesh axes). For
    ``collective-permute`` pairs, the axes along which sources and targets differ.
    Axes come back in mesh order; ``()`` means the collective is a no-op (groups of one).
    """
    names, sizes, coords = _mesh_layout(mesh)
    groups = tuple(tuple(int(d) for d in g) for g in groups)
    n = math.prod(sizes)
    for g in groups:
        for d in g:
            if d not in coords:
                raise ValueError(f"device id {d} is not on the mesh {dict(zip(names, sizes))} "
                                 f"(ids 0..{n - 1})")
    varying: set[int] = set()
    for g in groups:
        cs = np.array([coords[d] for d in g])
        varying |= {i for i in range(len(names)) if len(set(cs[:, i])) > 1}
    axes = tuple(names[i] for i in sorted(varying))
    is_pairs = groups and all(len(g) == 2 for g in groups) and \
        len({d for g in groups for d in g}) == len(groups) and len(groups) == n and \
        sorted(g[0] for g in groups) == list(range(n))
    if is_pairs:  # permute pairs: every device sends once
        return axes
    want = math.prod(sizes[names.index(a)] for a in axes) if axes else 1
    for g in groups:
        if len(set(g)) != want:
            raise ValueError(f"group {g} has {len(set(g))} devices, but a collective over "
                             f"{axes or '(none)'} needs groups of {want}: not a mesh-axis group")
        fixed = {i for i in range(len(names)) if names[i] not in axes}
        ref = coords[g[0]]
        if any(any(coords[d][i] != ref[i] for i in fixed) for d in g):
            raise ValueError(f"group {g} mixes devices of different {', '.join(names[i] for i in fixed)} "
                             f"coordinates: not a mesh-axis group")
    return axes


def collective_axes(hlo_text: str, mesh) -> list[tuple[str, tuple[str, ...]]]:
    """``collectives_in`` with the groups replaced by mesh-axis names: ``[(kind, axes), ...]``."""
    n = math.prod(_mesh_layout(mesh)[1])
    return [(k, mesh_axes_of_groups(g, mesh)) for k, g in collectives_in(hlo_text, n_devices=n)]


def hlo_text(fn, *args, **kwargs) -> str:
    """Compiled HLO text of ``jax.jit(fn)(*args, **kwargs)``: runs in ``scaling_lib.xla``
    (``xla.checks.hlo_text``); this module only reads HLO text."""
    from . import hooks
    return hooks.call("hlo_text", fn, *args, **kwargs)
