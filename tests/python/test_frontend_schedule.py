"""Manual schedules from Python reproduce the figures of
shared/cases/smem_cases.md, and the lowered-kernel view reports them."""
import json

import pytest
import torch

from smelt import FusionDefinition, MemoryType, ParallelType
from smelt.gallery import tiled_gemm
from frontend_helpers import DEVICES, assert_matches

Shared = MemoryType.Shared


def simple_case():
    """A1 SimpleCase (H=5, W=6): A = tv1 (Shared, 20 B), B = tv5 (Shared, 24 B)."""
    with FusionDefinition() as fd:
        tv1 = fd.ops.set(fd.ops.full([5], 1.0))
        tv2 = fd.ops.set(tv1)
        fd.add_output(tv2)
        tv3 = fd.ops.sum(tv2, [0])
        fd.add_output(tv3)
        tv5 = fd.ops.mul(tv3, fd.ops.full([6], 1.0))
        fd.add_output(fd.ops.set(tv5))
    tv1.set_memory_type(Shared).set_name("A")
    tv5.set_memory_type(Shared).set_name("B")
    return fd, tv3


def test_a1_simple_case():
    fd, tv3 = simple_case()
    plan = fd.lower(hazards="conservative").smem_plan
    assert plan.total_bytes == 52  # no reuse: 20 B, 24 B at 32
    assert fd.lower(hazards="precise").smem_plan.total_bytes == 24  # one thread: reuse is free
    tv3.axis(0).parallelize(ParallelType.TIDx)  # the block reduction is a barrier
    plan = fd.lower(hazards="conservative").smem_plan
    assert plan.tensor_bytes == 24
    assert plan.buffer("A").address == plan.buffer("B").address == 0
    # The RAW barrier before the block reduction (thread 0 writes the Global
    # tensor the block reads) frees A's bytes for the reduction's workspace.
    workspace = plan.buffer("T3_workspace")
    assert (workspace.address, workspace.bytes) == (0, 20)
    assert plan.total_bytes == 24
    assert plan.inserted_barriers == []


def needs_reordered_push():
    """A2 (H=5): A = tv0, B = tv1 = pad(A), C = tv5; A3 adds tv0.promote_reuse()."""
    with FusionDefinition() as fd:
        tv0 = fd.ops.full([5], 1.0)
        tv1 = fd.ops.pad(tv0, [0, 1])
        tv3 = fd.ops.sum(fd.ops.mul(tv1, tv1), [0])
        tv5 = fd.ops.mul(fd.ops.broadcast(tv3, [True]), tv1)
        fd.add_output(fd.ops.add(tv1, tv1))
        fd.add_output(fd.ops.neg(tv5))
    for tv, name in [(tv0, "A"), (tv1, "B"), (tv5, "C")]:
        tv.set_memory_type(Shared).set_name(name)
    return fd, tv0


def test_a2_a3_promote_reuse_inserts_one_barrier():
    fd, tv0 = needs_reordered_push()
    assert fd.lower(hazards="conservative").smem_plan.total_bytes == 84
    tv0.promote_reuse()
    kernel = fd.lower(hazards="conservative")
    plan = kernel.smem_plan
    assert plan.total_bytes == 56
    assert len(plan.inserted_barriers) == 1
    barrier = plan.inserted_barriers[0]
    # After A's last read, before C's first write.
    assert plan.buffer("A").last_read < barrier.position <= plan.buffer("C").first_write
    assert "A" in barrier.reason
    assert kernel.cuda.count("__syncthreads()") >= 1
    precise = fd.lower(hazards="precise").smem_plan
    assert (precise.total_bytes, precise.inserted_barriers) == (56, [])


