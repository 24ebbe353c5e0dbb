"""Accelerator catalogue: one frozen ``Chip`` per TPU/GPU the book uses, and ``get(name)``.

Units: SI (FLOPs/s, bytes, bytes/s, seconds, USD per chip-hour).
Book: sec-01-intensity (第1章), sec-02-specs (第2章), sec-12-specs (第12章).
Values follow ../shared/spec/CANON.md §1 (the book's latest text, corrected where the specs flag
an error); each entry names its source. Bandwidth direction is explicit in the field name:
``*_1way`` is per direction, ``ici_bw_bidi`` is both directions of one link (the book's W_ici).
Chapter 2 (TPU internals: MXU size and count, clock, VMEM, VREGs, VPU ALUs, host/pod shapes) and
chapter 12 (GPU internals: SMs, subpartitions, fp32 lanes, registers, SMEM, TMEM, L2, clocks,
NVLink links/generation/switches, NICs, node shapes) extend the card; every field defaults to
"not given" (0, None or ()) so a chip only carries what a spec states. ``get(name, variant=...)``
also serves the vendor-nominal ("vendor") and Feb-2025 mirror ("m") variants of the TPU table for
the history side notes of chapter 2.
Ignores: boost/throttle dynamics (clocks are single numbers), sparsity peaks (dense only).
"""
from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from .units import GiB, MiB, KiB, dtype_bytes, check_positive

__all__ = ["Chip", "CATALOGUE", "VARIANTS", "get", "names", "tpu_names", "gpu_names",
           "critical_intensity", "peak_flops", "detect", "measured_cpu_chip", "replace",
           "PodSummary", "pod_summary", "flops_per_usd", "node_egress_bw", "gbps_to_bytes_per_s",
           "spec_table", "SpecTable", "require", "network_axes", "check_n_axes", "max_mx_my"]


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
    smem_bytes_per_sm: float = 0.0  #: GPU shared memory / L1 per SM (bytes; NVIDIA's "KB" are KiB)
    price_per_hour: float | None = None  #: USD per chip-hour, on-demand (Feb 2025 snapshot)
    efficiency: float = 0.95       #: achievable fraction of peak (book: TPU ~0.95, GPU ~0.80-0.85)
    source: str = ""               #: where the numbers come from
    # ---- chip internals (ch. 2 TPU / ch. 12 GPU); 0 / None / () = not given by the specs ---------
    generation: str = ""           #: "Volta", "Hopper", ... / "Trillium", "Ironwood"
    clock_hz: float | None = None  #: TPU clock, GPU boost clock (Hz)
    clock_base_hz: float | None = None  #: GPU base clock (Hz)
    mxu_size: int = 0              #: TPU systolic array side S (128; v6e 256)
    mxus_per_core: int = 0         #: TPU MXUs per TensorCore
    megacore: bool = False         #: two TensorCores act as one JAX device (v4p, v5p)
    torus_dims: int = 0            #: 2 or 3 (TPU ICI torus)
    host_shape: tuple = ()         #: chips under one host, as a sub-grid (v5e (4, 2); v5p (2, 2, 1));
    #: its product is ``chips_per_host`` (tests/test_hardware.py)
    vregs_bytes_per_core: float = 0.0  #: TPU vector registers per TensorCore (bytes)
    vpu_alus_per_core: int = 0     #: TPU VPU ALUs per core (8 sublanes × 128 lanes × ALUs/lane)
    subpartitions_per_sm: int = 0  #: GPU: 4 since Volta
    fp32_lanes_per_subpartition: int = 0  #: GPU: 16 (V100, A100) or 32 (Hopper, Blackwell)
    regs_bytes_per_sm: float = 0.0  #: GPU register file per SM (bytes), 256 KiB on all generations
    tmem_bytes_per_sm: float = 0.0  #: GPU Tensor Memory per SM (Blackwell: 256 KiB)
    nvlink_gen: str = ""           #: "3.0", "4.0", "5.0"
    nvlink_links: int = 0          #: NVLink ports per GPU
    nvlink_link_bw_1way: float = 0.0  #: one NVLink link, one direction (bytes/s)
    nvswitches_per_node: int = 0   #: NVSwitch chips per NVLink domain
    price_date: str = ""           #: when the price was observed
    network_source: str = ""       #: where the ICI/NVLink and DCN/NIC figures come from

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

    @property
    def dcn_bw_per_host(self) -> float:
        """DCN (TPU) or NIC (GPU) egress of one host/node, per direction (bytes/s). Book: G20, F12."""
        return self.dcn_bw_1way * self.chips_per_host

    @property
    def pod_chips(self) -> int:
        """Chips in a full pod (TPU) or GPUs in one NVLink domain (GPU); 0 if not given."""
        n = 1
        for d in self.pod_shape:
            n *= d
        return n if self.pod_shape else 0

    @property
    def cores_per_chip(self) -> int:
        """TensorCores per TPU chip (``cores``), or 1 for a GPU."""
        return self.cores if self.family == "tpu" else 1

    @property
    def n_sm(self) -> int:
        """Streaming multiprocessors of a GPU (``cores``)."""
        if self.family != "gpu":
            raise ValueError(f"{self.name} is not a GPU; n_sm is only defined for GPUs")
        return self.cores

    @property
    def float16_dtype(self) -> str:
        """The 16-bit float the matrix units run at full rate: 'bf16', or 'f16' on chips without
        bf16 (V100). What ``peak()`` and ``critical_intensity()`` use when no dtype is given."""
        for k in ("bf16", "f16"):
            if k in self.flops_per_s:
                return k
        raise ValueError(f"{self.name} has no bf16 or f16 peak in the catalogue; "
                         f"it has: {', '.join(self.flops_per_s)}")

    def peak(self, dtype: str | None = None) -> float:
        """Dense peak FLOPs/s (OPs/s for int8) for arithmetic in ``dtype`` (None: the 16-bit
        float peak, ``float16_dtype``)."""
        return peak_flops(self, dtype)

    def bandwidth(self, link: str = "hbm") -> float:
        """Bandwidth in bytes/s of ``link``: 'hbm', 'vmem', 'ici' (bidi per link), 'ici_1way',
        'nvlink' (per direction per GPU), 'pcie', 'dcn' (per chip/GPU egress), 'node' (GPU node
        egress = NIC per GPU × GPUs per node)."""
        table = {"hbm": self.hbm_bw, "vmem": self.vmem_bw, "ici": self.ici_bw_bidi,
                 "ici_1way": self.ici_link_bw_1way, "nvlink": self.nvlink_bw_1way,
                 "pcie": self.pcie_bw, "dcn": self.dcn_bw_1way,
                 "node": self.dcn_bw_per_host if self.family == "gpu" else 0.0}
        if link not in table:
            raise ValueError(f"unknown link {link!r}; allowed: {', '.join(table)}")
        bw = table[link]
        if not bw:
            raise ValueError(f"{self.name} has no {link!r} bandwidth in the catalogue")
        return bw

    def critical_intensity(self, dtype: str | None = None, link: str = "hbm") -> float:
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
    flops = {} if bf16 is None else {"bf16": bf16}     # None: the GPU has no bf16 (V100)
    flops.update(kw.pop("extra_flops", {}))
    kw.setdefault("efficiency", 0.8)
    return Chip(name=name, family="gpu", flops_per_s=flops, hbm_bytes=hbm, hbm_bw=hbm_bw,
                nvlink_bw_1way=nvl, **kw)


