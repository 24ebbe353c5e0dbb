"""Accelerator catalogue: one frozen ``Chip`` per TPU/GPU the book uses, and ``get(name)``.

Units: SI (FLOPs/s, bytes, bytes/s, seconds, USD per chip-hour).
Book: sec-01-critical-intensity (第1章), sec-02-specs (第2章), sec-12-specs (第12章).
Values follow ../shared/spec/CANON.md §1 (the book's latest text, corrected where the specs flag
an error); each entry names its source. Bandwidth direction is explicit in the field name:
``*_1way`` is per direction, ``ici_bw_bidi`` is both directions of one link (the book's W_ici).
Ignores: clocks/boost variants, sparsity peaks (dense only), thermal throttling.
"""
from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from .units import GiB, MiB, KiB, dtype_bytes, check_positive

__all__ = ["Chip", "CATALOGUE", "get", "names", "critical_intensity", "peak_flops", "detect",
           "measured_cpu_chip"]


@dataclass(frozen=True)
class Chip:
    """One accelerator chip (a TPU chip or one GPU), per-chip numbers, SI units."""

    name: str                      #: display name, e.g. "TPU v5e"
    family: str                    #: "tpu", "gpu" or "cpu"
    flops_per_s: Mapping[str, float]  #: dense peak per arithmetic dtype, e.g. {"bf16": 1.97e14}
    hbm_bytes: float               #: HBM capacity (bytes)
    hbm_bw: float                  #: HBM bandwidth (bytes/s)
    ici_link_bw_1way: float = 0.0  #: TPU ICI: one link, one direction (bytes/s); GPU: 0
    ici_links: int = 0             #: TPU ICI links per chip
    nvlink_bw_1way: float = 0.0    #: GPU NVLink: per GPU, per direction (bytes/s)
    pcie_bw: float = 0.0           #: host link, per direction (bytes/s)
    dcn_bw_1way: float = 0.0       #: TPU DCN egress per chip / GPU NIC per GPU (bytes/s)
    chips_per_host: int = 0        #: chips per host (TPU) or GPUs per node (GPU)
    pod_shape: tuple = ()          #: TPU pod torus shape or GPU NVLink-domain size (tuple)
    cores: int = 1                 #: TensorCores per TPU chip (megacore) / SMs per GPU
    vmem_bytes: float = 0.0        #: TPU VMEM capacity (bytes) where the book gives it
    vmem_bw: float = 0.0           #: TPU VMEM bandwidth (bytes/s) where the book gives it
    l2_bytes: float = 0.0          #: GPU L2 cache (bytes)
    smem_bytes_per_sm: float = 0.0  #: GPU shared memory / L1 per SM (bytes)
    price_per_hour: float | None = None  #: USD per chip-hour, on-demand (Feb 2025 snapshot)
    efficiency: float = 0.95       #: achievable fraction of peak (book: TPU ~0.95, GPU ~0.80-0.85)
    source: str = ""               #: where the numbers come from

    def __post_init__(self):
        if self.family not in ("tpu", "gpu", "cpu"):
            raise ValueError(f"family must be 'tpu', 'gpu' or 'cpu', got {self.family!r}")
        if not self.flops_per_s:
            raise ValueError(f"{self.name}: flops_per_s needs at least one dtype")
        for k, v in self.flops_per_s.items():
            dtype_bytes(k)
            check_positive(f"{self.name} flops_per_s[{k!r}]", v, allow_array=False)
        check_positive(f"{self.name} hbm_bw", self.hbm_bw, allow_array=False)
        check_positive(f"{self.name} hbm_bytes", self.hbm_bytes, allow_array=False)
        object.__setattr__(self, "flops_per_s", MappingProxyType(dict(self.flops_per_s)))

    # -- derived quantities -------------------------------------------------------------
    @property
    def ici_bw_bidi(self) -> float:
        """The book's W_ici: both directions of one ICI link (bytes/s)."""
        return 2 * self.ici_link_bw_1way

    def peak(self, dtype: str = "bf16") -> float:
        """Dense peak FLOPs/s (OPs/s for int8) for arithmetic in ``dtype``."""
        return peak_flops(self, dtype)

    def bandwidth(self, link: str = "hbm") -> float:
        """Bandwidth in bytes/s of ``link``: 'hbm', 'vmem', 'ici' (bidi per link), 'ici_1way',
        'nvlink' (per direction per GPU), 'pcie', 'dcn'."""
        table = {"hbm": self.hbm_bw, "vmem": self.vmem_bw, "ici": self.ici_bw_bidi,
                 "ici_1way": self.ici_link_bw_1way, "nvlink": self.nvlink_bw_1way,
                 "pcie": self.pcie_bw, "dcn": self.dcn_bw_1way}
        if link not in table:
            raise ValueError(f"unknown link {link!r}; allowed: {', '.join(table)}")
        bw = table[link]
        if not bw:
            raise ValueError(f"{self.name} has no {link!r} bandwidth in the catalogue")
        return bw

    def critical_intensity(self, dtype: str = "bf16", link: str = "hbm") -> float:
        """C / W in FLOPs per byte. Book: eq-01-icrit."""
        return critical_intensity(self, dtype=dtype, link=link)

    def __str__(self) -> str:  # short Chinese card
        from .units import fmt_bytes, fmt_bw, fmt_rate
        peaks = "，".join(f"{k} {fmt_rate(v)}" for k, v in self.flops_per_s.items())
        return (f"{self.name}：{peaks}；HBM {fmt_bytes(self.hbm_bytes)}，"
                f"{fmt_bw(self.hbm_bw)}")