def test_b1_tiled_gemm_plan_cuda_and_ptxas():
    kernel = tiled_gemm().lower()
    plan = kernel.smem_plan
    assert sorted(b.name for b in plan.buffers) == ["Asub", "Bsub", "Csub"]
    assert all(b.bytes == 4096 for b in plan.buffers)
    assert (plan.total_bytes, plan.no_reuse_bytes) == (8192, 12288)
    assert plan.lower_bound_bytes == 8192 and plan.lower_bound_reached
    assert len(plan.inserted_barriers) <= 1
    c_sub = plan.buffer("Csub")
    assert c_sub.address in (plan.buffer("Asub").address, plan.buffer("Bsub").address)
    assert kernel.grid == (2, 2, 1) and kernel.block == (32, 32, 1)
    # The CUDA compiles and ptxas counts exactly the planned bytes.
    assert "__global__" in kernel.cuda
    assert kernel.ptxas.static_smem_bytes == 8192
    assert kernel.ptxas.registers > 0
    # JSON and SVG carry the same plan.
    as_json = json.loads(plan.json)
    assert as_json["total_bytes"] == 8192 and len(as_json["buffers"]) == 3
    assert plan.to_dict() == as_json
    assert plan.svg.startswith("<svg") and "Csub" in plan.svg
    assert "Csub" in plan.text and "8192" in plan.text
    assert "Asub" in kernel.kernel_ir


@pytest.mark.parametrize("device", DEVICES)
def test_b1_tiled_gemm_runs(device):
    fd = tiled_gemm()
    gen = torch.Generator().manual_seed(1)
    a, b = (torch.randn(64, 64, generator=gen).to(device) for _ in range(2))
    assert_matches(fd.execute([a, b]), a @ b, device)


def persistent_rnn_slice():
    """C1: w [256, 256] cached into Shared, rows split into 8 parts on BIDx."""
    with FusionDefinition() as fd:
        w = fd.define_tensor([256, 256])
        y = fd.ops.add(w, w)
        fd.add_output(y)
    w_s = w.cache_after().set_memory_type(Shared).set_name("w_s")
    w_l = w_s.cache_after().set_name("w_l")
    y.split(0, 8, inner_split=False)
    y.axis(0).parallelize(ParallelType.BIDx)
    y.axis(2).parallelize(ParallelType.TIDx)
    y.propagate_schedule()
    w_s.inline_at(1)
    w_l.inline_at(1)
    return fd


def test_c1_allocation_is_one_block_slice():
    kernel = persistent_rnn_slice().lower()
    assert kernel.smem_plan.buffer("w_s").bytes == 32768
    assert kernel.shared_memory_bytes == 32768
    assert kernel.ptxas.static_smem_bytes == 32768
    assert kernel.grid == (8, 1, 1) and kernel.block == (256, 1, 1)


def test_c1_runs_on_cpu():
    fd = persistent_rnn_slice()
    w = torch.randn(256, 256, generator=torch.Generator().manual_seed(2))
    assert_matches(fd.execute([w]), w + w, "cpu")


def test_schedule_is_replayed_on_every_built_fusion():
    fd = tiled_gemm()
    first, second = fd.build_fusion(), fd.build_fusion()
    assert first is not second
    assert str(first) == str(second) == fd.fusion_text()
    assert fd.is_scheduled


def test_schedule_hook_of_a_subclass():
    class PointwiseOnThreads(FusionDefinition):
        def definition(self):
            self.x = self.define_tensor([-1])
            self.y = self.ops.relu(self.x)
            self.add_output(self.y)

        def schedule(self):
            self.y.split(0, 64).axis(0).parallelize(ParallelType.BIDx)
            self.y.axis(1).parallelize(ParallelType.TIDx)

    fd = PointwiseOnThreads()
    kernel = fd.lower()
    assert kernel.block == (64, 1, 1)
    assert kernel.grid[0] != 1  # ceilDiv of the symbolic extent
    x = torch.randn(200, generator=torch.Generator().manual_seed(3))
    assert_matches(fd.execute([x]), torch.relu(x), "cpu")


def test_schedule_queries_reflect_the_primitives():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        y = fd.ops.exp(x)
        fd.add_output(y)
    assert y.num_loop_axes == 2
    y.merge(0).split(0, 128)
    assert y.num_loop_axes == 2
    assert y.axis(1).extent == 128
    y.axis(1).parallelize(ParallelType.TIDx)
    assert y.axis(1).parallel_type == ParallelType.TIDx
    assert "TIDx" in y.schedule_string()
