"""The abstract planner (smelt.plan_buffers) and the kernel planner's alias,
bound and alignment behaviour seen from Python (issue 20)."""
import random

import pytest

import smelt
from smelt import FusionDefinition, MemoryType, PlanBuffer, SmeltError, plan_buffers


def _three_buffer_fusion():
    with FusionDefinition() as fd:
        x = fd.define_tensor([32]); y = fd.define_tensor([64]); z = fd.define_tensor([32])
        a = fd.ops.set(x); fd.add_output(fd.ops.neg(a))
        b = fd.ops.set(y); fd.add_output(fd.ops.neg(b))
        c = fd.ops.set(z); fd.add_output(fd.ops.neg(c))
    for t, n in [(a, "A"), (b, "B"), (c, "C")]:
        t.set_memory_type(MemoryType.Shared).set_name(n)
    return fd


def test_alias_never_stretches_a_lifetime_when_it_costs_bytes():
    plan = _three_buffer_fusion().lower().smem_plan
    assert plan.total_bytes == 256  # was 384: C aliased A and stretched A over B
    assert plan.lower_bound_bytes == 256
    assert plan.status == "bound reached" and plan.optimal


def test_stack_mode_claims_no_optimum_below_the_true_bound():
    plan = _three_buffer_fusion().lower(allocator="stack").smem_plan
    assert plan.total_bytes == 384 and plan.lower_bound_bytes == 256
    assert not plan.optimal and plan.status == "heuristic"


def test_precise_never_above_conservative_nor_stack():
    fd = _three_buffer_fusion()
    precise = fd.lower(hazards="precise").smem_plan.total_bytes
    conservative = fd.lower(hazards="conservative").smem_plan.total_bytes
    stack = fd.lower(hazards="conservative", allocator="stack").smem_plan.total_bytes
    assert precise <= conservative <= stack


def test_min_shared_alignment_option():
    fd = _three_buffer_fusion()
    plan = fd.lower(min_shared_alignment=128).smem_plan
    assert all(b.alignment >= 128 and b.address % 128 == 0 for b in plan.buffers)
    with pytest.raises(SmeltError, match="power of two"):
        fd.lower(min_shared_alignment=48)


def test_over_limit_error_names_the_strategy():
    with pytest.raises(SmeltError) as info:
        _three_buffer_fusion().lower(hazards="conservative", max_shared_memory_bytes=300)
    assert "shared-memory plan ()" not in str(info.value)
    assert "shared-memory plan (" in str(info.value)


def test_plan_buffers_intervals():
    plan = plan_buffers([PlanBuffer("A", 128, live=(0, 3)), PlanBuffer("B", 256, live=(2, 5)),
                         PlanBuffer("C", 128, live=(4, 7))])
    assert plan.total_bytes == 384 == plan.lower_bound_bytes
    assert plan.optimal and plan.status == "bound reached"
    a, b, c = (plan.addresses[n] for n in "ABC")
    assert abs(a - b) >= 128 and abs(b - c) >= 128  # A-B and B-C overlap in time
    assert set(plan.conflicts) == {("A", "B"), ("B", "C")}
    assert plan.stack_total_bytes >= plan.total_bytes


def test_plan_buffers_conservative_needs_barriers():
    buffers = [("A", 64, 16, (0, 1)), ("B", 64, 16, (2, 3))]
    assert plan_buffers(buffers).total_bytes == 64  # precise: disjoint lifetimes share
    assert plan_buffers(buffers, hazards="conservative").total_bytes == 128
    assert plan_buffers(buffers, hazards="conservative", barriers=[1]).total_bytes == 64


def test_plan_buffers_explicit_conflicts_and_dicts():
    buffers = [{"name": n, "bytes": s} for n, s in [("a", 10), ("b", 20), ("c", 30), ("d", 40)]]
    cycle = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")]
    plan = plan_buffers(buffers, conflicts=cycle)
    for x, y in cycle:
        bx, by = plan.addresses[x], plan.addresses[y]
        sx, sy = dict(a=10, b=20, c=30, d=40)[x], dict(a=10, b=20, c=30, d=40)[y]
        assert bx + sx <= by or by + sy <= bx
    assert plan.lower_bound_bytes == 70 and plan.total_bytes >= 70
    assert plan.stack_total_bytes is None
    assert all(addr % 16 == 0 for addr in plan.addresses.values())