def _tpu(name, bf16, hbm, hbm_bw, link1, links, **kw):
    flops = {"bf16": bf16}
    flops.update(kw.pop("extra_flops", {}))
    return Chip(name=name, family="tpu", flops_per_s=flops, hbm_bytes=hbm, hbm_bw=hbm_bw,
                ici_link_bw_1way=link1, ici_links=links, **kw)


def _gpu(name, bf16, hbm, hbm_bw, nvl, **kw):
    flops = {"bf16": bf16}
    flops.update(kw.pop("extra_flops", {}))
    kw.setdefault("efficiency", 0.8)
    return Chip(name=name, family="gpu", flops_per_s=flops, hbm_bytes=hbm, hbm_bw=hbm_bw,
                nvlink_bw_1way=nvl, **kw)


_CHIPS = [
    # ---- TPUs (CANON §1.1) ------------------------------------------------------------
    _tpu("TPU v3", 1.4e14, 32e9, 9.0e11, 1e11, 4, extra_flops={"int8": 1.4e14},
         pcie_bw=1.6e10, chips_per_host=4, pod_shape=(32, 32), cores=2,
         source="book ch.2 table (vendor quotes 1.23e14 bf16; CANON D15)"),
    _tpu("TPU v4p", 2.75e14, 32e9, 1.2e12, 4.5e10, 6, extra_flops={"int8": 2.75e14},
         pcie_bw=1.6e10, chips_per_host=4, pod_shape=(16, 16, 16), cores=2,
         source="book ch.2 table; vendor 1200 GB/s HBM"),
    _tpu("TPU v5e", 1.97e14, 16e9, 8.2e11, 4.5e10, 4, extra_flops={"int8": 3.94e14},
         pcie_bw=1.6e10, dcn_bw_1way=3.125e9, chips_per_host=8, pod_shape=(16, 16), cores=1,
         vmem_bytes=128 * MiB, vmem_bw=22 * 8.2e11, price_per_hour=1.2,
         source="book ch.1-2 (L text): 197 TF bf16, 394 TOPs int8, 819 GB/s HBM; GCP Feb 2025"),
    _tpu("TPU v5p", 4.59e14, 96e9, 2.8e12, 9e10, 6, extra_flops={"int8": 9.18e14, "fp8": 4.59e14},
         pcie_bw=1.6e10, dcn_bw_1way=6.25e9, chips_per_host=4, pod_shape=(16, 20, 28), cores=2,
         price_per_hour=4.2,
         source="book ch.2 table; vendor 459 TF, 2765 GB/s (95 GB); GCP Feb 2025"),
    _tpu("TPU v6e", 9.2e14, 32e9, 1.6e12, 9e10, 4, extra_flops={"int8": 1.84e15},
         pcie_bw=3.2e10, dcn_bw_1way=1.25e10, chips_per_host=8, pod_shape=(16, 16), cores=1,
         source="book ch.2 table 9.2e14 (ch.1 text's 9.1e14 is a slip; vendor 918 TF; CANON D4)"),
    _tpu("TPU7x", 2.30e15, 192e9, 7.4e12, 9e10, 4, extra_flops={"fp8": 4.61e15},
         pcie_bw=1.6e10, dcn_bw_1way=1.25e10, chips_per_host=4, pod_shape=(4, 4, 576), cores=2,
         source="book L ch.2 (Ironwood); 8-bit peak is FP8 per vendor (CANON D16); links/chip "
                "not stated, 4 assumed"),
    # ---- GPUs (CANON §1.2; NVLink per GPU per direction) --------------------------------
    _gpu("V100", 1.25e14, 32e9, 9.0e11, 1.5e11, extra_flops={"f16": 1.25e14},
         chips_per_host=8, cores=80, l2_bytes=6e6, smem_bytes_per_sm=96e3,
         source="vendor: no bf16, value is the fp16 tensor-core peak; NVLink2 6x25 GB/s"),
    _gpu("A100", 3.1e14, 80e9, 2.0e12, 3.0e11, extra_flops={"int8": 6.2e14},
         chips_per_host=8, pod_shape=(8,), cores=108, l2_bytes=40e6, smem_bytes_per_sm=192e3,
         source="vendor SXM 80GB: 312 TF bf16 dense, 2.0 TB/s, NVLink3 12x25 GB/s"),
    _gpu("H100", 9.89e14, 80e9, 3.35e12, 4.5e11,
         extra_flops={"fp8": 1.979e15, "int8": 1.979e15},
         dcn_bw_1way=5e10, chips_per_host=8, pod_shape=(8,), cores=132, l2_bytes=50e6,
         smem_bytes_per_sm=256e3, price_per_hour=10.8,
         source="vendor SXM: 1.979e15 bf16 with sparsity / 2; 3.35 TB/s; NVLink4 18x25 GB/s; "
                "GCP Feb 2025"),
    _gpu("H200", 9.89e14, 141e9, 4.8e12, 4.5e11,
         extra_flops={"fp8": 1.979e15, "int8": 1.979e15},
         dcn_bw_1way=5e10, chips_per_host=8, pod_shape=(8,), cores=132, l2_bytes=50e6,
         smem_bytes_per_sm=256e3,
         source="vendor SXM: same compute as H100, 141 GB HBM3e at 4.8 TB/s"),
    _gpu("H800", 9.89e14, 80e9, 3.35e12, 2e11,
         extra_flops={"fp8": 1.979e15},
         dcn_bw_1way=5e10, chips_per_host=8, pod_shape=(8,), cores=132, l2_bytes=50e6,
         smem_bytes_per_sm=256e3,
         source="H100 export variant: NVLink cut to 400 GB/s bidi (CANON D27-D28); HBM as H100 "
                "(assumed, not in specs)"),
    _gpu("B200", 2.25e15, 192e9, 8.0e12, 9.0e11,
         extra_flops={"fp8": 4.5e15, "int8": 4.5e15, "fp4": 9.0e15},
         dcn_bw_1way=5e10, chips_per_host=8, pod_shape=(8,), cores=148, l2_bytes=126e6,
         smem_bytes_per_sm=256e3,
         source="vendor HGX B200: 2.25 PF bf16 dense, 8 TB/s, NVLink5 18x50 GB/s (CANON D23)"),
    _gpu("GB200", 2.25e15, 192e9, 8.0e12, 9.0e11,
         extra_flops={"fp8": 4.5e15, "fp4": 9.0e15},
         dcn_bw_1way=5e10, chips_per_host=4, pod_shape=(72,), cores=148, l2_bytes=126e6,
         smem_bytes_per_sm=256e3,
         source="GB200 NVL72 as used by the book (2.25e15 bf16; vendor ~2.5e15, CANON §5.12)"),
]

