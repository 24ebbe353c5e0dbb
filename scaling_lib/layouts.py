"""The layouts of published training runs, written in the library's one Strategy and evaluated
with the same model as any other strategy.

Units: SI (seconds, bytes, FLOPs). Book: sec-06-meta (LLaMA 3 on H100), sec-12-rooflines
(DeepSeek-V3, Megatron-LM on GPU clusters), sec-05-pods (PaLM across two TPU v4 pods).

Each ``PublishedLayout`` holds the model preset, the system, the strategy as published, the
batch and sequence length, what the paper reports (MFU or throughput) and the assumptions we had
to make where the paper is silent (said in ``assumptions``). ``compare(layout)`` evaluates it and
puts our step time, memory per device, bottleneck and bubble beside the published numbers (the
published step time is derived from the published throughput: tokens per step / tokens per s,
or model FLOPs / (chips × MFU × peak)). Our step time is a lower bound (perfect overlap inside a
pass), so the ratio published/ours is the efficiency the run reached against this model.
Ignores: everything ``scaling_lib.step`` ignores; load imbalance between experts; the
multi-token-prediction module (DeepSeek-V3); data loading and optimizer steps.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

from . import hardware, models, pipeline, step, topology
from .strategy import Strategy
from .units import check_int

__all__ = ["PublishedLayout", "LAYOUTS", "get", "names", "compare", "plan_contains"]


@dataclass(frozen=True)
class PublishedLayout:
    """One published training layout (see the module docstring)."""

    key: str
    title: str
    model: str                       #: a ``models`` preset name
    system: topology.System
    strategy: Strategy
    batch_tokens: float
    seq_len: int
    published: dict                  #: mfu, tokens_per_s, step_time_s, tflops_per_gpu (as given)
    source: str
    assumptions: str = ""
    state_bytes: tuple = (2.0, 8.0, 2.0)       #: param, optimizer, grad bytes per parameter
    plan_options: dict = field(default_factory=dict)   #: plan() options whose space holds it
    #: how the paper counts the model FLOPs behind a published MFU (``step.FLOPS_CONVENTIONS``):
    #: 'matmul' (the library's, chapter 4's) or 'all_params' (6 per parameter, embedding included)
    flops_convention: str = "matmul"

    @property
    def cfg(self):
        return models.get(self.model)

    def evaluate(self, **kw) -> step.StepResult:
        pb, ob, gb = self.state_bytes
        kw.setdefault("whole_sequences", True)        # a real run: whole sequences per shard
        return step.evaluate(self.strategy, self.cfg, self.system, self.batch_tokens,
                             self.seq_len, param_bytes=pb, opt_bytes=ob, grad_bytes=gb, **kw)

    def published_step_time(self, model_flops: float) -> float:
        """Seconds per step the paper's numbers imply: tokens per step / tokens per second;
        GPU-hours per trillion tokens × tokens per step / chips; hardware FLOPs per step
        (Megatron's 96·B·s·l·h²·(1 + s/6h + V/16lh), which counts the recomputed forward) /
        (chips × reported FLOP/s per GPU); else model FLOPs / (chips × MFU × bf16 peak)."""
        p = self.published
        n = self.system.n_chips
        if "step_time_s" in p:
            return float(p["step_time_s"])
        if "tokens_per_s" in p:
            return self.batch_tokens / p["tokens_per_s"]
        if "gpu_hours_per_trillion_tokens" in p:
            return self.batch_tokens / 1e12 * p["gpu_hours_per_trillion_tokens"] * 3600 / n
        if "tflops_per_gpu_with_recompute" in p:
            cfg = self.cfg
            h, s_, l_, v_ = cfg.d_model, self.seq_len, cfg.n_layers, cfg.vocab
            hw = 96.0 * self.batch_tokens * l_ * h * h * (1 + s_ / (6 * h) + v_ / (16 * l_ * h))
            return hw / (n * p["tflops_per_gpu_with_recompute"] * 1e12)
        if "mfu" in p:      # model_flops in the paper's count (``flops_convention``)
            c = hardware.peak_flops(self.system.chip)
            return model_flops / (n * c * p["mfu"])
        raise ValueError(f"{self.key}: no published time, throughput or MFU")


def _ll(n_stages=16):
    # LLaMA 3 405B: one layer fewer on the first and the last stage (126 = 7 + 14·8 + 7)
    return (7,) + (8,) * (n_stages - 2) + (7,)


_LLAMA_SRC = ("Dubey et al. 2024 (The Llama 3 Herd of Models), sec. 3.3 and Table 4: 16,384 "
              "H100 (700 W, 80 GB) in 8-GPU servers over a 400 Gb/s RoCE fabric; 405B at 8K "
              "context: TP 8, CP 1, PP 16, DP 128, 16M tokens per batch, 400 TFLOPs/GPU, 41% "
              "BF16 MFU; at 131K context: TP 8, CP 16, PP 16, DP 8, 380 TFLOPs/GPU, 38%; FSDP "
              "that does not reshard after the forward pass; one layer fewer on the first and "
              "last pipeline stages")

LAYOUTS = MappingProxyType({
    "llama3-405b-8k": PublishedLayout(
        "llama3-405b-8k", "LLaMA-3.1 405B，16,384 颗 H100（8K 上下文）", "LLaMA-3.1-405B",
        topology.system("DGX H100", 16384, fabric="roce"),
        Strategy(fsdp=128, tp=8, pp=16, zero=2, microbatches=16, schedule="interleaved",
                 virtual_stages=4, stage_layers=_ll(), order=("tensor", "context", "expert",
                                                              "pipe", "fsdp", "data")),
        16 * 2**20, 8192, {"mfu": 0.41, "tflops_per_gpu": 400}, _LLAMA_SRC,
        "interleaving depth not published: 4 virtual stages assumed; microbatch = 1 sequence; "
        "selective recomputation assumed; MFU counts 6 FLOPs per parameter, embedding included "
        "(the paper's 3.8e25 = 6 × 405.85e9 × 15.6e12)",
        plan_options=dict(microbatches=(16,), remats=("selective",), zeros=(2,),
                          schedules=("interleaved",), virtual_stages=(4,), uneven_stages=True,
                          order=("tensor", "context", "expert", "pipe", "fsdp", "data")),
        flops_convention="all_params"),
    "llama3-405b-131k": PublishedLayout(
        "llama3-405b-131k", "LLaMA-3.1 405B，16,384 颗 H100（131K 上下文，CP 16）", "LLaMA-3.1-405B",
        topology.system("DGX H100", 16384, fabric="roce"),
        Strategy(fsdp=8, tp=8, cp=16, pp=16, zero=2, microbatches=16, schedule="interleaved",
                 virtual_stages=4, stage_layers=_ll(), cp_kind="allgather",
                 order=("tensor", "context", "expert", "pipe", "fsdp", "data")),
        16 * 2**20, 131072, {"mfu": 0.38, "tflops_per_gpu": 380}, _LLAMA_SRC,
        "as the 8K layout; Meta's CP all-gathers K and V (cp_kind='allgather')",
        plan_options=dict(microbatches=(16,), remats=("selective",), zeros=(2,), cps=(16,),
                          schedules=("interleaved",), virtual_stages=(4,), uneven_stages=True,
                          order=("tensor", "context", "expert", "pipe", "fsdp", "data")),
        flops_convention="all_params"),
    "deepseek-v3": PublishedLayout(
        "deepseek-v3", "DeepSeek-V3，2,048 颗 H800", "DeepSeek-V3",
        topology.system("H800", 2048, fabric="infiniband"),
        Strategy(fsdp=2, ep=64, pp=16, zero=1, microbatches=120, schedule="dualpipe",
                 precision="fp8", ep_node_limit=4,
                 stage_layers=pipeline.even_stage_layers(61, 16)),
        15360 * 4096, 4096, {"gpu_hours_per_trillion_tokens": 180e3},
        "DeepSeek-AI 2024 (DeepSeek-V3 technical report), sec. 3.1-3.3 and Table 1: 2,048 H800 "
        "in 8-GPU nodes (NVLink inside, 400 Gb/s InfiniBand between); 16-way pipeline with "
        "DualPipe, 64-way expert parallelism over 8 nodes, ZeRO-1 data parallelism, no tensor "
        "parallelism; FP8 matmuls; each token sent to at most 4 nodes; batch 15,360 sequences of "
        "4K; 180K H800 GPU-hours per trillion tokens",
        "microbatch = 1 sequence (120 per rank) assumed; 61 layers split as evenly as possible "
        "(13 stages of 4, 3 of 3); MTP module left out; selective recomputation",
        plan_options=dict(microbatches=(120,), remats=("selective",), zeros=(1,),
                          schedules=("dualpipe",), uneven_stages=True, precision="fp8",
                          ep_node_limit=4)),
    "megatron-1t": PublishedLayout(
        "megatron-1t", "Megatron-LM 1T，3,072 颗 A100", "Megatron-1T",
        topology.system("DGX A100", 3072, fabric="infiniband"),
        Strategy(dp=6, tp=8, pp=64, microbatches=512, schedule="interleaved",
                 virtual_stages=2, remat="full"),
        3072 * 2048, 2048, {"tflops_per_gpu_with_recompute": 163, "aggregate_pflops": 502},
        "Narayanan et al. 2021 (Efficient Large-Scale Language Model Training on GPU Clusters "
        "Using Megatron-LM, SC'21), Table 1 and sec. 5: 1008B GPT on 3,072 A100 (Selene, DGX "
        "A100 with 8× 200 Gb/s HDR InfiniBand), TP 8, PP 64, DP 6, batch 3,072 sequences of "
        "2,048, interleaved schedule, full activation recomputation; 163 TFLOP/s per GPU "
        "counting the recomputation (52% of peak), 502 PFLOP/s in all",
        "2 virtual stages assumed; microbatch = 1 sequence (512 per replica); mixed-precision "
        "Adam with fp32 gradients (2 + 12 + 4 bytes per parameter)",
        state_bytes=(2.0, 12.0, 4.0),
        plan_options=dict(microbatches=(512,), remats=("full",), zeros=(3,),
                          schedules=("interleaved",), virtual_stages=(2,))),
    "palm-540b": PublishedLayout(
        "palm-540b", "PaLM 540B，6,144 颗 TPU v4（两个 Pod）", "PaLM-540B",
        topology.System("v4p", 6144, shape=(12, 16, 16)),
        Strategy(dp=2, fsdp=256, tp=12, zero=3, remat="full"),
        2048 * 2048, 2048, {"tokens_per_s": 238.3e3, "mfu": 0.462},
        "Chowdhery et al. 2022 (PaLM), sec. 4 and Table 3: 6,144 TPU v4 in two pods of 3,072 "
        "(12×16×16), 12-way model parallelism × 256-way fully sharded data parallelism inside "
        "each pod, data parallelism across the pods over DCN, no pipeline; 2,048 sequences of "
        "2,048 tokens; 238.3K tokens/s, 46.2% MFU (57.8% HFU with rematerialisation)",
        "v4 DCN per host not published: 2.5e10 B/s per host of 4 chips assumed (catalogue); "
        "full recomputation: the paper's HFU/MFU = 57.8/46.2 = 1.25 means about 3/4 of the "
        "forward pass is recomputed, nearer 'full' (4/3) than 'selective' (about 1)",
        plan_options=dict(microbatches=(1,), remats=("full",), zeros=(3,))),
})


def names() -> list:
    return list(LAYOUTS)


def get(key) -> PublishedLayout:
    if isinstance(key, PublishedLayout):
        return key
    if key not in LAYOUTS:
        import difflib
        close = difflib.get_close_matches(str(key), list(LAYOUTS), n=3, cutoff=0.3)
        raise KeyError(f"unknown layout {key!r}; known: {', '.join(LAYOUTS)}"
                       + (f"; did you mean {', '.join(close)}?" if close else ""))
    return LAYOUTS[key]


def compare(key) -> dict:
    """Our evaluation of a published layout beside what was published."""
    lay = get(key)
    r = lay.evaluate()
    fl = r.model_flops_as(lay.flops_convention)       # the paper's count of model FLOPs
    pub_t = lay.published_step_time(fl)
    c = hardware.peak_flops(lay.system.chip, lay.strategy.precision)
    return {"layout": lay.key, "title": lay.title, "strategy": str(lay.strategy),
            "system": str(lay.system), "step_time": r.step_time, "published_step_time": pub_t,
            "efficiency": r.step_time / pub_t, "mfu_bound": r.mfu,
            "published_mfu": fl / (lay.system.n_chips * c * pub_t),
            "flops_convention": lay.flops_convention,
            "memory_per_device": r.memory["total"], "hbm": lay.system.chip.hbm_bytes,
            "bottleneck": r.bottleneck, "bubble": r.bubble, "result": r}


def plan_contains(key, top: int = 1_000_000) -> dict:
    """Run ``plan`` over the space ``plan_options`` describes and find the published layout in
    it: the candidate with its degrees must be feasible and priced exactly as ``evaluate``
    prices the layout. The space holds only layouts a real run can use: every data shard and
    microbatch takes whole sequences (``step.plan(whole_sequences=True)``). Returns the plan,
    the matching result and its rank."""
    lay = get(key)
    check_int("top", top)
    pb, ob, gb = lay.state_bytes
    res = step.plan(lay.cfg, lay.system, lay.batch_tokens, lay.seq_len, top=top,
                    distinct=False, raise_if_none=False, param_bytes=pb, opt_bytes=ob,
                    grad_bytes=gb, whole_sequences=True, **lay.plan_options)
    s = lay.strategy
    want = (s.dp, s.fsdp, s.tp, s.pp, s.ep, s.cp, s.microbatches, s.remat, s.zero, s.schedule,
            s.virtual_stages)
    for i, r in enumerate(res.results):
        t = r.strategy
        if (t.dp, t.fsdp, t.tp, t.pp, t.ep, t.cp, t.microbatches, t.remat, t.zero, t.schedule,
                t.virtual_stages) == want:
            return {"plan": res, "result": r, "rank": i + 1}
    return {"plan": res, "result": None, "rank": None}