def test_plan_buffers_proves_an_optimum_above_the_bound():
    # Three pairwise-conflicting buffers whose padding makes the bound (96) unreachable.
    plan = plan_buffers([("a", 28, 16, (0, 5)), ("b", 32, 16, (0, 5)), ("c", 36, 16, (0, 5))])
    assert plan.total_bytes == 100 and plan.lower_bound_bytes == 96
    assert plan.optimal and plan.status == "optimal"
    heuristic = plan_buffers([("a", 28, 16, (0, 5)), ("b", 32, 16, (0, 5)), ("c", 36, 16, (0, 5))],
                             exact_search=False)
    assert heuristic.total_bytes >= plan.total_bytes


def test_plan_buffers_stack_allocator_and_alignment():
    buffers = [PlanBuffer("A", 20, live=(0, 2)), PlanBuffer("B", 24, live=(1, 3))]
    stack = plan_buffers(buffers, allocator="stack")
    assert stack.strategy == "stack" and stack.total_bytes == 52  # B (32 B padded) below A
    aligned = plan_buffers(buffers, min_alignment=128)
    assert aligned.total_bytes == 128 + 20 or aligned.total_bytes == 128 + 24
    assert all(a % 128 == 0 for a in aligned.addresses.values())


@pytest.mark.parametrize("bad, message", [
    (dict(buffers=[("A", 8, 16, (0, 1)), ("A", 8, 16, (0, 1))]), "twice"),
    (dict(buffers=[("A", 8, 16, None)]), "no live interval"),
    (dict(buffers=[("A", 8, 16, (0, 1))], conflicts=[("A", "Z")]), "unknown buffer 'Z'"),
    (dict(buffers=[("A", 8, 24, (0, 1))]), "alignment"),
    (dict(buffers=[("A", 8, 16, (3, 1))]), "A"),
    (dict(buffers=[("A", 8, 16, (0, 1))], hazards="maybe"), "hazards"),
    (dict(buffers=[("A", 8, 16, (0, 1))], conflicts=[("A", "A")]), "itself"),
])
def test_plan_buffers_rejects_bad_input(bad, message):
    with pytest.raises(SmeltError, match=message):
        plan_buffers(**bad)


def test_plan_buffers_random_sets_are_valid_and_monotone():
    rng = random.Random(20)
    for _ in range(60):
        n = rng.randint(1, 24)
        buffers = []
        for i in range(n):
            first = rng.randint(0, 40)
            buffers.append(PlanBuffer(f"b{i}", rng.choice([4, 16, 100, 256, 1000]) * rng.randint(1, 8),
                                      rng.choice([16, 16, 16, 128]),
                                      (first, first + rng.randint(0, 10))))
        barriers = sorted(rng.sample(range(0, 50), rng.randint(0, 6)))
        precise = plan_buffers(buffers, barriers=barriers, time_limit_ms=5)
        conservative = plan_buffers(buffers, barriers=barriers, hazards="conservative",
                                    time_limit_ms=5)
        assert precise.total_bytes <= conservative.total_bytes <= conservative.stack_total_bytes
        for plan in (precise, conservative):
            assert plan.lower_bound_bytes <= plan.total_bytes
            assert plan.optimal == (plan.status in ("bound reached", "optimal"))
            sizes = {b.name: b.bytes for b in buffers}
            for x, y in plan.conflicts:
                ax, ay = plan.addresses[x], plan.addresses[y]
                assert ax + sizes[x] <= ay or ay + sizes[y] <= ax or 0 in (sizes[x], sizes[y])
            for b in buffers:
                assert plan.addresses[b.name] % b.alignment == 0
                assert plan.addresses[b.name] + b.bytes <= plan.total_bytes


def test_exported_from_the_package():
    assert smelt.plan_buffers is plan_buffers and "plan_buffers" in smelt.__all__
