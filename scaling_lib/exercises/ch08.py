"""Chapter 8 exercises (spec 08, P8.1-P8.15; P8.16 is a project, a 思考题). Corrected values per
CANON §4 (KV 163,840 B/token for 70B int8, β = 9.1, full-HBM step 16e9/8.2e11 = 19.5 ms). As in
the book, LLaMA 3-70B and 405B use the rounded P = 70e9 and 405e9; the prompts say so.

Expected values are computed from scaling_lib.inference; tests/test_exercises_08.py pins them to
the spec's corrected answers.
"""
from __future__ import annotations

from .. import hardware, inference as inf
from . import Exercise

V5E = "TPU v5e"


def _l70():
    return inf.served_model("llama3-70b", params=70e9)


def _l405():
    return inf.served_model("llama3-405b", params=405e9)


def _p81():
    m = _l70()
    seq = float(inf.kv_bytes_per_seq(m, 32768, "int8"))
    return [inf.kv_bytes_per_token(m, "int8"), seq, 240 * seq,
            inf.min_chips(m, "int8", "int8", 240, 32768)]


def _p82():
    return float(inf.serving_memory(_l70(), 32, 8192, "int8", "int8")["total_bytes"]) / 1e9


_SLICE_CHOICES = {"A": 4, "B": 8, "C": 16, "D": 32}


def _slice_letter(n):
    return next(k for k, v in _SLICE_CHOICES.items() if v == n)


def _p82b():
    return _slice_letter(inf.smallest_slice(inf.min_chips(_l70(), "int8", "int8", 32, 8192)))


def _p83():
    st = inf.decode_step_time(_l70(), 32, 8192, 8, V5E, "int8", "int8")
    return [float(st.total_s) * 1e3, float(st.tokens_per_s), float(st.tokens_per_s_per_chip)]


def _p84():
    return [inf.critical_batch(V5E, w, c) for w, c in (("bf16", "bf16"), ("int8", "bf16"),
                                                      ("int8", "int8"))]


def _p85():
    return [inf.smallest_slice(inf.min_chips(_l70(), d)) for d in ("bf16", "int8", "int4")]


def _p85b():
    m = _l70()
    return inf.max_batch_size(m, 8192, inf.smallest_slice(inf.min_chips(m, "int8")), V5E,
                              "int8", "int8")


def _t_full():
    c = hardware.get(V5E)
    return c.hbm_bytes / c.hbm_bw


def _p86():
    m = _l70()
    int4 = float(inf.decode_step_time(m, 1, 1, 4, V5E, "int4", "int4").param_s)
    return [_t_full() * 1e3, _t_full() * 512, int4 * 1e3]


def _qps(mult):
    m = _l70()
    out = []
    for d in ("bf16", "int8", "int4"):
        n = inf.smallest_slice(inf.min_chips(m, d)) * mult
        b = inf.max_batch_size(m, 8192, n, V5E, d, d)
        mem = inf.serving_memory(m, b, 8192, d, d)
        t = inf.min_step_time(mem["params_bytes"], mem["kv_bytes"] / b, b, n, V5E)
        out.append(float(inf.qps_per_chip(b, t, 512, n)))
    return out


def _p89():
    t = inf.matmul_comm_times(64, 8192, 28672, 32, V5E)
    return [t["t_ici"] * 1e6, t["t_hbm"] * 1e6, t["t_math"] * 1e6]


def _p810():
    return float(inf.prefill_time(_l70(), 8192, 16, V5E, mfu=0.4))


def _p812():
    return float(inf.prefill_decode_ratio(_p810(), _t_full(), 32, 512))


def _p813():
    m = inf.served_model("llama3-405b")
    return [2 * m.params, float(inf.prefill_time(m, 1, 1, V5E)),
            inf.min_step_time(2 * m.params, 0, 1, 1, V5E), inf.min_step_time(m.params, 0, 1, 1, V5E)]


def _p814():
    m = inf.served_model("llama3-8b")
    mem = inf.serving_memory(m, 240, 8192, "int8", "int8")
    st = inf.decode_step_time(m, 240, 8192, 16, V5E, "int8", "int8")
    return [mem["params_bytes"], float(mem["kv_bytes"]), float(st.total_s) * 1e3]


def _p814b():
    m = inf.served_model("llama3-8b")
    return _slice_letter(inf.smallest_slice(inf.min_chips(m, "int8", "int8", 240, 8192)))


def _p815():
    m = _l405()
    best = inf.best_config_under_latency(m, V5E, 8192, 15e-3)
    return [inf.min_step_time(m.params, 0, 1, 64, V5E) * 1e3,
            inf.min_step_time(m.params, 0, 1, 256, V5E) * 1e3, best["tok_s_chip"]]


