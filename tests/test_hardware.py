"""scaling_lib.hardware: every catalogue number of spec 02 (Tables A-G) and spec 12 (Facts), with
the corrections of CANON §1 (CANON wins)."""
import numpy as np
import pytest

from scaling_lib import hardware as H
from scaling_lib.units import MiB, KiB

# (chip, field, value, spec reference)
CATALOGUE = [
    ("v3", "bf16", 1.4e14, "02 Table A (vendor 1.23e14, CANON D15)"),
    ("v4p", "bf16", 2.75e14, "02 Table A"), ("v4p", "int8", 2.75e14, "02 Table A"),
    ("v5p", "bf16", 4.59e14, "02 Table A"), ("v5p", "int8", 9.18e14, "02 Table A"),
    ("v5e", "bf16", 1.97e14, "02 Table A"), ("v5e", "int8", 3.94e14, "02 Table A"),
    ("v6e", "bf16", 9.2e14, "02 Table A (CANON D4)"), ("v6e", "int8", 1.84e15, "02 Table A"),
    ("TPU7x", "bf16", 2.30e15, "02 Table A"), ("TPU7x", "fp8", 4.61e15, "CANON D16"),
    ("A100", "bf16", 3.1e14, "12 throughput"), ("A100", "int8", 6.2e14, "12 throughput"),
    ("H100", "bf16", 9.89e14, "CANON D20"), ("H100", "fp8", 1.979e15, "12"),
    ("H200", "bf16", 9.89e14, "12"), ("B200", "bf16", 2.25e15, "CANON D23"),
    ("B200", "fp8", 4.5e15, "12"), ("B200", "fp4", 9.0e15, "12"),
    ("H800", "fp8", 1.979e15, "CANON D27"),
]


@pytest.mark.parametrize("chip,dtype,value,ref", CATALOGUE)
def test_peaks(chip, dtype, value, ref):
    assert H.peak_flops(chip, dtype) == pytest.approx(value), ref


HBM = [("v3", 32e9, 9e11), ("v4p", 32e9, 1.2e12), ("v5p", 96e9, 2.8e12), ("v5e", 16e9, 8.2e11),
       ("v6e", 32e9, 1.6e12), ("TPU7x", 192e9, 7.4e12), ("V100", 32e9, 9e11), ("A100", 80e9, 2e12),
       ("H100", 80e9, 3.35e12), ("H200", 141e9, 4.8e12), ("B200", 192e9, 8e12)]


@pytest.mark.parametrize("chip,cap,bw", HBM)
def test_hbm(chip, cap, bw):
    c = H.get(chip)
    assert c.hbm_bytes == cap and c.hbm_bw == bw


ICI = [("v3", 1e11, 4), ("v4p", 4.5e10, 6), ("v5p", 9e10, 6), ("v5e", 4.5e10, 4), ("v6e", 9e10, 4),
       ("TPU7x", 9e10, 4)]


@pytest.mark.parametrize("chip,one,links", ICI)
def test_ici_table_b(chip, one, links):
    c = H.get(chip)
    assert c.ici_link_bw_1way == one and c.ici_bw_bidi == 2 * one and c.ici_links == links


def test_host_links_table_c():
    assert H.get("v5e").pcie_bw == 1.6e10 and H.get("v6e").pcie_bw == 3.2e10
    assert H.get("v5p").dcn_bw_1way == 6.25e9 and H.get("v6e").dcn_bw_1way == 1.25e10
    assert H.get("v5e").dcn_bw_1way == 3.125e9 and H.get("TPU7x").dcn_bw_1way == 1.25e10
    assert H.get("v5e").dcn_bw_per_host == pytest.approx(2.5e10)       # G20
    assert H.get("v5p").dcn_bw_per_host == pytest.approx(2.5e10)
    assert H.get("v6e").dcn_bw_per_host == pytest.approx(1e11)


