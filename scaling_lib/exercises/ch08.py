"""Chapter 8 exercises (spec 08, P8.1-P8.15; P8.16 is a project, a 思考题).

The chapter serves LLaMA 3 70B (and 8B, 405B) on TPU v5e slices (16 GB, 8.2e11 B/s). Every
exercise here asks the same questions on TPU v6e slices (32 GB, 1.6e12 B/s, 9.2e14 bf16) and with
other context lengths and batches, so no expected value is a number the chapter prints
(tests/test_exercises.py checks it). As in the book, LLaMA 3 70B and 405B use the rounded
P = 70e9 and 405e9; the prompts say so. Each exercise declares its likely slips; the choice items
ask which resource binds and what a bigger slice buys, and why.

Per-student numbers (``params``, see scaling_lib.exercises): the context and batch of 8.1, the batch
of 8.2/8.2b/8.3, the context of 8.5b, the tokens generated in 8.6 and 8.7/8.8, the batch of 8.9,
the prompt of 8.10 (and so of 8.12), the request of 8.11, the decode batch of 8.12 and the batch and
context of 8.14/8.14b. The chips, the models (70B, 8B, 405B) and the slice sizes stay the book's.
"""
from __future__ import annotations

from .. import hardware, inference as inf
from . import Exercise, Param, Slip

V6E, V5E = "TPU v6e", "TPU v5e"
S81, B81 = 18432, 96          # 8.1: context and batch
B82, S82 = 64, 8192           # 8.2, 8.3: batch and context
S85 = 6144                    # 8.5b: context
HBM6, W6 = 32e9, 1.6e12

# grids: the book's method stays valid for every value: 8.2's configuration fits 4x2 (8.3) and its
# total is never within 10% of a slice's HBM (8.2b: 128 GB -> A, 145-220 GB -> B); 8.9's HBM term
# stays the largest; 8.14's total stays between 37 and 111 GB (2x2, as 8.14b asks); 8.5b's count is
# never within 0.03 of an integer; 8.11's G >= P/16, so forgetting G is > 3% off; no drawn answer is a
# number chapters 4, 7 and 8 print (tests/test_exercises.py; the values that did were taken out)
KV81 = {"S81": Param(18432, (6144, 10240, 12288, 14336, 20480, 24576, 28672), "18,432"),
        "B81": Param(96, (32, 48, 64, 80, 112, 128))}
B82P = {"B82": Param(64, (16, 20, 24, 56, 72, 80, 96, 112))}
S85P = {"S85": Param(6144, (2048, 3072, 3584, 4608, 7680, 9216, 12288, 14336))}
G86 = {"G86": Param(512, (128, 256, 384, 768, 1024, 1536, 2048, 4096))}
G87 = {"G87": Param(512, (128, 256, 384, 768, 1024, 1536, 2048))}
B89 = {"B89": Param(64, (16, 24, 32, 40, 48, 80, 96, 128))}
T810 = {"T810": Param(8192, (2048, 3072, 4096, 6144, 10240, 12288, 20480, 24576))}
REQ11 = {"P11": Param(8192, (2048, 4096, 6144, 12288, 16384)), "G11": Param(2048, (1024, 1536, 3072, 4096)),
         "B11": Param(64, (32, 48, 96, 128))}
B12 = {"B12": Param(64, (32, 48, 80, 96, 112, 160))}
RUN14 = {"B14": Param(192, (144, 160, 176, 208, 224, 240)), "S14": Param(4096, (3072, 5120, 6144))}


def _l70():
    return inf.served_model("llama3-70b", params=70e9)


def _l405():
    return inf.served_model("llama3-405b", params=405e9)


def _p81(S81=S81, B81=B81, kv="bf16", chip=V6E):
    m = _l70()
    seq = float(inf.kv_bytes_per_seq(m, S81, kv))
    return [seq, B81 * seq, float(inf.min_chips(m, "int8", kv, B81, S81, chip=chip))]


def _p82(B82=B82, weights="int8", kv="int8"):
    return float(inf.serving_memory(_l70(), B82, S82, weights, kv)["total_bytes"]) / 1e9


_SLICE_CHOICES = {"A": 4, "B": 8, "C": 16, "D": 32}


def _slice_letter(n):
    return next(k for k, v in _SLICE_CHOICES.items() if v == n)