_KiB_SM = 256 * KiB  # register file per SM, all GPU generations (12 Facts)

_CHIPS = [
    # ---- TPUs (CANON §1.1; spec 02 Tables A-D, G) ----------------------------------------
    _tpu("TPU v3", 1.4e14, 32e9, 9.0e11, 1e11, 4, extra_flops={"int8": 1.4e14},
         pcie_bw=1.6e10, chips_per_host=4, pod_shape=(32, 32), cores=2,
         mxu_size=128, mxus_per_core=2, torus_dims=2, host_shape=(2, 2), dcn_bw_1way=6.25e9,
         network_source="ICI 1e11/link/dir (book ch.2 table, CANON 1.1). DCN: Google publishes no "
                        "per-host figure for v3; ASSUMPTION 2.5e10 per host of 4 chips (the "
                        "v5e/v5p host figure, CANON 1.1 / D8) = 6.25e9 per chip",
         source="book ch.2 table: 1.4e14 bf16 (vendor 1.23e14; CANON D15), no int8 speed-up; "
                "host 2x2 chips (the book's '4x2' counts the 8 TensorCores of the host's 4 chips; "
                "vendor: 4 chips per host); PCIe 1.6e10 assumed (02 Table E)"),
    _tpu("TPU v4p", 2.75e14, 32e9, 1.2e12, 4.5e10, 6, extra_flops={"int8": 2.75e14},
         pcie_bw=1.6e10, chips_per_host=4, pod_shape=(16, 16, 16), cores=2, megacore=True,
         mxu_size=128, mxus_per_core=4, torus_dims=3, host_shape=(2, 2, 1), dcn_bw_1way=6.25e9,
         network_source="ICI 4.5e10/link/dir, 6 links (book ch.2 table). DCN: not in Google's v4 "
                        "docs; ASSUMPTION 2.5e10 per host of 4 chips as spec 05's critical table "
                        "uses it (CANON D8, labelled assumption) = 6.25e9 per chip",
         source="book ch.2 table; vendor 1200 GB/s HBM; PCIe 16 GB/s each way; int8 = bf16 rate"),
    _tpu("TPU v5e", 1.97e14, 16e9, 8.2e11, 4.5e10, 4, extra_flops={"int8": 3.94e14},
         pcie_bw=1.6e10, dcn_bw_1way=3.125e9, chips_per_host=8, pod_shape=(16, 16), cores=1,
         vmem_bytes=128 * MiB, vmem_bw=22 * 8.2e11, price_per_hour=1.2, price_date="2025-02",
         mxu_size=128, mxus_per_core=4, clock_hz=1.5e9, torus_dims=2, host_shape=(4, 2),
         network_source="ICI 4.5e10/link/dir, 4 links (book ch.2); DCN 2x100 Gb/s NICs per host "
                        "of 8 = 2.5e10/host = 3.125e9/chip (book ch.2 L, CANON 1.1)",
         source="book ch.1-2 (L text): 197 TF bf16, 394 TOPs int8, 819 GB/s HBM, VMEM 128 MiB at "
                "~22x HBM, 4 MXUs at 1.5 GHz; DCN 3.125e9/chip; GCP on-demand Feb 2025"),
    _tpu("TPU v5p", 4.59e14, 96e9, 2.8e12, 9e10, 6, extra_flops={"int8": 9.18e14, "fp8": 4.59e14},
         pcie_bw=1.6e10, dcn_bw_1way=6.25e9, chips_per_host=4, pod_shape=(16, 20, 28), cores=2,
         megacore=True, price_per_hour=4.2, price_date="2025-02",
         mxu_size=128, mxus_per_core=4, clock_hz=1.75e9, torus_dims=3, host_shape=(2, 2, 1),
         vregs_bytes_per_core=64 * 8 * 128 * 4, vpu_alus_per_core=8 * 128 * 4,
         network_source="ICI 9e10/link/dir, 6 links (book ch.2); DCN 50 Gb/s per chip = 6.25e9 "
                        "(vendor, CANON 1.1; 2.5e10 per host of 4)",
         source="book ch.2 table; vendor 459 TF, 2765 GB/s (95 GB); clock 1.75 GHz (L pop quiz); "
                "VREGs 64x(8,128)x32-bit per core and 4 ALUs/lane (L appendix); GCP Feb 2025"),
    _tpu("TPU v6e", 9.2e14, 32e9, 1.6e12, 9e10, 4, extra_flops={"int8": 1.84e15},
         pcie_bw=3.2e10, dcn_bw_1way=1.25e10, chips_per_host=8, pod_shape=(16, 16), cores=1,
         mxu_size=256, torus_dims=2, host_shape=(4, 2), generation="Trillium",
         network_source="ICI 9e10/link/dir, 4 links (book ch.2); DCN 1e11 per host of 8 = "
                        "1.25e10/chip (book ch.2 L, CANON 1.1 / D7)",
         source="book ch.2 table 9.2e14 (ch.1 text's 9.1e14 is a slip; vendor 918 TF; CANON D4); "
                "MXU 256x256; MXU count and clock not taught (vendor text inconsistent)"),
    _tpu("TPU7x", 2.30e15, 192e9, 7.4e12, 9e10, 4, extra_flops={"fp8": 4.61e15},
         pcie_bw=1.6e10, dcn_bw_1way=1.25e10, chips_per_host=4, pod_shape=(4, 4, 576), cores=2,
         torus_dims=3, host_shape=(2, 2, 1), generation="Ironwood",
         network_source="ICI 9e10/link/dir (book L ch.2); DCN 1.25e10/chip = 5e10 per host of 4 "
                        "(book ch.2 L, CANON 1.1)",
         source="book L ch.2 (Ironwood); 8-bit peak is FP8 per vendor (CANON D16); links/chip "
                "not stated, 4 assumed; PCIe not stated, 1.6e10 assumed (02 Table E); 2 cores, "
                "no megacore"),
    # ---- GPUs (CANON §1.2; spec 12 Facts; NVLink per GPU per direction) ----------------------
    _gpu("V100", None, 32e9, 9.0e11, 1.5e11, extra_flops={"f16": 1.25e14},
         chips_per_host=8, cores=80, l2_bytes=6e6, smem_bytes_per_sm=96 * KiB,
         generation="Volta", clock_base_hz=1.25e9, clock_hz=1.38e9, subpartitions_per_sm=4,
         fp32_lanes_per_subpartition=16, regs_bytes_per_sm=_KiB_SM, nvlink_gen="2.0",
         nvlink_links=6, nvlink_link_bw_1way=2.5e10, dcn_bw_1way=6.25e9,
         network_source="NVLink2 6x25 GB/s per GPU, hybrid cube-mesh, no NVSwitch (vendor DGX-1 "
                        "V100); NIC: DGX-1 has 4x 100 Gb/s EDR InfiniBand for 8 GPUs = 6.25e9 per "
                        "GPU (vendor DGX-1 datasheet)",
         source="book ch.12 tables; vendor: no bf16, so only the fp16 tensor-core peak is stored "
                "('f16'; peak('bf16') raises); clocks are the PCIe card (SXM2 boosts to 1.53 GHz); "
                "SMEM 96 KiB = max shared; NVLink2 "
                "6x25 GB/s"),
    _gpu("A100", 3.1e14, 80e9, 2.0e12, 3.0e11, extra_flops={"int8": 6.2e14},
         chips_per_host=8, pod_shape=(8,), cores=108, l2_bytes=40e6, smem_bytes_per_sm=192 * KiB,
         generation="Ampere", clock_base_hz=1.10e9, clock_hz=1.41e9, subpartitions_per_sm=4,
         fp32_lanes_per_subpartition=16, regs_bytes_per_sm=_KiB_SM, nvlink_gen="3.0",
         nvlink_links=12, nvlink_link_bw_1way=2.5e10, nvswitches_per_node=6, dcn_bw_1way=2.5e10,
         network_source="NVLink3 12x25 GB/s per GPU through 6 NVSwitches (vendor); NIC: DGX A100 "
                        "has 8x 200 Gb/s HDR InfiniBand ConnectX-6 for compute, one per GPU = "
                        "2.5e10 per GPU (vendor DGX A100 datasheet; Selene, the Megatron-LM 1T run)",
         source="book ch.12 tables; vendor SXM 80GB: 312 TF bf16 dense, 2.0 TB/s, NVLink3 "
                "12x25 GB/s, 6 NVSwitches; int8 6.2e14 (no fp8)"),
    _gpu("H100", 9.89e14, 80e9, 3.35e12, 4.5e11,
         extra_flops={"fp8": 1.979e15, "int8": 1.979e15},
         dcn_bw_1way=5e10, chips_per_host=8, pod_shape=(8,), cores=132, l2_bytes=50e6,
         smem_bytes_per_sm=256 * KiB, price_per_hour=10.8, price_date="2025-02",
         generation="Hopper", clock_base_hz=1.59e9, clock_hz=1.98e9, subpartitions_per_sm=4,
         fp32_lanes_per_subpartition=32, regs_bytes_per_sm=_KiB_SM, nvlink_gen="4.0",
         nvlink_links=18, nvlink_link_bw_1way=2.5e10, nvswitches_per_node=4,
         source="vendor SXM: 1.979e15 bf16 with sparsity / 2; 3.35 TB/s (book table 3.4e12, "
                "CANON D21); NVLink4 18x25 GB/s ('900 GB/s' is bidi); L2 2x25 MB; 400 Gb/s "
                "ConnectX-7 NIC per GPU; GCP Feb 2025",
         network_source="NVLink4 18x25 GB/s per GPU, 4 NVSwitches (book ch.12, CANON 1.2); NIC "
                        "400 Gb/s ConnectX-7 per GPU = 5e10 (InfiniBand NDR in DGX H100; the "
                        "LLaMA-3 405B run used 400 Gb/s RoCE, Llama 3 paper sec. 3.3)"),
    _gpu("H200", 9.89e14, 141e9, 4.8e12, 4.5e11,
         extra_flops={"fp8": 1.979e15, "int8": 1.979e15},
         dcn_bw_1way=5e10, chips_per_host=8, pod_shape=(8,), cores=132, l2_bytes=50e6,
         smem_bytes_per_sm=256 * KiB, price_per_hour=10.0, price_date="book ch.12 (approx.)",
         generation="Hopper", clock_base_hz=1.59e9, clock_hz=1.98e9, subpartitions_per_sm=4,
         fp32_lanes_per_subpartition=32, regs_bytes_per_sm=_KiB_SM, nvlink_gen="4.0",
         nvlink_links=18, nvlink_link_bw_1way=2.5e10, nvswitches_per_node=4,
         source="vendor SXM: same compute as H100, 141 GB HBM3e at 4.8 TB/s; price '~USD 10/h' "
                "as rounded in ch.12 (CANON D30)",
         network_source="NVLink4 as H100; NIC 400 Gb/s ConnectX-7 per GPU = 5e10 (vendor DGX H200)"),
    _gpu("H800", 9.89e14, 80e9, 3.35e12, 2e11,
         extra_flops={"fp8": 1.979e15},
         dcn_bw_1way=5e10, chips_per_host=8, pod_shape=(8,), cores=132, l2_bytes=50e6,
         smem_bytes_per_sm=256 * KiB, generation="Hopper", subpartitions_per_sm=4,
         fp32_lanes_per_subpartition=32, regs_bytes_per_sm=_KiB_SM, nvlink_gen="4.0",
         source="H100 export variant: NVLink cut to 400 GB/s bidi = 2e11/dir (CANON D28; book "
                "3e11); FP8 SXM 1.979e15 (CANON D27); HBM as H100 (assumed, not in specs)",
         network_source="NVLink 400 GB/s bidi = 2e11/dir (CANON D28); NIC 400 Gb/s InfiniBand per "
                        "GPU = 5e10 (DeepSeek-V3 report sec. 3.2: IB 50 GB/s per GPU)"),
    _gpu("B200", 2.25e15, 192e9, 8.0e12, 9.0e11,
         extra_flops={"fp8": 4.5e15, "int8": 4.5e15, "fp4": 9.0e15},
         dcn_bw_1way=5e10, chips_per_host=8, pod_shape=(8,), cores=148, l2_bytes=126e6,
         smem_bytes_per_sm=256 * KiB, generation="Blackwell", subpartitions_per_sm=4,
         fp32_lanes_per_subpartition=32, regs_bytes_per_sm=_KiB_SM, tmem_bytes_per_sm=256 * KiB,
         nvlink_gen="5.0", nvlink_links=18, nvlink_link_bw_1way=5e10, nvswitches_per_node=2,
         source="vendor HGX B200: 2.25 PF bf16 dense (book table 2.3e15, CANON D23), 8 TB/s "
                "(text's '9 TB/s' is a slip), NVLink5 18x50 GB/s; clock not given ('?')",
         network_source="NVLink5 18x50 GB/s per GPU, 2 NVSwitch chips (book ch.12); NIC 400 Gb/s "
                        "ConnectX-7 per GPU = 5e10 (vendor DGX B200; book ch.12 W_node 4e11)"),
    _gpu("GB200", 2.25e15, 192e9, 8.0e12, 9.0e11,
         extra_flops={"fp8": 4.5e15, "fp4": 9.0e15},
         dcn_bw_1way=5e10, chips_per_host=72, pod_shape=(72,), cores=148, l2_bytes=126e6,
         smem_bytes_per_sm=256 * KiB, generation="Blackwell", subpartitions_per_sm=4,
         fp32_lanes_per_subpartition=32, regs_bytes_per_sm=_KiB_SM, tmem_bytes_per_sm=256 * KiB,
         nvlink_gen="5.0", nvlink_links=18, nvlink_link_bw_1way=5e10, nvswitches_per_node=18,
         source="GB200 NVL72 as used by the book (2.25e15 bf16; vendor ~2.5e15, CANON §5.12); "
                "72 GPUs + 18 NVSwitches per NVLink domain, 72 NICs -> 3.6 TB/s node egress "
                "(chips_per_host counts the NVLink domain here: 4 GPUs per CPU host)",
         network_source="NVLink5 9e11 per GPU, 72-GPU NVLink domain with 18 NVSwitch trays (book "
                        "ch.12 appendix); NIC 5e10 per GPU = 3.6 TB/s per rack (book ch.12, CANON 1.2)"),
]

