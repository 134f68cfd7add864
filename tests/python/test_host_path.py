"""What a repeated call does on the host (issue 41.4): execute() decides
once per definition and call options what does not change between calls
(smelt._execution.CallPlan), and the backend decides its partitions' matmul
policy when it compiles, so a call converts its arguments and runs."""
import pytest
import torch

import smelt.backend
from smelt import FusionDefinition, SmeltError, _C, fusion_cache
from smelt._host_scalars import size_bindings
from smelt.fusion_cache import FusionCache


def relu_plus_one() -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        fd.add_output(fd.ops.relu(fd.ops.add(x, 1.0)))
    return fd


def test_a_repeated_call_finds_its_executor_without_asking_the_cache(monkeypatch):
    fusion_cache().clear()
    fd = relu_plus_one()
    x = torch.randn(4, 8)
    fd.execute([x])
    asked = []
    original = FusionCache.executor
    monkeypatch.setattr(FusionCache, "executor",
                        lambda self, *args: asked.append(args[1]) or original(self, *args))
    for _ in range(3):
        torch.testing.assert_close(fd.execute([x])[0], (x + 1).relu())
    assert asked == []
    assert len(fd.state.plans) == 1
    assert fusion_cache().stats().hits == 3  # the entry is still looked up per call


def test_a_cleared_cache_builds_the_executor_again():
    fusion_cache().clear()
    fd = relu_plus_one()
    fd.execute([torch.randn(4, 8)])
    fusion_cache().clear()
    fd.execute([torch.randn(4, 8)])
    assert fusion_cache().stats().executors_built == 1


def test_direct_calls_read_the_matmul_environment_on_every_call(monkeypatch):
    fd = relu_plus_one()
    x = torch.randn(4, 8)
    fd.execute([x])
    monkeypatch.setenv("SMELT_MATMUL", "fastest")
    with pytest.raises(SmeltError, match="matmul must be one of"):
        fd.execute([x])


def test_recording_after_a_run_drops_the_plans():
    fd = relu_plus_one()
    fd.execute([torch.randn(4, 8)])
    assert fd.state.plans
    fd.outputs[0].split(1, 4)
    assert not fd.state.plans


@pytest.mark.usefixtures("fresh_dynamo")
def test_partitions_decide_their_matmul_policy_when_compiled(monkeypatch):
    """The environment is read when the graph compiles: a value set later
    (here one that would be refused) changes nothing in its calls."""
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    compiled = torch.compile(lambda x, w: torch.relu(x @ w.t()), backend="smelt")
    compiled(x, w)
    monkeypatch.setenv("SMELT_MATMUL", "fastest")
    torch.testing.assert_close(compiled(x, w), torch.relu(x @ w.t()))
    (report,) = smelt.backend.reports()
    assert [(p.smelt_runs, p.fallback_runs) for p in report.partitions] == [(2, 0)], str(report)


def test_size_bindings_name_the_extents_the_kernel_reads():
    """The run's size bindings, and the extents of a definition, use the
    names fusion/symbols.h gives (through _C): one spelling end to end."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 4, -1])
        fd.add_output(fd.ops.relu(x))
    tv = x.ir
    first, _, last = (d.size for d in tv.logical_no_reductions)
    assert [str(first), str(last)] == [_C.size_symbol(tv, 0), _C.size_symbol(tv, 2)]
    assert size_bindings([tv], [torch.empty(3, 4, 5)]) == {
        str(first): 3, _C.size_symbol(tv, 1): 4, str(last): 5}
    assert _C.is_size_symbol(str(first))
    assert not any(_C.is_size_symbol(s) for s in ("threadIdx.x", str(first).replace("size", "stride")))
    assert (first * last * first).symbols == [str(first), str(last)]