def _evict_ref(B, P, G):
    return B * (P + G) / G


def _rint(rng, lo, hi):
    return int(rng.integers(lo, hi))


EXERCISES = [
    Exercise("8.1", "kv70", "numbers", _p81, rtol=0.1, unit="[字节, 字节, 字节, 颗]",
             accept=([163840, 5.3e9, 1.29e12, 86],),
             explain="光放下 240 条 32k 的缓存就要 85 颗左右的 v5e。"),
    Exercise("8.2", "total_gb", "number", _p82, rtol=0.03, unit="GB", accept=(111.9,),
             explain="112 GB：8 颗芯片（128 GB）刚好放得下，但很紧。"),
    Exercise("8.2b", "slice_choice", "choice", _p82b, choices=("A", "B", "C", "D"),
             explain="112/16 = 7 颗，向上取整到切片规格就是 4x2。"),
    Exercise("8.3", "decode_4x2", "numbers", _p83, rtol=0.05, unit="[ms, token/s, token/s/芯片]",
             accept=([17.0, 1882, 235],),
             explain="内存带宽受限：换到 4x4 延迟减半，但每芯片吞吐不变。"),
    Exercise("8.4", "b_star", "numbers", _p84, rtol=0.05, unit="token",
             explain="只量化权重会把门槛减半；运算也用 int8 时峰值翻倍，门槛不变。"),
    Exercise("8.5", "min_slices", "numbers", _p85, rtol=0.0, atol=0.0, unit="颗",
             explain="bf16 要 16 颗、int8 要 8 颗、int4 要 4 颗。"),
    Exercise("8.5b", "batch_8k", "number", _p85b, rtol=0.05, unit="条",
             explain="三种类型留给 KV 的 HBM 都只装得下约 43 条 8k 序列。"),
    Exercise("8.6", "full_hbm", "numbers", _p86, rtol=0.05, unit="[ms, s, ms]",
             accept=([19.0, 9.7, 10.7],),
             explain="HBM 装满时每颗芯片每步要读完 16 GB，和数据类型、切片大小都无关。"),
    Exercise("8.7", "qps", "numbers", lambda: _qps(1), rtol=0.05, unit="QPS/芯片",
             accept=([0.27, 0.55, 1.11],),
             explain="批次和步时都一样，QPS/芯片只随芯片数变化。"),
    Exercise("8.8", "qps_doubled", "numbers", lambda: _qps(2), rtol=0.05, unit="QPS/芯片",
             accept=([0.44, 0.90, 1.80],),
             explain="HBM 容量受限时，最小的切片不是最划算的：多出的 HBM 全变成批次。"),
    Exercise("8.9", "mp_times_us", "numbers", _p89, rtol=0.05, unit="µs",
             explain="读权重最慢：4x8 只能降延迟、不能降成本。"),
    Exercise("8.10", "prefill_s", "number", _p810, rtol=0.03, unit="秒",
             explain="8k 提示词的首 token 延迟约 0.9 s。"),
    Exercise("8.11", "evict", "numbers", lambda: [32 / 4096, float(inf.kv_evictions_per_step(32, 8192, 4096))],
             rtol=0.03, unit="[条/步, token/步]",
             explain="每步平均结束不到 0.01 条序列，腾出 96 个 token 的缓存。"),
    Exercise("8.11b", "evictions", "function", _evict_ref, rtol=0.01,
             sampler=lambda rng: {"B": _rint(rng, 1, 512), "P": _rint(rng, 1, 32768),
                                  "G": _rint(rng, 1, 8192)},
             unit="token/步", explain="B/G 条序列结束，每条占 P + G 个 token。"),
    Exercise("8.12", "pd_ratio", "number", _p812, rtol=0.1, unit="", accept=(3.0, 3.9, 4.0),
             explain="约 3 台预填充服务器配 1 台解码服务器（按 B = 43 算约为 4）。"),
    Exercise("8.13", "b405", "numbers", _p813, rtol=0.05, unit="[FLOPs, 秒, 秒, 秒]",
             explain="时间都要再除以芯片数 n：读一遍 bf16 权重在一颗芯片上要约 1 s。"),
    Exercise("8.14", "b8", "numbers", _p814, rtol=0.05, unit="[字节, 字节, ms]",
             explain="小模型配长上下文时 KV 是绝对的大头：读 KV 占了一步的九成。"),
    Exercise("8.14b", "slice8b", "choice", _p814b, choices=("A", "B", "C", "D"),
             explain="137 GB 要 8.6 颗，取 4x4。"),
    Exercise("8.15", "b405_fast", "numbers", _p815, rtol=0.15, unit="[ms, ms, token/s/芯片]",
             explain="8x8 上每芯片约 150 token/s，这已经是饱和值，换更大的切片也不会更高。"),
]
