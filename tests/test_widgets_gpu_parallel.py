"""widgets.gpu_parallel (chapter 12): the DP bar obeys the node-level max rule (review ch10-12 M6)."""
import pytest

from scaling_lib import gpu_parallel as gp
from scaling_lib.widgets import gpu_parallel as wg


@pytest.mark.parametrize("node", ["GB200 NVL72", "H800"])
def test_dp_bar_is_bound_by_nvlink_where_the_appendix_says(node):
    # at the cross-node threshold C/W_node the rack/H800 node is still NVLink-bound
    b = gp.dp_critical_batch_per_gpu(node)
    tm, tc = wg.strategy_times(node, 8192, 28672, b, 8, 64, 8)["数据并行（跨节点）"]
    assert tc > 1.5 * tm
    # and it turns compute-bound exactly at the max-rule threshold
    b_max = gp.dp_critical_batch_per_gpu(node, include_node_level=True)
    tm, tc = wg.strategy_times(node, 8192, 28672, b_max, 8, 64, 8)["数据并行（跨节点）"]
    assert tm == pytest.approx(tc)


def test_dp_bar_h100_unchanged_and_controls():
    b = gp.dp_critical_batch_per_gpu("DGX H100")
    tm, tc = wg.strategy_times("DGX H100", 8192, 28672, b)["数据并行（跨节点）"]
    assert tm == pytest.approx(tc)
    res = wg.strategy_times("DGX H100", 7168, 2048, 4096, 8, 64, 4)
    assert "专家并行 64 路（k=4）" in res
