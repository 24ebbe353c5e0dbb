"""Chapter 7 exercises (spec 07, P7.1-P7.21; corrected per CANON §4: v5e HBM 8.2e11 B/s,
α = 2189, β = 9.1, 16e9 bytes per chip). The free-text part of P7.17 is a 思考题 (not graded).

Expected values are computed from scaling_lib.inference; tests/test_exercises_07.py pins them to
the spec's corrected answers.
"""
from __future__ import annotations

from .. import hardware, inference as inf
from . import Exercise

V5E = "TPU v5e"
CH7 = inf.BOOK_CH7_MODEL


def _l13():
    return inf.served_model("llama2-13b")


def _moe():
    return inf.ServedModel.from_dims("ch7 MoE", L=64, D=4096, F=16384, N=32, K=8, H=256,
                                     V=32128, tied=True, n_experts=16, top_k=2)


def _p71():
    return [inf.critical_batch(V5E, w, c) for w, c in (("bf16", "bf16"), ("int8", "bf16"),
                                                      ("int8", "int8"))]


def _p73b():
    return [2 * inf.critical_batch(V5E), float(inf.attention_intensity(8192, 1))]


def _p75():
    q = inf.POP_QUIZ_30B
    a = inf.decode_step_time(q, 4, 8192, 16, V5E, "int8", "int8")
    b = inf.decode_step_time(q, 256, 8192, 16, V5E, "int8", "int8", check_memory=False)
    return [float(a.total_s) * 1e3, float(b.total_s) * 1e3]


def _p76():
    m = _l13()
    return [m.params, m.params * 2]


def _p77():
    m = _l13()
    kv = float(inf.kv_bytes_per_seq(m, 8192))
    import math
    return [kv, math.ceil(float(inf.kv_weight_balance_batch(m, 8192)))]


def _step_ref(B, kv_seq, param_bytes, n, W):
    return (B * kv_seq + param_bytes) / (n * W)


def _p79b():
    k8 = inf.ServedModel("13B K=8", 13.0e9, 2 * 40 * 8 * 128)
    return [inf.max_batch_size(_l13(), 8192, 8, V5E), inf.max_batch_size(k8, 8192, 8, V5E)]


def _p79c():
    m = inf.ServedModel("13B", 13.0e9, 2 * 40 * 40 * 128)
    t = inf.min_step_time(26e9, float(inf.kv_bytes_per_seq(m, 8192)), 32, 8, V5E)
    return [t * 1e3, 32 / t]


def _p711():
    return [float(inf.latency_bound_bytes(8, V5E)), 16 * 8192 * 1.0]


def _p711b():
    return "A" if bool(inf.collective_is_latency_bound(16 * 8192, 8, V5E)) else "B"


def _p712():
    return inf.min_step_time(2 * (2 * 8192 * 32768) / 4, 0, 1, 1, V5E)


def _p715():
    k1 = inf.ServedModel("K=1", CH7.params, 2 * 64 * 1 * 256)
    return [inf.max_batch_size(CH7, 8192, 16, V5E, "int8", "int8"),
            inf.max_batch_size(k1, 8192, 16, V5E, "int8", "int8")]


def _p716():
    p = CH7.params
    return [inf.min_step_time(p, 0, 1, 16, V5E) * 1e3, inf.min_step_time(2 * p, 0, 1, 16, V5E) * 1e3,
            inf.min_step_time(p, 0, 1, 1, V5E) * 1e3]


def _p717():
    return float(inf.decode_step_time(CH7, 32, 8192, 16, V5E, "int8", "int8").total_s) * 1e3


def _p718():
    m = _moe()
    return [m.params, m.active_params, inf.moe_critical_batch(16, 2, V5E), m.kv_elems_per_token]


def _moe_flops_ref(T):
    m = _moe()
    return 2 * m.active_params * T + 4 * 64 * 32 * 256 * T ** 2


def _p719():
    m = _moe()
    per_chip = m.params * 2 / 128
    need = inf.min_chips(m, "bf16")
    return [inf.min_step_time(per_chip, 0, 1, 1, V5E) * 1e3,
            (hardware.get(V5E).hbm_bytes - per_chip) / 1e9, inf.smallest_slice(need)]