CATALOGUE: Mapping[str, Chip] = MappingProxyType({c.name: c for c in _CHIPS})

_ALIASES = {"v3": "TPU v3", "v4": "TPU v4p", "v4p": "TPU v4p", "tpu v4": "TPU v4p",
            "v5e": "TPU v5e", "v5 lite": "TPU v5e", "v5litepod": "TPU v5e", "tpu v5 lite": "TPU v5e",
            "v5p": "TPU v5p", "v6e": "TPU v6e", "trillium": "TPU v6e", "tpu v6 lite": "TPU v6e",
            "v7": "TPU7x", "tpu v7": "TPU7x", "ironwood": "TPU7x", "tpu7x": "TPU7x",
            "h100 sxm": "H100", "h200 sxm": "H200", "nvidia h100": "H100", "nvidia h200": "H200",
            "nvidia b200": "B200", "nvidia a100": "A100", "gb200 nvl72": "GB200"}


def _norm(s: str) -> str:
    return " ".join(s.lower().replace("_", " ").replace("-", " ").split())


def names() -> list[str]:
    """All catalogue names, in catalogue order."""
    return list(CATALOGUE)


def get(name) -> Chip:
    """Look a chip up by name, case-insensitively ('v5e', 'TPU v5e', 'h100' ...).

    A ``Chip`` passes through unchanged. Unknown names raise ``KeyError`` with near matches.
    """
    if isinstance(name, Chip):
        return name
    if not isinstance(name, str):
        raise TypeError(f"chip must be a name (str) or a Chip, got {type(name).__name__} {name!r}")
    key = _norm(name)
    by_norm = {_norm(n): n for n in CATALOGUE}
    by_norm.update({_norm(a): n for a, n in _ALIASES.items()})
    if key in by_norm:
        return CATALOGUE[by_norm[key]]
    if key.startswith("tpu ") and key[4:] in by_norm:
        return CATALOGUE[by_norm[key[4:]]]
    close = difflib.get_close_matches(key, list(by_norm), n=4, cutoff=0.4)
    suggestions = sorted({by_norm[c] for c in close})
    hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
    raise KeyError(f"unknown chip {name!r}{hint} Known chips: {', '.join(CATALOGUE)}")