def _p82b(B82=B82):
    return _slice_letter(inf.smallest_slice(inf.min_chips(_l70(), "int8", "int8", B82, S82, chip=V6E)))


def _why82b(letter):
    def f(B82):
        gb, need = _p82(B82), _p82(B82) / 32
        if letter == "A":
            return (f"4 颗 v6e 只有 128 GB，装不下约 {gb:.0f} GB。" if gb > 128 else
                    f"4 颗（128 GB）就装得下约 {gb:.0f} GB，这题选的正是它。")
        n = _SLICE_CHOICES[letter]
        return (f"{n} 颗装得下，但约 {gb:.0f} GB 只要 {need:.1f} 颗的 HBM：最小的能装下的切片更便宜，"
                "多的 HBM 可以换成批次（见 8.8）。")
    return f


def _p83(B82=B82, n=8, chip=V6E):
    st = inf.decode_step_time(_l70(), B82, S82, n, chip, "int8", "int8", check_memory=chip == V6E and n == 8)
    return [float(st.total_s) * 1e3, float(st.tokens_per_s), float(st.tokens_per_s_per_chip)]


def _p84():
    return [inf.critical_batch(V6E, w, c) for w, c in (("bf16", "bf16"), ("int8", "bf16"), ("int8", "int8"))]


def _p85(hbm=HBM6):
    return [inf.smallest_slice(inf.min_chips(_l70(), d, hbm_per_chip=hbm)) for d in ("bf16", "int8", "int4")]


def _p85b(S85=S85, n=4, kv="int8"):
    return inf.max_batch_size(_l70(), S85, n, V6E, "int8", kv)


def _t_full(chip=V6E):
    c = hardware.get(chip)
    return c.hbm_bytes / c.hbm_bw


def _p86(G86=512, chip="TPU v5p"):
    return [_t_full(chip) * 1e3, _t_full(chip) * G86]


def _qps(mult, chip=V6E, G87=512):
    m = _l70()
    out = []
    for d in ("bf16", "int8", "int4"):
        n = inf.smallest_slice(inf.min_chips(m, d, chip=chip)) * mult
        b = inf.max_batch_size(m, 8192, n, chip, d, d)
        mem = inf.serving_memory(m, b, 8192, d, d)
        t = inf.min_step_time(mem["params_bytes"], mem["kv_bytes"] / b, b, n, chip)
        out.append(float(inf.qps_per_chip(b, t, G87, n)))
    return out


def _p89(B89=64, chip=V6E):
    t = inf.matmul_comm_times(B89, 8192, 28672, 16, chip)
    return [t["t_ici"] * 1e6, t["t_hbm"] * 1e6, t["t_math"] * 1e6]


def _p810(T810=8192, mfu=0.4, n=8):
    return float(inf.prefill_time(_l70(), T810, n, V6E, mfu=mfu))


def _p812(T810=8192, B12=64, mfu=0.4):
    return float(inf.prefill_decode_ratio(_p810(T810, mfu), _t_full(), B12, 1024))


def _p813(chip=V6E):
    m = inf.served_model("llama3-405b")
    return [float(inf.prefill_time(m, 1, 1, chip)),
            inf.min_step_time(2 * m.params, 0, 1, 1, chip), inf.min_step_time(m.params, 0, 1, 1, chip)]


def _p814(B14=192, S14=4096, kv="int8"):
    m = inf.served_model("llama3-8b")
    mem = inf.serving_memory(m, B14, S14, "int8", kv)
    st = inf.decode_step_time(m, B14, S14, 4, V6E, "int8", kv, check_memory=kv == "int8")
    return [float(mem["kv_bytes"]), float(st.total_s) * 1e3]


def _p814b(B14=192, S14=4096):
    m = inf.served_model("llama3-8b")
    return _slice_letter(inf.smallest_slice(inf.min_chips(m, "int8", "int8", B14, S14, chip=V6E)))


def _gb814(B14, S14):
    return (8.03e9 + B14 * S14 * 2 * 32 * 8 * 128) / 1e9


def _evict_ref(B, P, G):
    return B * (P + G) / G


def _rint(rng, lo, hi):
    return int(rng.integers(lo, hi))


