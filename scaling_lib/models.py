"""Preset model configurations (``TransformerConfig``) with their published hyperparameters.

Units: counts. Book: chapter 4 (sec-04-accounting) and the case-study chapters 5-8, 11.
Each preset names its source (the model's paper or its released config.json) in ``source``.
Canonical values follow ../shared/spec/CANON.md §2 (e.g. LLaMA-3-70B F = 28,672).
Ignores: rotary/rope-scaling settings, sliding windows, softcapping, multi-token-prediction heads
and anything else that adds no parameters or changes counts only negligibly (stated per model).
"""
from __future__ import annotations

import difflib
import re
from types import MappingProxyType
from typing import Mapping

from . import transformer as _transformer
from .transformer import TransformerConfig

__all__ = ["PRESETS", "PUBLISHED_PARAMS", "get", "names", "TOY_P41", "LLAMA2_13B", "LLAMA3_8B",
           "LLAMA3_70B", "LLAMA3_405B"]

TC = TransformerConfig

_LIST = [
    TC(name="LLaMA-3-8B", d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, d_ff=14336,
       vocab=128256,
       source="Meta Llama 3 8B config.json (hidden 4096, 32 layers, 32 heads, 8 KV heads, "
              "intermediate 14336, vocab 128256); CANON §2"),
    TC(name="LLaMA-3-70B", d_model=8192, n_layers=80, n_heads=64, n_kv_heads=8, d_ff=28672,
       vocab=128256,
       source="Meta Llama 3 70B config.json (hidden 8192, 80 layers, 64 heads, 8 KV heads, "
              "intermediate 28672, vocab 128256); CANON §2"),
    TC(name="LLaMA-3.1-405B", d_model=16384, n_layers=126, n_heads=128, n_kv_heads=8,
       d_ff=53248, vocab=128256,
       source="Meta Llama 3.1 405B config.json (hidden 16384, 126 layers, 128 heads, 8 KV heads, "
              "intermediate 53248, vocab 128256); CANON §2"),
    TC(name="LLaMA-2-7B", d_model=4096, n_layers=32, n_heads=32, n_kv_heads=32, d_ff=11008,
       vocab=32000,
       source="Touvron et al. 2023 (Llama 2), config.json: hidden 4096, 32 layers, MHA 32 heads, "
              "intermediate 11008, vocab 32000"),
    TC(name="LLaMA-2-13B", d_model=5120, n_layers=40, n_heads=40, n_kv_heads=40, d_ff=13824,
       vocab=32000,
       source="Llama 2 13B config.json: hidden 5120, 40 layers, MHA 40 heads, intermediate 13824, "
              "vocab 32000; CANON §2"),
    TC(name="LLaMA-2-70B", d_model=8192, n_layers=80, n_heads=64, n_kv_heads=8, d_ff=28672,
       vocab=32000,
       source="Llama 2 70B config.json: hidden 8192, 80 layers, 64 heads, GQA 8 KV heads, "
              "intermediate 28672, vocab 32000"),
    TC(name="GPT-3-175B", d_model=12288, n_layers=96, n_heads=96, n_kv_heads=96, d_ff=49152,
       vocab=50257, gated_mlp=False, tied_embeddings=True, norm_bias=True, linear_bias=True,
       pos_emb_len=2048,
       source="Brown et al. 2020, Table 2.1 (d_model 12288, 96 layers, 96 heads of 128, "
              "d_ff = 4·d_model, context 2048); GPT-2 style: GELU MLP, LayerNorm with bias, "
              "biased projections, learned positions, tied embeddings, BPE vocab 50257. "
              "The paper rounds the total to 175.0B"),
    TC(name="Mixtral-8x7B", d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, d_ff=14336,
       vocab=32000, n_experts=8, top_k=2,
       source="Jiang et al. 2024 (Mixtral of Experts), config.json: hidden 4096, 32 layers, "
              "32 heads, 8 KV heads, 8 experts of intermediate 14336, top-2, vocab 32000"),
    TC(name="DeepSeek-V3", d_model=7168, n_layers=61, n_heads=128, n_kv_heads=128, d_ff=18432,
       vocab=129280, d_head=128, n_experts=256, top_k=8, n_shared_experts=1, d_ff_expert=2048,
       n_dense_layers=3, q_lora_rank=1536, kv_lora_rank=512, rope_head_dim=64,
       source="DeepSeek-AI 2024 (arXiv 2412.19437) config.json: hidden 7168, 61 layers (first 3 "
              "dense, intermediate 18432), 256 routed + 1 shared experts of 2048, top-8, vocab "
              "129280; MLA with 128 heads, q_lora_rank 1536, kv_lora_rank 512, nope/rope/v head "
              "dims 128/64/128. Approximation: MLA counted in its non-absorbed form (FLOPs of "
              "the up-projections paid per token), the router's 256-entry bias per layer and the "
              "multi-token-prediction module are left out"),
    TC(name="Gemma-7B", d_model=3072, n_layers=28, n_heads=16, n_kv_heads=16, d_ff=24576,
       vocab=256000, d_head=256, tied_embeddings=True,
       source="Gemma Team 2024 (arXiv 2403.08295), config.json: hidden 3072, 28 layers, MHA 16 "
              "heads of 256, GeGLU intermediate 24576 per matrix, vocab 256000, tied embeddings"),
    TC(name="Gemma-2-27B", d_model=4608, n_layers=46, n_heads=32, n_kv_heads=16, d_ff=36864,
       vocab=256000, d_head=128, tied_embeddings=True, norms_per_layer=4,
       source="Gemma Team 2024 (arXiv 2408.00118), config.json: hidden 4608, 46 layers, 32 heads "
              "of 128, 16 KV heads, GeGLU intermediate 36864, vocab 256000, tied embeddings, "
              "pre- and post-norms (4 per layer)"),
    TC(name="PaLM-540B", d_model=18432, n_layers=118, n_heads=48, n_kv_heads=1, d_ff=73728,
       vocab=256000, d_head=256, tied_embeddings=True, norms_per_layer=1, parallel_block=True,
       source="Chowdhery et al. 2022 (PaLM), Table 1 and sec. 2: 118 layers, d_model 18432, 48 "
              "heads of 256, multi-query attention (one K/V head), SwiGLU with d_ff = 4·d_model, "
              "parallel attention/MLP block (one norm per layer), no biases, shared input/output "
              "embeddings, SentencePiece vocabulary 256k; 540.35B parameters"),
    TC(name="Megatron-1T", d_model=25600, n_layers=128, n_heads=160, n_kv_heads=160,
       d_ff=102400, vocab=51200, gated_mlp=False, tied_embeddings=True, norm_bias=True,
       linear_bias=True, pos_emb_len=2048,
       source="Narayanan et al. 2021 (Megatron-LM, SC'21), Table 1, the 1T row: hidden 25600, "
              "128 layers, 160 heads, GPT architecture (GELU MLP of 4·hidden, LayerNorm with "
              "bias, biased projections, learned positions of 2048, tied embeddings), vocab "
              "51,200; 1008B parameters"),
    # --- the book's own example configurations ------------------------------------------
    TC(name="P4.1 toy", d_model=4096, n_layers=64, n_heads=32, n_kv_heads=32, d_ff=16384,
       vocab=32000, norms_per_layer=1, final_norm=False,
       source="book ch.4 problem 1 (D=4096, F=4D, L=64, N·H=D MHA, V=32000, one norm of D per "
              "layer and no final norm, as the book counts it)"),
]