def peak_flops(chip, dtype: str = "bf16") -> float:
    """Dense peak FLOPs/s of ``chip`` for arithmetic in ``dtype``. Book: sec-01-time."""
    chip = get(chip)
    dtype_bytes(dtype)
    key = {"bfloat16": "bf16", "float32": "f32", "fp32": "f32", "i8": "int8",
           "float16": "f16", "fp16": "f16"}.get(dtype.lower(), dtype.lower())
    if key not in chip.flops_per_s:
        raise ValueError(f"{chip.name} has no {dtype!r} peak in the catalogue; "
                         f"it has: {', '.join(chip.flops_per_s)}")
    return chip.flops_per_s[key]


def critical_intensity(chip, dtype: str = "bf16", link: str = "hbm") -> float:
    """Critical arithmetic intensity C/W (FLOPs per byte). Book: eq-01-icrit."""
    chip = get(chip)
    return peak_flops(chip, dtype) / chip.bandwidth(link)


def measured_cpu_chip(peak_f32: float, bandwidth: float, name: str = "本机 CPU（实测）") -> Chip:
    """A ``Chip`` for the reader's own CPU, built from measured peak and bandwidth."""
    check_positive("peak_f32", peak_f32, allow_array=False)
    check_positive("bandwidth", bandwidth, allow_array=False)
    return Chip(name=name, family="cpu", flops_per_s={"f32": peak_f32, "bf16": peak_f32},
                hbm_bytes=1e9, hbm_bw=bandwidth, efficiency=1.0,
                source="measured in this notebook")


_KIND_PATTERNS = [("v5 lite", "TPU v5e"), ("v5e", "TPU v5e"), ("v6 lite", "TPU v6e"), ("v6e", "TPU v6e"),
                  ("v5p", "TPU v5p"), ("v5", "TPU v5p"), ("v4", "TPU v4p"), ("v3", "TPU v3"),
                  ("7x", "TPU7x"), ("h100", "H100"), ("h200", "H200"), ("h800", "H800"),
                  ("gb200", "GB200"), ("b200", "B200"), ("a100", "A100"), ("v100", "V100")]


def chip_from_device_kind(kind: str) -> Chip | None:
    """Map a JAX ``device_kind`` string ('TPU v5 lite', 'NVIDIA H200') to a catalogue chip."""
    k = kind.lower()
    for pat, nm in _KIND_PATTERNS:
        if pat in k:
            return CATALOGUE[nm]
    return None


def detect() -> Chip | None:
    """The catalogue chip JAX runs on, or None on a CPU. Imports jax (call it after setup)."""
    import jax
    dev = jax.devices()[0]
    if dev.platform == "cpu":
        return None
    return chip_from_device_kind(getattr(dev, "device_kind", ""))


def replace(chip, **changes) -> Chip:
    """A modified copy of ``chip`` (e.g. a what-if with more bandwidth)."""
    chip = get(chip)
    allowed = {f.name for f in dataclasses.fields(Chip)}
    bad = set(changes) - allowed
    if bad:
        raise ValueError(f"unknown Chip field(s) {sorted(bad)}; allowed: {sorted(allowed)}")
    return dataclasses.replace(chip, **changes)