EXERCISES = [
    Exercise("8.1", "kv70", "numbers", _p81, rtol=0.03, unit="[字节, 字节, 颗]", params=KV81,
             labels=("每条序列", "整批", "最少芯片数"),
             slips=(Slip("KV 按 int8 算了：这道题的 KV 缓存是 bf16，每个元素 2 字节。",
                         lambda S81, B81: _p81(S81, B81, kv="int8")),
                    Slip("芯片数按 v5e 的 16 GB 算了：v6e 每颗 32 GB。", lambda S81, B81: _p81(S81, B81, chip=V5E))),
             explain=lambda S81, B81: (lambda r: f"bf16 的缓存每条约 {r[0] / 1e9:.1f} GB：{B81} 条加上权重要约 "
                                                 f"{r[2]:.0f} 颗 v6e 的 HBM，长上下文时 KV 远比权重大。")(
                 _p81(S81, B81))),
    Exercise("8.2", "total_gb", "number", _p82, rtol=0.03, unit="GB", params=B82P,
             slips=(Slip("KV 按 bf16 算了：题目说 KV 缓存是 int8。", lambda B82: _p82(B82, kv="bf16")),
                    Slip("权重按 bf16 算了：题目说权重是 int8，700 亿参数 70 GB。",
                         lambda B82: _p82(B82, weights="bf16"))),
             explain=lambda B82: f"权重 70 GB 加 {B82} 条 8k 的 int8 缓存约 {_p82(B82) - 70:.0f} GB：共约 {_p82(B82):.0f} GB。"),
    Exercise("8.2b", "slice_choice", "choice", _p82b, choices=("A", "B", "C", "D"), params=B82P,
             why={"A": _why82b("A"), "B": _why82b("B"), "C": _why82b("C"), "D": _why82b("D")},
             explain=lambda B82: (f"{_p82(B82):.0f} GB / 32 GB ≈ {_p82(B82) / 32:.1f} 颗，向上取整到切片规格就是 "
                                  f"{_SLICE_CHOICES[_p82b(B82)]} 颗。")),
    Exercise("8.3", "decode_v6e", "numbers", _p83, rtol=0.03, unit="[ms, token/s, token/s/芯片]", params=B82P,
             labels=("每步 ms", "token/s", "token/s/芯片"),
             slips=(Slip("用了 v5e 的 HBM 带宽：v6e 每颗 1.6e12 B/s。", lambda B82: _p83(B82, chip=V5E)),
                    Slip("按 4 颗芯片算了：这道题是 8 颗。", lambda B82: _p83(B82, n=4))),
             explain=lambda B82: (f"内存带宽受限：一步要把 70 GB 权重和约 {_p82(B82) - 70:.0f} GB 缓存从 8 颗芯片的 "
                                  "HBM 读一遍。")),
    Exercise("8.3b", "bigger_slice", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             why={"B": "每芯片吞吐不变：每颗芯片每步读的字节减半、时间减半，批次没变，每颗产出的 token/s 一样。",
                  "C": "延迟会减半：带宽受限时每步时间 = 每颗芯片要读的字节 ÷ 它的 HBM 带宽，芯片翻倍，这个数减半。",
                  "D": "批次和总字节都没变，芯片多了一倍、每步快了一倍：每芯片吞吐不变，不会减半。"},
             explain="带宽受限时加芯片只换延迟：每步时间减半，每芯片吞吐不变（忽略 ICI）。"),
    Exercise("8.4", "b_star", "numbers", _p84, rtol=0.03, unit="token",
             labels=("bf16 权重、bf16 运算", "int8 权重、bf16 运算", "int8 权重、int8 运算"),
             slips=(Slip("用了 v5e 的 C/W ≈ 240：v6e 是 9.2e14 / 1.6e12 = 575。",
                         lambda: [inf.critical_batch(V5E, w, c) for w, c in
                                  (("bf16", "bf16"), ("int8", "bf16"), ("int8", "int8"))]),
                    Slip("int8 运算时门槛没有回到原值：权重字节减半、峰值也翻倍，两者抵消。",
                         lambda: [575.0, 287.5, 287.5])),
             explain="只量化权重会把门槛减半；运算也用 int8 时峰值翻倍，门槛不变。"),
    Exercise("8.5", "min_slices", "numbers", _p85, rtol=0.0, atol=0.0, unit="颗",
             labels=("bf16", "int8", "int4"),
             slips=(Slip("按 v5e 的 16 GB 算了：v6e 每颗 32 GB。", lambda: _p85(hbm=16e9)),
                    Slip("没有取到切片规格：切片只有 1、4、8、16……颗，2 颗或 5 颗的切片没有。",
                         lambda: [5, 3, 2])),
             explain="bf16 要 8 颗、int8 要 4 颗、int4 也要 4 颗（没有 2 颗的切片）。"),
    Exercise("8.5b", "batch_6k", "number", _p85b, rtol=0.03, unit="条", params=S85P,
             slips=(Slip("忘了先扣掉 70 GB 的权重。",
                         lambda S85: 4 * HBM6 / float(inf.kv_bytes_per_seq(_l70(), S85, "int8"))),
                    Slip("KV 按 bf16 算了：题目说 int8。", lambda S85: _p85b(S85, kv="bf16"))),
             explain=lambda S85: (f"4 颗 v6e 扣掉权重还剩 58 GB，每条 {S85} token 的 int8 缓存约 "
                                  f"{S85 * 163840 / 1e9:.2f} GB。")),
    Exercise("8.6", "full_hbm", "numbers", _p86, rtol=0.02, unit="[ms, s]", labels=("每步 ms", "全部步 s"),
             params=G86,
             slips=(Slip("用了 v6e 的数（32 GB / 1.6e12 B/s）：这道题是 v5p，96 GB / 2.8e12 B/s。",
                         lambda G86: _p86(G86, V6E)),
                    Slip("用了 v5e 的数（16 GB / 8.2e11 B/s）：这道题是 v5p，96 GB / 2.8e12 B/s。",
                         lambda G86: _p86(G86, V5E))),
             explain="HBM 装满时每颗芯片每步要读完 96 GB：约 34 ms，和数据类型、切片大小都无关。"),
    Exercise("8.6b", "full_hbm_why", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             why={"B": "加芯片时每颗芯片的 HBM 照样装满（批次跟着加），每颗要读的字节不变：时间不变。",
                  "C": "换成 int8 后同样的 HBM 装下更多 token，每颗芯片读的字节还是 32 GB。",
                  "D": "批次远低于门槛时是带宽受限，算力不是瓶颈。"},
             explain="每颗芯片每步读一遍自己 HBM 里的东西：32 GB ÷ 1.6e12 B/s。"),
    Exercise("8.7", "qps", "numbers", lambda G87: _qps(1, G87=G87), rtol=0.03, unit="QPS/芯片",
             labels=("bf16", "int8", "int4"), params=G87,
             slips=(Slip("用了 v5e 的数：这道题是 v6e。", lambda G87: _qps(1, V5E, G87)),),
             explain="批次由剩下的 HBM 决定，步时由装满的 HBM 决定：QPS/芯片随切片和数据类型变化。"),
    Exercise("8.8", "qps_doubled", "numbers", lambda G87: _qps(2, G87=G87), rtol=0.03, unit="QPS/芯片",
             labels=("bf16", "int8", "int4"), params=G87,
             slips=(Slip("用了 v5e 的数：这道题是 v6e。", lambda G87: _qps(2, V5E, G87)),
                    Slip("这是最小切片时的数（8.7）：切片翻倍后批次也变了。", lambda G87: _qps(1, G87=G87))),
             explain="HBM 容量受限时，最小的切片不是最划算的：多出的 HBM 全变成批次。"),
    Exercise("8.8b", "why_bigger", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "解码是带宽受限的，多出的 FLOPs 用不上。",
                  "C": "ICI 在这个模型里不是瓶颈；切片变大时 ICI 的流量还略多。",
                  "D": "芯片翻倍时每步时间几乎不变（每颗的 HBM 仍装满），不是延迟在变。"},
             explain="权重只占一份：芯片翻倍后，多出的 HBM 全部装 KV，批次增长超过一倍。"),
    Exercise("8.9", "mp_times_us", "numbers", _p89, rtol=0.03, unit="µs", labels=("ICI", "HBM", "计算"),
             params=B89,
             slips=(Slip("用了 v5e 的数：这道题是 v6e（链路 9e10 B/s、HBM 1.6e12 B/s、9.2e14 FLOPs/s）。",
                         lambda B89: _p89(B89, V5E)),),
             explain="读权重最慢：切成 16 份只能降延迟、不能降成本。"),
    Exercise("8.10", "prefill_s", "number", _p810, rtol=0.03, unit="秒", params=T810,
             slips=(Slip("忘了除以 MFU 0.4。", lambda T810: _p810(T810, mfu=1.0)),
                    Slip("按一颗芯片算了：预填充分到 8 颗芯片上。", lambda T810: _p810(T810, n=1))),
             explain=lambda T810: f"{T810} token 的提示词在 8 颗 v6e 上的首 token 延迟约 {_p810(T810):.2f} s。"),
    Exercise("8.11", "evict", "numbers",
             lambda P11, G11, B11: [B11 / G11, float(inf.kv_evictions_per_step(B11, P11, G11))], rtol=0.03,
             unit="[条/步, token/步]", labels=("条/步", "token/步"), params=REQ11,
             slips=(Slip("只算了提示词：结束的序列要腾出提示词加生成的全部 P + G 个 token。",
                         lambda P11, G11, B11: [B11 / G11, B11 / G11 * P11]),),
             explain=lambda P11, G11, B11: (f"每步平均结束 {B11 / G11:.3g} 条序列，腾出约 "
                                            f"{B11 / G11 * (P11 + G11):.0f} 个 token 的缓存。")),
    Exercise("8.11b", "evictions", "function", _evict_ref, rtol=0.01,
             sampler=lambda rng: {"B": _rint(rng, 1, 512), "P": _rint(rng, 1, 32768), "G": _rint(rng, 1, 8192)},
             edge_cases=({"B": 1, "P": 1, "G": 1}, {"B": 64, "P": 8192, "G": 1}, {"B": 512, "P": 1, "G": 8192}),
             unit="token/步",
             slips=(Slip("只算了提示词 P：生成的 G 个 token 也在缓存里。", lambda B, P, G: B * P / G),
                    Slip("每步结束的序列数是 B/G，不是 B：每条序列要 G 步才生成完。", lambda B, P, G: B * (P + G))),
             explain="B/G 条序列结束，每条占 P + G 个 token。"),
    Exercise("8.12", "pd_ratio", "number", _p812, rtol=0.05, unit="", params={**T810, **B12},
             slips=(Slip("预填充没有除以 MFU 0.4：用了峰值下的时间。",
                         lambda T810, B12: _p812(T810, B12, mfu=1.0)),),
             explain="预填充一条 8k 提示词的时间，对比解码 1024 个 token 时摊到每条序列的时间。"),
    Exercise("8.12b", "longer_prompts", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             why={"B": "提示词变长，预填充更慢，要更多而不是更少的预填充服务器。",
                  "C": "预填充时间正比于提示词长度（计算受限），比值跟着变。",
                  "D": "这里的预填充时间按 2·P·token 算，不含注意力的 T² 项：它随长度线性增长。"},
             explain="预填充时间 ∝ 提示词长度，解码不变：比值翻倍。"),
    Exercise("8.13", "b405", "numbers", _p813, rtol=0.03, unit="[秒, 秒, 秒]",
             labels=("预填充 1 token", "bf16 读权重", "int8 读权重"),
             slips=(Slip("用了 v5e 的数：这道题是 v6e。", lambda: _p813(V5E)),),
             explain="时间都要再除以芯片数 n：读一遍 bf16 权重在一颗 v6e 上要约 0.5 s。"),
    Exercise("8.14", "b8", "numbers", _p814, rtol=0.03, unit="[字节, ms]", params=RUN14,
             labels=("KV 字节", "每步 ms"),
             slips=(Slip("KV 按 bf16 算了：题目说 int8。", lambda B14, S14: _p814(B14, S14, kv="bf16")),),
             explain="小模型配大批次时 KV 是绝对的大头：读 KV 占了一步的大部分。"),
    Exercise("8.14b", "slice8b", "choice", _p814b, choices=("A", "B", "C", "D"), params=RUN14,
             why={"B": "8 颗装得下，但 4 颗（128 GB）已经够：最小的能装下的切片。",
                  "C": "16 颗远超需要。",
                  "D": "32 颗远超需要。"},
             explain=lambda B14, S14: (f"约 {_gb814(B14, S14):.0f} GB 要 {_gb814(B14, S14) / 32:.1f} 颗 v6e 的 HBM，"
                                       "没有 2 颗或 3 颗的切片，取 4 颗。")),
]