PRESETS: Mapping[str, TransformerConfig] = MappingProxyType({c.name: c for c in _LIST})

#: Published parameter totals (model card / paper / count of the released checkpoint).
PUBLISHED_PARAMS: Mapping[str, float] = MappingProxyType({
    "LLaMA-3-8B": 8_030_261_248,        # HF checkpoint (CANON §2)
    "LLaMA-3-70B": 70_553_706_496,      # HF checkpoint (CANON §2)
    "LLaMA-3.1-405B": 405_853_388_800,  # HF checkpoint (CANON §2)
    "LLaMA-2-7B": 6_738_415_616,        # HF checkpoint
    "LLaMA-2-13B": 13_015_864_320,      # HF checkpoint (CANON §2)
    "LLaMA-2-70B": 68_976_648_192,      # HF checkpoint
    "GPT-3-175B": 175.0e9,              # paper, Table 2.1 (rounded)
    "Mixtral-8x7B": 46_702_792_704,     # HF checkpoint ("46.7B")
    "DeepSeek-V3": 671e9,               # paper: 671B total, 37B activated (main model, no MTP)
    "Gemma-7B": 8_537_680_896,          # HF checkpoint ("8.5B")
    "Gemma-2-27B": 27_227_128_320,      # HF checkpoint ("27.2B")
    "PaLM-540B": 540.35e9,              # PaLM paper, Table 1 (rounded)
    "Megatron-1T": 1008e9,              # Megatron-LM SC'21, Table 1 (rounded)
    "P4.1 toy": 17_442_275_328,         # spec 04 P4.1: L(3DF+4DNH+D)+2DV (book "≈16B" is a rounding artefact)
})

TOY_P41 = PRESETS["P4.1 toy"]
LLAMA2_13B = PRESETS["LLaMA-2-13B"]
LLAMA3_8B = PRESETS["LLaMA-3-8B"]
LLAMA3_70B = PRESETS["LLaMA-3-70B"]
LLAMA3_405B = PRESETS["LLaMA-3.1-405B"]

_ALIASES = {"llama3-405b": "LLaMA-3.1-405B", "llama-3-405b": "LLaMA-3.1-405B",
            "gpt3": "GPT-3-175B", "gpt-3": "GPT-3-175B", "mixtral": "Mixtral-8x7B",
            "deepseek": "DeepSeek-V3", "toy": "P4.1 toy", "p4.1": "P4.1 toy",
            "gemma2-27b": "Gemma-2-27B", "palm": "PaLM-540B", "megatron": "Megatron-1T",
            "megatron-1t": "Megatron-1T"}


def _norm(s: str) -> str:
    s = s.lower().replace("×", "x")
    s = re.sub(r"(?<=\d)\.0(?=b)", "", s)
    return re.sub(r"[\s_\-.]+", "", s)


def names() -> list[str]:
    """All preset names, in catalogue order."""
    return list(PRESETS)


def get(name) -> TransformerConfig:
    """A preset by name, case- and punctuation-insensitive ('llama3-70b', 'LLaMA-3 70B').

    A ``TransformerConfig`` passes through. Unknown names raise KeyError with near matches.
    """
    if isinstance(name, TransformerConfig):
        return name
    if not isinstance(name, str):
        raise TypeError(f"model must be a name (str) or a TransformerConfig, got "
                        f"{type(name).__name__} {name!r}")
    table = {_norm(n): n for n in PRESETS}
    table.update({_norm(a): n for a, n in _ALIASES.items()})
    key = _norm(name)
    if key in table:
        return PRESETS[table[key]]
    close = difflib.get_close_matches(key, list(table), n=4, cutoff=0.5)
    sugg = sorted({table[c] for c in close})
    hint = f"; did you mean {', '.join(sugg)}?" if sugg else ""
    raise KeyError(f"unknown model {name!r}{hint} Known models: {', '.join(PRESETS)}")


_transformer.register_presets(get)   # transformer's functions accept preset names