# Vendor-nominal TPU values (02 Table F) and the Feb-2025 mirror ("M") values, for side notes only.
# Book answers use the default ("book") catalogue.
_VENDOR_CHANGES = {
    "TPU v3": dict(flops_per_s={"bf16": 1.23e14}, hbm_bytes=32 * GiB,
                   source="vendor: 123 TF, 32 GiB, 900 GB/s"),
    "TPU v4p": dict(hbm_bytes=32 * GiB, source="vendor: 275 TF, 32 GiB, 1200 GB/s, 6 ports"),
    "TPU v5e": dict(ici_link_bw_1way=5e10, source="vendor: 400 GB/s bidi ICI over 4 ports"),
    "TPU v5p": dict(ici_link_bw_1way=1e11, hbm_bytes=95e9, hbm_bw=2.765e12,
                    source="vendor: 95 GB, 2765 GB/s, 1200 GB/s bidi ICI over 6 ports"),
    "TPU v6e": dict(flops_per_s={"bf16": 9.18e14, "int8": 1.836e15}, hbm_bw=1.638e12,
                    ici_link_bw_1way=1e11, source="vendor: 918 TF, 1638 GB/s, 800 GB/s bidi ICI"),
    "TPU7x": dict(flops_per_s={"bf16": 2.307e15, "fp8": 4.614e15}, hbm_bytes=192 * GiB,
                  source="vendor: 2307 TF bf16, 4614 TF FP8, 192 GiB"),
}
_M_CHANGES = {
    "TPU v5e": dict(hbm_bw=8.1e11, pcie_bw=1.5e10, vmem_bw=22 * 8.1e11,
                    source="Feb-2025 mirror text: 8.1e11 HBM, PCIe 1.5e10"),
    "TPU v5p": dict(pcie_bw=1.5e10, flops_per_s={"bf16": 4.5e14, "int8": 9.0e14},
                    source="Feb-2025 mirror text: 4.5e14 bf16 in Q2, PCIe 1.5e10"),
    "TPU v6e": dict(pcie_bw=1.5e10, source="Feb-2025 mirror text: PCIe 1.5e10 in Q3"),
    "TPU v4p": dict(pcie_bw=1.5e10, source="Feb-2025 mirror text: PCIe 1.5e10"),
}

