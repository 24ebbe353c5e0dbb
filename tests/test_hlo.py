"""Tests for scaling_lib.hlo: the three replica-group forms and the mesh axes they mean.

Spec: ../shared/JAX-COMPAT.md "Compiled HLO on CPU" (replica-group text differs between JAX 0.7.2
and 0.10.2; all three forms must decode to the same groups).
"""
import pytest

from scaling_lib import hlo

MESH = {"X": 4, "Y": 2}          # device id = 2·x + y
X_GROUPS = ((0, 2, 4, 6), (1, 3, 5, 7))
Y_GROUPS = ((0, 1), (2, 3), (4, 5), (6, 7))


@pytest.mark.parametrize("text, groups", [
    # explicit (shard_map collectives, both versions)
    ("{{0,2,4,6},{1,3,5,7}}, dimensions={1}, use_global_device_ids=true", X_GROUPS),
    ("{{0,1},{2,3},{4,5},{6,7}}", Y_GROUPS),
    # iota (JAX 0.7.2 partitioner)
    ("[4,2]<=[8], use_global_device_ids=true", Y_GROUPS),
    ("[2,4]<=[4,2]T(1,0), to_apply=%add", X_GROUPS),
    # mesh form (JAX 0.10.2 partitioner), with and without device_ids
    ("mesh['axis_0'=1,'axis_1'=4,'axis_2'=2] {'axis_1'}, metadata={}", X_GROUPS),
    ("mesh['axis_0'=1,'axis_1'=2,'axis_2'=4], device_ids=([4,2]T(1,0)) {'axis_1'}, use", Y_GROUPS),
    ("mesh['axis_0'=4,'axis_1'=2] {'axis_0','axis_1'}", ((0, 1, 2, 3, 4, 5, 6, 7),)),
])
def test_decode_three_forms(text, groups):
    assert tuple(sorted(hlo.decode_replica_groups(text))) == groups


def test_empty_groups_mean_all_devices():
    assert hlo.decode_replica_groups("{}", n_devices=4) == ((0, 1, 2, 3),)
    with pytest.raises(ValueError, match="n_devices"):
        hlo.decode_replica_groups("{}")


@pytest.mark.parametrize("groups, axes", [
    (X_GROUPS, ("X",)), (Y_GROUPS, ("Y",)), (((0, 1, 2, 3, 4, 5, 6, 7),), ("X", "Y")),
    (((0,), (1,), (2,), (3,), (4,), (5,), (6,), (7,)), ()),
])
def test_mesh_axes_of_groups(groups, axes):
    assert hlo.mesh_axes_of_groups(groups, MESH) == axes


def test_groups_that_are_not_mesh_axes_raise():
    with pytest.raises(ValueError, match="not a mesh-axis group"):
        hlo.mesh_axes_of_groups(((0, 3), (1, 2), (4, 7), (5, 6)), MESH)
    with pytest.raises(ValueError, match="not on the mesh"):
        hlo.mesh_axes_of_groups(((0, 9),), MESH)
    with pytest.raises(TypeError):
        hlo.mesh_axes_of_groups(X_GROUPS, [4, 2])


def test_permute_pairs_give_crossed_axes():
    pairs = ((0, 0), (1, 2), (2, 4), (3, 6), (4, 1), (5, 3), (6, 5), (7, 7))
    assert hlo.mesh_axes_of_groups(pairs, MESH) == ("X", "Y")


HLO_SAMPLE = """\
HloModule jit_f, entry_computation_layout={(f32[16,8]{1,0})->f32[16,16]{1,0}}
ENTRY %main {
  %p = f32[16,8]{1,0} parameter(0)
  %all-gather = f32[16,16]{0,1} all-gather(%p), channel_id=1, replica_groups=mesh['axis_0'=1,'axis_1'=2,'axis_2'=4], device_ids=([4,2]T(1,0)) {'axis_1'}, dimensions={1}, use_global_device_ids=true
  %all-reduce-start = f32[16,16]{1,0} all-reduce-start(%all-gather), channel_id=2, replica_groups=[2,4]<=[4,2]T(1,0), to_apply=%add
  %all-reduce-done = f32[16,16]{1,0} all-reduce-done(%all-reduce-start)
  %all-to-all.1 = (f32[4,1,4]{2,1,0}, f32[4,1,4]{2,1,0}) all-to-all(%a, %b), channel_id=3, replica_groups={{0,1},{2,3},{4,5},{6,7}}
  %gte = f32[4,1,4]{2,1,0} get-tuple-element(%all-to-all.1), index=0
  ROOT %cp = f32[16,16]{1,0} collective-permute(%all-reduce-done), channel_id=4, source_target_pairs={{0,1},{1,0},{2,3},{3,2},{4,5},{5,4},{6,7},{7,6}}
}
"""


def test_collectives_in_sample():
    got = hlo.collectives_in(HLO_SAMPLE)
    assert [k for k, _ in got] == ["all-gather", "all-reduce", "all-to-all", "collective-permute"]
    assert hlo.count_collectives(HLO_SAMPLE) == {"all-gather": 1, "all-reduce": 1, "all-to-all": 1,
                                                 "collective-permute": 1}
    assert hlo.collective_axes(HLO_SAMPLE, MESH) == [
        ("all-gather", ("Y",)), ("all-reduce", ("X",)), ("all-to-all", ("Y",)),
        ("collective-permute", ("Y",))]


def test_bad_input():
    with pytest.raises(TypeError):
        hlo.collectives_in(b"bytes")
    with pytest.raises(ValueError, match="unknown replica_groups form"):
        hlo.decode_replica_groups("nonsense")
    with pytest.raises(ValueError, match="missing from mesh"):
        hlo.decode_replica_groups("mesh['axis_0'=2] {'axis_9'}")


def test_tuple_all_to_all_with_index_comments_and_tpu_layouts():
    line = ("  %all-to-all = (f32[1,1]{1,0}, f32[1,1]{1,0}, /*index=2*/f32[1,1]{1,0}) all-to-all(%a, %b, "
            "/*index=2*/%c), channel_id=1, replica_groups={{0,1,2}}, dimensions={0}\n"
            "  %ag = bf16[8,128]{1,0:T(8,128)(2,1)} all-gather-start(%p), replica_groups=[1,3]<=[3]\n"
            "  %gte = f32[1,1]{1,0} get-tuple-element(%all-to-all), index=0\n")
    assert hlo.collectives_in(line) == [("all-to-all", ((0, 1, 2),)), ("all-gather", ((0, 1, 2),))]
