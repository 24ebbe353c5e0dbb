"""One model of training memory: parameters, gradients, optimizer state and saved activations,
per device, under ZeRO sharding and rematerialisation.

Units: bytes (elements × bytes per element). Book: sec-04-remat (chapter 4's accountant, c ≈
20 / 7 / 1 saved B·T·D arrays per layer), sec-05-fsdp (chapter 5's saved (F, F, D) and chapter
6's four D-sized saves), sec-05-fsdp (ZeRO stages 1–3), sec-05-planner (the planner's widths).

Every memory number of the library comes from here; the chapters' simpler accountings are named
options of the same functions:

- remat policies ``"none" | "selective" | "full"`` (chapter 4's names ``"dots"`` and
  ``"block"``, and JAX's ``"nothing_saveable"``..., are aliases);
- activation models: ``"widths"`` (the planner: a layer saves its input, attention's Q/K/V/O
  and the MLP's activations, i.e. 3D + (2N+2K)H + (m+1)F per token with no remat, 4D with
  selective, D with full), ``"ch4"`` (c·D with c = 20 / 7 / 1), and explicit ``saves``
  (a tuple of widths: chapter 5's ('F', 'F', 'D'), chapter 6's four 'D').
- ZeRO: stage 1 shards the optimizer state, 2 also the gradients, 3 also the parameters, each
  over the ranks that hold replicas of them.

Ignores: allocator fragmentation, temporary buffers other than gathered weights (the planner
adds two gathered layers under ZeRO-3), logits memory.
"""
from __future__ import annotations

import numpy as np

from .units import check_positive, as_float_or_array as _arr

__all__ = ["REMAT_POLICIES", "REMAT_ALIASES", "remat_policy", "CH4_SAVED_ARRAYS",
           "ACTIVATION_MODELS", "saved_width", "activation_bytes", "zero_divisors", "state_bytes"]

#: canonical remat policies, least to most recomputation
REMAT_POLICIES = ("none", "selective", "full")
#: other names for them (chapter 4, JAX checkpoint policies, everyday words)
REMAT_ALIASES = {"dots": "selective", "save_dots": "selective", "big_matmuls": "selective",
                 "dots_with_no_batch_dims_saveable": "selective", "block": "full",
                 "nothing_saveable": "full", "layer": "full", "everything_saveable": "none",
                 "no": "none", "off": "none"}
#: chapter 4's saved B·T·D-sized arrays per layer (sec-04-remat)
CH4_SAVED_ARRAYS = {"none": 20.0, "selective": 7.0, "full": 1.0}
ACTIVATION_MODELS = ("widths", "ch4")


def remat_policy(name: str) -> str:
    """The canonical policy for ``name`` ('none', 'selective', 'full' or an alias)."""
    if not isinstance(name, str):
        raise TypeError(f"remat policy must be a string, got {type(name).__name__} {name!r}")
    k = name.strip().lower()
    k = REMAT_ALIASES.get(k, k)
    if k not in REMAT_POLICIES:
        raise ValueError(f"unknown remat policy {name!r}; allowed: {', '.join(REMAT_POLICIES)} "
                         f"(aliases: {', '.join(REMAT_ALIASES)})")
    return k


def saved_width(policy, d_model, n_heads=None, n_kv_heads=None, d_head=None, d_ff=None,
                mlp_mats: int = 3, top_k: int = 1, activation_model: str = "widths"):
    """Elements saved per token per layer for the backward pass (multiply by tokens, layers and
    bytes per element). ``policy`` a name or an array of codes (0 none, 1 selective, 2 full).

    "widths": none 3D + (2N+2K)H + (m+1)·F·k; selective 4D; full D. "ch4": c·D, c = 20/7/1.
    """
    if activation_model not in ACTIVATION_MODELS:
        raise ValueError(f"activation_model must be one of {ACTIVATION_MODELS}, got "
                         f"{activation_model!r}")
    D = check_positive("d_model", d_model, allow_array=False)
    code = (np.asarray(REMAT_POLICIES.index(remat_policy(policy))) if isinstance(policy, str)
            else np.asarray(policy))
    if activation_model == "ch4":
        c = np.array([CH4_SAVED_ARRAYS[p] for p in REMAT_POLICIES])[code]
        return _arr(c * D)
    for nm, v in (("n_heads", n_heads), ("n_kv_heads", n_kv_heads), ("d_head", d_head),
                  ("d_ff", d_ff)):
        if v is None:
            raise ValueError(f"the 'widths' activation model needs {nm}")
    none = 3.0 * D + (2 * n_heads + 2 * n_kv_heads) * d_head + (mlp_mats + 1) * d_ff * top_k
    return _arr(np.where(code == 2, D, np.where(code == 1, 4.0 * D, none)))


def activation_bytes(tokens, width, n_layers, bytes_per_elem=2.0):
    """Saved activations: tokens × width × layers × bytes (vectorised)."""
    return _arr(np.asarray(tokens, dtype=float) * np.asarray(width, dtype=float)
                * np.asarray(n_layers, dtype=float) * np.asarray(bytes_per_elem, dtype=float))


def zero_divisors(stage, n):
    """(params, grads, optimizer) divisors under ZeRO ``stage`` (0 = none) over ``n`` ranks."""
    st = np.asarray(stage)
    if np.any((st < 0) | (st > 3)):
        raise ValueError(f"ZeRO stage must be 0, 1, 2 or 3, got {stage!r}")
    n = np.asarray(n, dtype=float)
    one = np.ones(np.broadcast(st, n).shape)
    return (np.where(st >= 3, n, one), np.where(st >= 2, n, one), np.where(st >= 1, n, one))


def state_bytes(n_params, param_bytes=2.0, grad_bytes=2.0, opt_bytes=8.0, stage=0, n=1) -> dict:
    """Bytes per device of parameters, gradients and optimizer state of ``n_params`` parameters
    held by ``n`` ranks under ZeRO ``stage`` (vectorised; 0 = every rank holds everything)."""
    P = np.asarray(n_params, dtype=float)
    dp, dg, do = zero_divisors(stage, n)
    out = {"params": P * param_bytes / dp, "grads": P * grad_bytes / dg,
           "optimizer": P * opt_bytes / do}
    out = {k: _arr(v) for k, v in out.items()}
    out["total"] = _arr(np.asarray(out["params"]) + np.asarray(out["grads"])
                        + np.asarray(out["optimizer"]))
    return out