CATALOGUE: Mapping[str, Chip] = MappingProxyType({c.name: c for c in _CHIPS})


def _variant(changes: dict) -> Mapping[str, Chip]:
    out = dict(CATALOGUE)
    for nm, ch in changes.items():
        out[nm] = dataclasses.replace(CATALOGUE[nm], **ch)
    return MappingProxyType(out)


#: "book" = the values every answer uses; "vendor" and "m" are side-note variants of the TPU table.
VARIANTS: Mapping[str, Mapping[str, Chip]] = MappingProxyType({
    "book": CATALOGUE, "vendor": _variant(_VENDOR_CHANGES), "m": _variant(_M_CHANGES)})

_ALIASES = {"v3": "TPU v3", "v4": "TPU v4p", "v4p": "TPU v4p", "tpu v4": "TPU v4p",
            "v5e": "TPU v5e", "v5 lite": "TPU v5e", "v5litepod": "TPU v5e", "tpu v5 lite": "TPU v5e",
            "v5p": "TPU v5p", "v6e": "TPU v6e", "trillium": "TPU v6e", "tpu v6 lite": "TPU v6e",
            "v7": "TPU7x", "tpu v7": "TPU7x", "ironwood": "TPU7x", "tpu7x": "TPU7x",
            "h100 sxm": "H100", "h200 sxm": "H200", "nvidia h100": "H100", "nvidia h200": "H200",
            "nvidia b200": "B200", "nvidia a100": "A100", "gb200 nvl72": "GB200", "nvl72": "GB200",
            "nvidia h800": "H800", "nvidia v100": "V100", "h100 sxm5": "H100", "b200 hgx": "B200"}