def test_internals_table_d():
    v5e, v5p = H.get("v5e"), H.get("v5p")
    assert v5e.vmem_bytes == 128 * MiB and v5e.vmem_bw == pytest.approx(22 * 8.2e11)
    assert v5e.mxu_size == 128 and v5e.mxus_per_core == 4 and v5e.clock_hz == 1.5e9
    assert v5p.clock_hz == 1.75e9 and v5p.cores == 2 and v5p.megacore
    assert v5p.vregs_bytes_per_core == 256 * KiB                        # CANON D25
    assert v5p.vpu_alus_per_core == 4096
    assert H.get("v6e").mxu_size == 256
    assert not H.get("TPU7x").megacore and H.get("TPU7x").cores == 2
    assert H.get("v5e").host_shape == (4, 2) and H.get("v5p").host_shape == (2, 2, 1)
    assert H.get("TPU v3").host_shape == (2, 2)          # 4 chips (8 TensorCores) per v3 host


@pytest.mark.parametrize("name", [n for n in H.names() if H.get(n).family == "tpu"])
def test_host_shape_holds_the_hosts_chips(name):
    c = H.get(name)
    assert int(np.prod(c.host_shape)) == c.chips_per_host, (name, c.host_shape, c.chips_per_host)
    assert len(c.host_shape) == c.torus_dims


def test_v100_has_no_bf16_peak():
    v = H.get("V100")
    assert "bf16" not in v.flops_per_s and v.peak("f16") == 1.25e14
    with pytest.raises(ValueError, match="V100 has no 'bf16' peak.*f16"):
        v.peak("bf16")
    assert v.float16_dtype == "f16" and v.peak() == 1.25e14            # the 16-bit float peak
    assert v.critical_intensity() == pytest.approx(1.25e14 / 9e11)
    assert H.get("H100").float16_dtype == "bf16" and H.get("H100").peak() == 9.89e14
    t = H.spec_table(["V100", "A100"], ("bf16", "f16", "cores", "smem"))
    assert t.columns == ["bf16 峰值（FLOPs/s）", "fp16 峰值（FLOPs/s）", "SM 数", "SMEM/L1 每 SM（KiB）"]
    assert np.isnan(t.column("bf16 峰值（FLOPs/s）")[0]) and t.column("SMEM/L1 每 SM（KiB）") == [96, 192]
    assert H.spec_table(["v5e"], ("cores",)).columns == ["TensorCore 数"]
    assert H.spec_table(["v5e", "H100"], ("cores",)).columns == ["TensorCore / SM 数"]


# shared memory / L1 per SM: NVIDIA's "96 KB", "192 KB", "256 KB" are KiB (a chapter owner found
# 256e3 stored for 256 KiB)
GPU_STRUCT = [("V100", 80, 1.25e9, 1.38e9, 96 * KiB, 6e6, 16),
              ("A100", 108, 1.10e9, 1.41e9, 192 * KiB, 40e6, 16),
              ("H100", 132, 1.59e9, 1.98e9, 256 * KiB, 50e6, 32),
              ("H200", 132, 1.59e9, 1.98e9, 256 * KiB, 50e6, 32),
              ("B200", 148, None, None, 256 * KiB, 126e6, 32)]


@pytest.mark.parametrize("chip,sms,base,boost,smem,l2,lanes", GPU_STRUCT)
def test_gpu_structure(chip, sms, base, boost, smem, l2, lanes):
    g = H.get(chip)
    assert g.n_sm == sms and g.clock_base_hz == base and g.clock_hz == boost
    assert g.smem_bytes_per_sm == smem and g.l2_bytes == l2
    assert g.fp32_lanes_per_subpartition == lanes and g.regs_bytes_per_sm == 256 * KiB
    assert g.tmem_bytes_per_sm == (256 * KiB if chip == "B200" else 0)


NVLINK = [("A100", 12, 2.5e10, 3e11, 6), ("H100", 18, 2.5e10, 4.5e11, 4), ("B200", 18, 5e10, 9e11, 2),
          ("GB200", 18, 5e10, 9e11, 18)]


