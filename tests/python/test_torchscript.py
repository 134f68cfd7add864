"""smelt.enable_torchscript_fusion(): supported subgraphs of scripted
functions run as smelt fusions; the rest stays with TorchScript."""
import pytest
import torch

import smelt
from smelt.torchscript import torchscript_reports


@pytest.fixture
def fusion_enabled():
    smelt.enable_torchscript_fusion()
    yield
    smelt.enable_torchscript_fusion(False)


def run_optimized(fn, *inputs):
    """Runs a scripted function until the profiling executor has optimized it."""
    scripted = torch.jit.script(fn)
    for _ in range(3):
        result = scripted(*inputs)
    return scripted, result


def test_scripted_pointwise_runs_in_smelt(fusion_enabled):
    def fn(x, y):
        return torch.relu(x + y) * 2.0

    x, y = torch.randn(4, 5), torch.randn(4, 5)
    scripted, result = run_optimized(fn, x, y)
    torch.testing.assert_close(result, fn(x, y))
    groups = torchscript_reports()
    assert len(groups) == 1 and groups[0].fallback_reason is None, groups
    assert groups[0].ops == ["aten::add", "aten::relu", "aten::mul"]
    assert groups[0].smelt_runs >= 1
    assert "smelt::FusionGroup" in str(scripted.graph_for(x, y))


def test_unsupported_nodes_stay_in_torchscript(fusion_enabled):
    def fn(x):
        return torch.sort(torch.exp(x) * 2.0, 1).values

    x = torch.randn(3, 4)
    scripted, result = run_optimized(fn, x)
    torch.testing.assert_close(result, fn(x))
    groups = torchscript_reports()
    assert [g.ops for g in groups] == [["aten::exp", "aten::mul"]], groups
    assert groups[0].fallback_reason is None and groups[0].smelt_runs >= 1, groups
    assert "aten::sort" in str(scripted.graph_for(x))


def test_a_scan_joins_its_neighbours_in_the_fusion_group(fusion_enabled):
    def fn(x):
        return torch.cumsum(torch.exp(x) * 2.0, 1)

    x = torch.randn(3, 40)
    scripted, result = run_optimized(fn, x)
    torch.testing.assert_close(result, fn(x))
    groups = torchscript_reports()
    assert [g.ops for g in groups] == [["aten::exp", "aten::mul", "aten::cumsum"]], groups
    assert groups[0].fallback_reason is None and groups[0].smelt_runs >= 1, groups


def test_disabled_pass_leaves_graphs_alone():
    smelt.enable_torchscript_fusion(False)

    def fn(x):
        return torch.tanh(x) + 1.0

    x = torch.randn(3, 4)
    scripted, result = run_optimized(fn, x)
    torch.testing.assert_close(result, fn(x))
    assert "smelt::FusionGroup" not in str(scripted.graph_for(x))