def _norm(s: str) -> str:
    return " ".join(s.lower().replace("_", " ").replace("-", " ").split())


def names() -> list[str]:
    """All catalogue names, in catalogue order."""
    return list(CATALOGUE)


def tpu_names() -> list[str]:
    """The TPU chips of the catalogue, oldest first."""
    return [n for n, c in CATALOGUE.items() if c.family == "tpu"]


def gpu_names() -> list[str]:
    """The GPUs of the catalogue, oldest first."""
    return [n for n, c in CATALOGUE.items() if c.family == "gpu"]


def get(name, variant: str = "book") -> Chip:
    """Look a chip up by name, case-insensitively ('v5e', 'TPU v5e', 'h100' ...).

    A ``Chip`` passes through unchanged. Unknown names raise ``KeyError`` with near matches.
    ``variant``: "book" (default; the values every answer uses), "vendor" (vendor-nominal TPU
    figures, 02 Table F) or "m" (the Feb-2025 mirror's older values).
    """
    if isinstance(name, Chip):
        return name
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; allowed: {', '.join(VARIANTS)}")
    if variant != "book":
        return VARIANTS[variant][get(name).name]
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


def peak_flops(chip, dtype: str | None = None) -> float:
    """Dense peak FLOPs/s of ``chip`` for arithmetic in ``dtype``. Book: sec-01-time.

    ``dtype=None`` is the chip's 16-bit float matmul peak (``Chip.float16_dtype``: bf16, or fp16
    on V100, which has no bf16); an explicit dtype the chip lacks raises, naming what it has."""
    chip = get(chip)
    if dtype is None:
        dtype = chip.float16_dtype
    dtype_bytes(dtype)
    key = {"bfloat16": "bf16", "float32": "f32", "fp32": "f32", "i8": "int8",
           "float16": "f16", "fp16": "f16"}.get(dtype.lower(), dtype.lower())
    if key not in chip.flops_per_s:
        raise ValueError(f"{chip.name} has no {dtype!r} peak in the catalogue; "
                         f"it has: {', '.join(chip.flops_per_s)}")
    return chip.flops_per_s[key]