@pytest.mark.parametrize("chip,links,link_bw,per_gpu,switches", NVLINK)
def test_nvlink_generations(chip, links, link_bw, per_gpu, switches):
    g = H.get(chip)
    assert g.nvlink_links == links and g.nvlink_link_bw_1way == link_bw
    assert g.nvlink_bw_1way == per_gpu == links * link_bw                # F9
    assert g.nvswitches_per_node == switches


def test_h800_and_egress():
    assert H.get("H800").nvlink_bw_1way == 2e11                           # CANON D28
    assert H.node_egress_bw("H100") == pytest.approx(4e11)                # F12
    assert H.node_egress_bw("B200") == pytest.approx(4e11)
    assert H.node_egress_bw("GB200") == pytest.approx(3.6e12)
    assert H.gbps_to_bytes_per_s(400) == pytest.approx(5e10)              # F8


CRIT = [("v5e", 240.2), ("v5p", 164), ("v6e", 575), ("v4p", 229), ("v3", 156), ("TPU7x", 311),
        ("H100", 295), ("H200", 206), ("B200", 281), ("A100", 155)]


@pytest.mark.parametrize("chip,value", CRIT)
def test_critical_intensity_canon_1_4(chip, value):
    assert H.critical_intensity(chip) == pytest.approx(value, rel=3e-3)


def test_pod_summary_p2_8_table_e():
    e = H.pod_summary("v5e")
    assert (e.chips, e.hosts, e.cores) == (256, 32, 256)
    assert e.flops_per_s == pytest.approx(5.04e16, rel=1e-3) and e.hbm_bytes == pytest.approx(4.1e12, rel=0.01)
    p = H.pod_summary("v5p")
    assert (p.chips, p.hosts, p.cores) == (8960, 2240, 17920)
    assert p.flops_per_s == pytest.approx(4.11e18, rel=1e-3) and p.hbm_bytes == pytest.approx(8.6e14, rel=0.01)
    assert H.pod_summary("v4p").hosts == 1024 and H.pod_summary("TPU7x").hosts == 2304
    assert H.pod_summary("TPU7x").flops_per_s == pytest.approx(2.12e19, rel=0.01)


def test_prices_table_g():
    assert H.flops_per_usd("v5e") == pytest.approx(5.91e17, rel=1e-3)
    assert H.flops_per_usd("v5p") == pytest.approx(3.93e17, rel=2e-3)
    assert H.flops_per_usd("H100") == pytest.approx(3.30e17, rel=2e-3)
    with pytest.raises(ValueError, match="no price"):
        H.flops_per_usd("v6e")


def test_variants():
    assert H.get("v5e", "vendor").ici_link_bw_1way == 5e10
    assert H.get("v5p", "vendor").hbm_bw == 2.765e12
    assert H.get("v5e", "m").hbm_bw == 8.1e11 and H.get("v5e", "m").pcie_bw == 1.5e10
    assert H.get("v5e").hbm_bw == 8.2e11
    with pytest.raises(ValueError, match="variant"):
        H.get("v5e", "x")


def test_lookup_errors_and_aliases():
    assert H.get("ironwood").name == "TPU7x" and H.get("nvl72").name == "GB200"
    with pytest.raises(KeyError, match="did you mean"):
        H.get("H10O")
    with pytest.raises(TypeError):
        H.get(5)
    with pytest.raises(ValueError, match="not a GPU"):
        H.get("v5e").n_sm
    with pytest.raises(ValueError, match="allowed"):
        H.spec_table(fields=("bogus",))


def test_spec_table():
    t = H.spec_table(["v5e", "H100"], ("bf16", "icrit"))
    assert t.index == ["TPU v5e", "H100"]
    assert t.column("临界强度 C/W_hbm")[0] == pytest.approx(240.2, rel=1e-3)
    assert "<table>" in t._repr_html_() and "TPU v5e" in str(t)