def _t2d_ref(B, D, F, X, YZ, W):
    return 2 * B * D / (X * W) + 4 * B * F / (YZ * W)


def _p721():
    return [float(inf.spec_decode_expected_tokens(0.8, 4)),
            float(inf.spec_decode_time_per_token(0.8, 4, 0.05, 1.0))]


def _rint(rng, lo, hi):
    return int(rng.integers(lo, hi))


EXERCISES = [
    Exercise("7.1", "b_crit", "numbers", _p71, rtol=0.05, unit="token",
             accept=([243.2, 121.6, 243.2],),
             explain="只量化权重时每个字节能做的运算少了一半，门槛跟着减半；运算也用 int8 时峰值翻倍，又回到 240。"),
    Exercise("7.2", "b_exact", "number",
             lambda: float(inf.exact_critical_batch(8192, 28672, V5E)), rtol=0.02, unit="token",
             explain="精确的门槛比近似的 240 略大：激活的读写也占了一点带宽。"),
    Exercise("7.3", "attn_intensity", "function", lambda S, T: S * T / (S + T), rtol=0.01,
             sampler=lambda rng: {"S": _rint(rng, 1, 100_000), "T": _rint(rng, 1, 100_000)},
             unit="FLOPs/字节", explain="S = T 时是 T/2；T = 1 时约为 1。"),
    Exercise("7.3b", "attn_numbers", "numbers", _p73b, rtol=0.03,
             unit="[token, FLOPs/字节]",
             explain="预填充的提示词超过约 480 个 token 就计算受限；解码注意力的强度约为 1，和批次无关。"),
    Exercise("7.4", "gqa_intensity", "function", lambda S, T, G: S * T * G / (S + T * G),
             rtol=0.01,
             sampler=lambda rng: {"S": _rint(rng, 1, 100_000), "T": _rint(rng, 1, 4096),
                                  "G": int(rng.choice([1, 2, 4, 8, 16]))},
             unit="FLOPs/字节", explain="解码时（T = 1）强度趋于 G：GQA 把解码注意力的强度提高了 G 倍，但仍远低于 240。"),
    Exercise("7.4b", "gqa_decode", "number", lambda: float(inf.attention_intensity(8192, 1, 8)),
             rtol=0.03, unit="FLOPs/字节", explain="约等于 G = 8，还是远小于 240：解码注意力仍然卡在带宽上。"),
    Exercise("7.5", "quiz_ms", "numbers", _p75, rtol=0.05, unit="ms",
             accept=([2.57, 21.05],), hints=((1e3, "你的结果像是以秒为单位的 1000 倍：这里要毫秒。"),),
             explain="批次大了 64 倍，时间只多了约 8 倍：小批次时权重才是大头。"),
    Exercise("7.6", "llama13", "numbers", _p76, rtol=0.02, unit="[个, 字节]",
             explain="130 亿参数、26 GB bf16 权重，一颗 16 GB 的 v5e 放不下。"),
    Exercise("7.7", "kv13", "numbers", _p77, rtol=0.02, unit="[字节, 条]",
             explain="多头注意力的 KV 缓存很重：4 条 8k 序列就超过了权重。"),
    Exercise("7.8", "act_bytes", "number", lambda: 8192 * 5120 * 2.0, rtol=0.1, unit="字节",
             accept=(80e6,), explain="一个激活张量不到 0.1 GB：推理时激活可以忽略。"),
    Exercise("7.9", "step_time", "function", _step_ref, rtol=0.01,
             sampler=lambda rng: {"B": _rint(rng, 1, 512), "kv_seq": float(rng.uniform(1e8, 1e10)),
                                  "param_bytes": float(rng.uniform(1e9, 3e11)),
                                  "n": int(rng.choice([1, 4, 8, 16])), "W": 8.2e11},
             unit="秒", explain="小批次时每步就是把所有字节从 HBM 读一遍。"),
    Exercise("7.9b", "bmax13", "numbers", _p79b, rtol=0.02, unit="条",
             accept=([16, 83],),
             explain="按 16e9 字节一颗算，K = 40 时只装得下 15 条；K = 8 时能装 75 条左右。"),
    Exercise("7.9c", "row32", "numbers", _p79c, rtol=0.02, unit="[ms, token/s]",
             explain="批次 32 时 KV 已经是权重的 8 倍，吞吐被缓存拖住。"),
    Exercise("7.10", "y_max", "number",
             lambda: float(inf.max_model_parallelism_memory_bound(16384, 32, beta=8)), rtol=0.01,
             unit="路", accept=(56.2,),
             explain="解码是读权重受限的，可以远远越过训练时的模型并行界限。"),
    Exercise("7.11", "lat_bytes", "numbers", _p711, rtol=0.03, unit="字节",
             explain="131 kB 远小于 360 kB 的门槛。"),
    Exercise("7.11b", "lat_choice", "choice", _p711b, choices=("A", "B"),
             explain="每个分片的数据传完不到 1 µs，固定延迟说了算。"),
    Exercise("7.12", "floor_s", "number", _p712, rtol=0.1, unit="秒", accept=(365e-6,),
             explain="平的那一段正是读权重的时间。"),
    Exercise("7.13", "prefix_frac", "number", lambda: 1 / 3, rtol=0.01, unit="",
             explain="三个 token 里两个的 KV 已经缓存，只需算一个。"),
    Exercise("7.14", "ch7_model", "numbers", lambda: [CH7.params, CH7.kv_elems_per_token],
             rtol=0.02, unit="[个, 个]",
             explain="1.84e10 个参数；每个 token 的 KV 缓存有 262,144 个数，int8 是 262 kB。"),
    Exercise("7.15", "b_max", "numbers", _p715, rtol=0.1, unit="条",
             explain="只有一个 KV 头时缓存小 8 倍，批次也大 8 倍。"),
    Exercise("7.16", "load_ms", "numbers", _p716, rtol=0.05, unit="ms",
             accept=([1.42, 2.84, 22.7],),
             explain="这是每个解码步的下限：权重至少要读一遍。"),
    Exercise("7.17", "latency_ms", "number", _p717, rtol=0.1, unit="ms", accept=(6.7,),
             explain="4x4 上 16 路模型并行时，B = 32 的一步约 6.6 ms，另加一些延迟受限的集合通信。"),
    Exercise("7.18", "moe", "numbers", _p718, rtol=0.05, unit="[个, 个, token, 个]",
             explain="MoE 让总参数暴涨，但每个 token 只用到其中一小部分，KV 缓存完全不变。"),
    Exercise("7.18b", "moe_flops", "function", _moe_flops_ref, rtol=0.01,
             sampler=lambda rng: {"T": _rint(rng, 1, 32768)}, unit="FLOPs",
             explain="线性项来自激活的参数，平方项来自注意力（不考虑因果掩码）。"),
    Exercise("7.19", "expert_shard", "numbers", _p719, rtol=0.1, unit="[ms, GB, 颗]",
             explain="128 路切分后每颗只存 3.3 GB 权重；单放权重至少要 4x8。"),
    Exercise("7.20", "t_2d", "function", _t2d_ref, rtol=0.01,
             sampler=lambda rng: {"B": _rint(rng, 1, 512), "D": int(rng.choice([4096, 8192])),
                                  "F": int(rng.choice([16384, 32768])),
                                  "X": int(rng.choice([2, 4, 8])),
                                  "YZ": int(rng.choice([8, 16, 32])), "W": 9e10},
             unit="秒", explain="沿 D 切的那部分通信随 X 下降，沿 F 切的随 YZ 下降。"),
    Exercise("7.20b", "n_cross", "number",
             lambda: float(inf.two_d_ws_crossover_chips(8192, 32768)), rtol=0.02, unit="颗",
             explain="超过 72 颗芯片，二维权重驻留的通信就比一维少（原书写 81 是笔误）。"),
    Exercise("7.21", "spec", "numbers", _p721, rtol=0.03, unit="[token, 目标步]",
             explain="每次目标前向平均产出 3.36 个 token，相当于快了约 2.8 倍。"),
]