def critical_intensity(chip, dtype: str | None = None, link: str = "hbm") -> float:
    """Critical arithmetic intensity C/W (FLOPs per byte); ``dtype=None``: the chip's 16-bit
    float peak (see ``peak_flops``). Book: eq-01-icrit."""
    chip = get(chip)
    return peak_flops(chip, dtype) / chip.bandwidth(link)


#: Catalogue fields whose 0 / None / () means "not given" (so reading them must not silently
#: substitute another number): ``require`` raises instead.
_OPTIONAL_NUMBERS = ("ici_link_bw_1way", "ici_links", "nvlink_bw_1way", "pcie_bw", "dcn_bw_1way",
                     "chips_per_host", "pod_shape", "vmem_bytes", "vmem_bw", "l2_bytes",
                     "price_per_hour", "torus_dims", "nvlink_link_bw_1way", "nvswitches_per_node")


def require(chip, field: str):
    """The catalogue value ``field`` of ``chip``; a ValueError naming the chip and the field when
    the catalogue does not have it (no silent fallback to another number)."""
    chip = get(chip)
    if not hasattr(chip, field):
        raise ValueError(f"unknown Chip field {field!r}")
    v = getattr(chip, field)
    if v in (None, 0, 0.0, ()):
        src = f" ({chip.network_source})" if chip.network_source and field in (
            "dcn_bw_1way", "nvlink_bw_1way", "ici_link_bw_1way") else ""
        raise ValueError(f"the catalogue has no {field} for {chip.name}{src}; pass the number "
                         f"explicitly or use a chip that has it")
    return v


def network_axes(chip) -> int:
    """Axes a collective can run over at once inside ``chip``'s scale-up network: the torus
    dimension of a TPU (2 on v3/v5e/v6e, 3 on v4p/v5p/TPU7x); 1 for a GPU's NVLink switch or a CPU.
    Book: sec-02-ici (tori), sec-05-critical-batch (n_axes), sec-12-nodes (one switch)."""
    chip = get(chip)
    if chip.family == "tpu":
        if not chip.torus_dims:
            raise ValueError(f"{chip.name} has no torus dimension (torus_dims) in the catalogue")
        return chip.torus_dims
    return 1


