"""Chapter 0 warm-ups (spec 00, P0.1-P0.3; ours, not from the original book)."""
from __future__ import annotations

from .. import hardware
from . import Exercise


def _p01():
    return 6e21 / (1000 * hardware.peak_flops("v5p") * 0.5)


def _p03():
    # int8[128, 2048] sharded A[I_XY, J] on mesh X=2, Y=8, Z=2 (replicated over Z)
    local = (128 // (2 * 8)) * 2048
    return [local * 1, local * 1 * (2 * 8 * 2)]


EXERCISES = [
    Exercise("0.1", "t_job", "number", _p01, rtol=0.03, unit="秒",
             hints=((1 / 3600, "看起来像是小时：这里要秒。"),),
             explain="约 2.6e4 秒，也就是 7 个多小时。"),
    Exercise("0.2", "scaling", "numbers", lambda: [100 / 8, 100 / 8 / 16], rtol=0.02,
             unit="[加速比, 扩展效率]",
             explain="16 颗芯片只快了 12.5 倍：扩展效率约 78%，剩下的时间多半花在通信上。"),
    Exercise("0.3", "sharded_bytes", "numbers", _p03, rtol=0.0, atol=0.5,
             unit="[每设备字节, 所有设备合计字节]",
             explain="每个设备 16,384 字节；沿 Z 复制了 2 份，合计 524,288 字节（512 KiB）。"),
]