def check_n_axes(chip, n_axes, name: str = "n_axes"):
    """Validate an axis count against the chip's network: 1 <= n_axes <= ``network_axes(chip)``.

    Raises ValueError naming the chip and how many axes it has (a 2-D v5e called with 3 axes is
    the classic slip). Accepts arrays; returns the value unchanged.
    """
    import numpy as np
    chip = get(chip)
    a = np.asarray(n_axes)
    if a.dtype == bool or not np.issubdtype(a.dtype, np.number) or np.any(a != np.round(a)) \
            or np.any(a < 1):
        raise ValueError(f"{name} must be a whole number of axes >= 1, got {n_axes!r}")
    m = network_axes(chip)
    if np.any(a > m):
        what = (f"a {m}-D ICI torus" if chip.family == "tpu"
                else "one NVLink/switch domain (one axis)" if chip.family == "gpu" else "one axis")
        raise ValueError(f"{name}={n_axes!r} is impossible on {chip.name}: it has {what}, so at "
                         f"most {m} {'axes' if m > 1 else 'axis'}")
    return n_axes


def max_mx_my(chip) -> int:
    """Largest M_X·M_Y an FSDP (M_X axes) × TP (M_Y axes) split can have when the two groups
    share the torus without double-counting an axis (M_X + M_Y <= axes): 2 on a 3-D torus, 1 on
    a 2-D torus or a GPU node. Book: eq-05-mixed-bound."""
    m = network_axes(chip)
    return max(1, (m // 2) * (m - m // 2))


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
    """The catalogue chip JAX runs on, or None on a CPU. Runs in ``scaling_lib.xla`` (the JAX
    side, loaded by ``devices.setup``): the catalogue itself never imports JAX."""
    from . import hooks
    return hooks.call("detect")


def replace(chip, **changes) -> Chip:
    """A modified copy of ``chip`` (e.g. a what-if with more bandwidth)."""
    chip = get(chip)
    allowed = {f.name for f in dataclasses.fields(Chip)}
    bad = set(changes) - allowed
    if bad:
        raise ValueError(f"unknown Chip field(s) {sorted(bad)}; allowed: {sorted(allowed)}")
    return dataclasses.replace(chip, **changes)


# ---- derived quantities used by chapters 2 and 12 -------------------------------------------

@dataclass(frozen=True)
class PodSummary:
    """Inventory of one full TPU pod (or one GPU NVLink domain). Book: G9, P2.8."""

    chip: str
    chips: int
    hosts: int
    cores: int
    flops_per_s: float
    hbm_bytes: float

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        from .units import fmt_bytes, fmt_num
        return (f"{self.chip} 整个 Pod：{self.chips} 颗芯片，{self.hosts} 台主机，{self.cores} 个核心，"
                f"bf16 峰值 {fmt_num(self.flops_per_s)} FLOPs/s，HBM 共 {fmt_bytes(self.hbm_bytes)}")


def pod_summary(chip, dtype: str = "bf16") -> PodSummary:
    """Chips, hosts, cores, peak FLOPs/s and HBM of a full pod (G9). Book: P2.8."""
    chip = get(chip)
    if not chip.pod_shape or not chip.chips_per_host:
        raise ValueError(f"{chip.name} has no pod shape / host size in the catalogue")
    n = chip.pod_chips
    return PodSummary(chip=chip.name, chips=n, hosts=n // chip.chips_per_host,
                      cores=n * chip.cores_per_chip, flops_per_s=n * chip.peak(dtype),
                      hbm_bytes=n * chip.hbm_bytes)


def flops_per_usd(chip, dtype: str = "bf16") -> float:
    """Peak FLOPs bought per US dollar at the catalogue's on-demand price: 3600·C/price (G21)."""
    chip = get(chip)
    if not chip.price_per_hour:
        raise ValueError(f"{chip.name} has no price in the catalogue; priced chips: "
                         f"{', '.join(n for n, c in CATALOGUE.items() if c.price_per_hour)}")
    return 3600.0 * chip.peak(dtype) / chip.price_per_hour


def node_egress_bw(chip) -> float:
    """Scale-out egress of one GPU node / TPU host, per direction (bytes/s). Book: F12, G20."""
    chip = get(chip)
    if not chip.dcn_bw_1way:
        raise ValueError(f"{chip.name} has no DCN/NIC bandwidth in the catalogue")
    return chip.dcn_bw_per_host


def gbps_to_bytes_per_s(gbps):
    """Network gigabits per second to bytes per second: x Gb/s = x/8 GB/s (F8)."""
    return check_positive("gbps", gbps) * 1e9 / 8


_TABLE_FIELDS = {
    "bf16": ("bf16 峰值（FLOPs/s）", lambda c: c.flops_per_s.get("bf16", float("nan"))),
    "f16": ("fp16 峰值（FLOPs/s）", lambda c: c.flops_per_s.get("f16", float("nan"))),
    "peak16": ("16 位浮点峰值（FLOPs/s）", lambda c: c.peak()),   # bf16; fp16 where no bf16 (V100)
    "int8": ("int8 峰值（OPs/s）", lambda c: c.flops_per_s.get("int8", float("nan"))),
    "fp8": ("fp8 峰值（FLOPs/s）", lambda c: c.flops_per_s.get("fp8", float("nan"))),
    "fp4": ("fp4 峰值（FLOPs/s）", lambda c: c.flops_per_s.get("fp4", float("nan"))),
    "hbm": ("HBM 容量（GB）", lambda c: c.hbm_bytes / 1e9),
    "hbm_bw": ("HBM 带宽（B/s）", lambda c: c.hbm_bw),
    "icrit": ("临界强度 C/W_hbm", lambda c: c.critical_intensity()),
    "ici_1way": ("ICI 单链路单向（B/s）", lambda c: c.ici_link_bw_1way or float("nan")),
    "ici_bidi": ("ICI 单链路双向（B/s）", lambda c: c.ici_bw_bidi or float("nan")),
    "links": ("ICI 链路数", lambda c: c.ici_links or float("nan")),
    "nvlink": ("NVLink 每 GPU 单向（B/s）", lambda c: c.nvlink_bw_1way or float("nan")),
    "pcie": ("PCIe 每芯片（B/s）", lambda c: c.pcie_bw or float("nan")),
    "dcn": ("DCN/网卡 每芯片（B/s）", lambda c: c.dcn_bw_1way or float("nan")),
    "cores": ("TensorCore / SM 数", lambda c: c.cores),   # header by family in spec_table
    "pod": ("Pod 形状 / NVLink 域", lambda c: "×".join(map(str, c.pod_shape)) or "—"),
    "host": ("每主机/节点芯片数", lambda c: c.chips_per_host or float("nan")),
    "price": ("价格（美元/芯片·小时）", lambda c: c.price_per_hour or float("nan")),
    "l2": ("L2（MB）", lambda c: c.l2_bytes / 1e6 if c.l2_bytes else float("nan")),
    "smem": ("SMEM/L1 每 SM（KiB）", lambda c: c.smem_bytes_per_sm / KiB if c.smem_bytes_per_sm
             else float("nan")),
    "vmem": ("VMEM（MiB）", lambda c: c.vmem_bytes / MiB if c.vmem_bytes else float("nan")),
}


class SpecTable:
    """A small table (rows × columns) that renders as HTML in a notebook and as text elsewhere."""

    def __init__(self, columns, rows, index):
        self.columns = list(columns)
        self.rows = [list(r) for r in rows]
        self.index = list(index)

    @staticmethod
    def _fmt(v) -> str:
        from .units import fmt_num
        if isinstance(v, str):
            return v
        if v != v:  # NaN
            return "—"
        if float(v).is_integer() and abs(v) < 1e6:
            return str(int(v))
        return fmt_num(v)

    def column(self, name) -> list:
        """The values of one column (raw numbers)."""
        if name not in self.columns:
            raise KeyError(f"unknown column {name!r}; columns: {self.columns}")
        j = self.columns.index(name)
        return [r[j] for r in self.rows]

    def __str__(self) -> str:
        head = [""] + self.columns
        body = [[i] + [self._fmt(v) for v in r] for i, r in zip(self.index, self.rows)]
        widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
        line = lambda cells: " | ".join(str(c).ljust(w) for c, w in zip(cells, widths))
        return "\n".join([line(head), "-+-".join("-" * w for w in widths)] + [line(b) for b in body])

    def _repr_html_(self) -> str:
        import html
        th = "".join(f"<th>{html.escape(c)}</th>" for c in [""] + self.columns)
        trs = "".join("<tr><th>" + html.escape(str(i)) + "</th>" + "".join(
            f"<td>{html.escape(self._fmt(v))}</td>" for v in r) + "</tr>"
            for i, r in zip(self.index, self.rows))
        return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def spec_table(chips=None, fields=("bf16", "int8", "hbm", "hbm_bw", "icrit"), variant: str = "book"):
    """A ``SpecTable``: one row per chip, one column per field (Chinese headers).

    ``fields`` from: """ + ", ".join(_TABLE_FIELDS) + """. Book: sec-02-specs, sec-12-specs."""
    if chips is None:
        chips = names()
    bad = [f for f in fields if f not in _TABLE_FIELDS]
    if bad:
        raise ValueError(f"unknown field(s) {bad}; allowed: {', '.join(_TABLE_FIELDS)}")
    rows = [[_TABLE_FIELDS[f][1](get(c, variant)) for f in fields] for c in chips]
    families = {get(c).family for c in chips}
    cores = {frozenset({"gpu"}): "SM 数", frozenset({"tpu"}): "TensorCore 数"}.get(
        frozenset(families), "TensorCore / SM 数")
    heads = [cores if f == "cores" else _TABLE_FIELDS[f][0] for f in fields]
    return SpecTable(heads, rows, [get(c).name for c in chips])
