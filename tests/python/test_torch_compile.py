"""torch.compile(model, backend="smelt") on small models matches eager (CPU
tensors run through the simulator, so sizes stay small); unsupported ops fall
back to torch and the partition report says what was fused."""
import tomllib

import pytest
import torch
import torch.nn.functional as F

import smelt.backend
from smelt import fusion_cache
from frontend_helpers import DEVICES


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def compiled_matches_eager(model, *inputs, device="cpu"):
    model = model.to(device) if isinstance(model, torch.nn.Module) else model
    inputs = [x.to(device) for x in inputs]
    with torch.no_grad():
        expected = model(*inputs)
        actual = torch.compile(model, backend="smelt")(*inputs)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    report = smelt.backend.last_report()
    # What was fused ran in smelt: no partition fell back to torch at run time.
    assert all(p.fallback_runs == 0 for p in report.partitions), str(report)
    return report


def gen(seed):
    return torch.Generator().manual_seed(seed)


class MLPBlock(torch.nn.Module):
    def __init__(self, approximate="tanh"):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 8)
        self.approximate = approximate

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate=self.approximate))


@pytest.mark.parametrize("device", DEVICES)
def test_mlp_block_with_gelu_and_bias(device):
    report = compiled_matches_eager(MLPBlock(), torch.randn(4, 8, generator=gen(1)), device=device)
    fused = report.fused_ops()
    assert fused["mm.default"] == 2 and fused["gelu.default"] == 1, str(report)
    assert fused["add.Tensor"] == 2, str(report)  # the biases
    # The weights' transposes are fused without a copy: the fusion takes each
    # weight as the view w.t() and the matmul kernels read it in that layout.
    assert report.unsupported_ops == {} and fused["t.default"] == 2, str(report)
    assert all(p.smelt_runs == 1 and p.fallback_runs == 0 for p in report.partitions), str(report)
    (part,) = report.partitions
    schedulers = [line.split()[1] for line in part.last_run.splitlines() if line[:1].isdigit()]
    if device == "cpu":  # the simulator: smelt's matmul kernels, epilogues inside
        assert schedulers == ["matmul", "matmul"], part.last_run
        assert part.last_run.count("layout: TN") == 2, part.last_run
    else:  # a GPU: the library's matmuls, bias + GELU and the bias in smelt's kernels
        assert schedulers == ["library_matmul", "pointwise", "library_matmul", "pointwise"], \
            part.last_run


def test_softmax_is_one_fusion():
    report = compiled_matches_eager(lambda x: torch.softmax(x, dim=-1),
                                    torch.randn(4, 10, generator=gen(2)))
    assert len(report.partitions) == 1 and not report.unsupported, str(report)
    assert {"amax.default", "exp.default", "sum.dim_IntList", "div.Tensor"} <= set(report.fused_ops())
    assert report.partitions[0].smelt_runs == 1


def test_layer_norm():
    ln = torch.nn.LayerNorm(12)
    with torch.no_grad():
        ln.weight.copy_(torch.randn(12, generator=gen(3)))
        ln.bias.copy_(torch.randn(12, generator=gen(4)))
    report = compiled_matches_eager(ln, torch.randn(3, 12, generator=gen(5)))
    assert report.fused_node_count >= 5, str(report)


def test_residual_add():
    report = compiled_matches_eager(lambda x, y: torch.relu(x + y) + x,
                                    torch.randn(5, 6, generator=gen(6)),
                                    torch.randn(5, 6, generator=gen(7)))
    assert len(report.partitions) == 1 and not report.unsupported, str(report)


def test_attention_scores():
    def scores(q, k):
        return torch.softmax(q @ k.transpose(-2, -1) * 0.25, dim=-1)
    report = compiled_matches_eager(scores, torch.randn(4, 8, generator=gen(8)),
                                    torch.randn(6, 8, generator=gen(9)))
    assert {"mm.default", "amax.default", "exp.default"} <= set(report.fused_ops()), str(report)


@pytest.mark.parametrize("model,ops", [
    (lambda x: torch.relu(x).permute(0, 2, 1) * 2.0, {"permute.default", "relu.default"}),
    (lambda x: torch.flatten(x, 1) * 2.0 + 1.0, {"view.default", "add.Tensor"}),
    (lambda x: torch.tanh(x).unsqueeze(1) - x.unsqueeze(0), {"unsqueeze.default", "sub.Tensor"}),
], ids=["permute", "flatten", "unsqueeze"])
def test_layout_ops_fuse_with_their_neighbours(model, ops):
    report = compiled_matches_eager(model, torch.randn(2, 3, 4, generator=gen(13)))
    assert len(report.partitions) == 1 and not report.unsupported, str(report)
    assert ops <= set(report.fused_ops()), str(report)
    assert report.partitions[0].smelt_runs == 1, str(report)


def test_unsupported_op_falls_back_and_is_reported():
    def model(x):
        return torch.sort(torch.exp(x), dim=1).values * 2.0
    report = compiled_matches_eager(model, torch.randn(3, 9, generator=gen(10)))
    assert "sort.default" in report.unsupported_ops, str(report)
    assert report.fused_ops()["exp.default"] == 1
    text = str(report)
    assert "sort" in text and "not supported" in text and "exp" in text


def test_a_scan_is_fused_as_one_pass_not_a_masked_reduction():
    def model(x):
        return torch.cumsum(torch.exp(x), dim=1) * 2.0
    report = compiled_matches_eager(model, torch.randn(3, 500, generator=gen(10)))
    sums = sum(count for op, count in report.fused_ops().items() if op.startswith("sum."))
    assert not report.unsupported_ops and sums == 0, str(report)
    assert report.fused_ops()["cumsum.default"] == 1, str(report)


def test_unsupported_dtype_falls_back():
    x = torch.randn(3, 4, dtype=torch.complex64, generator=gen(11))
    report = compiled_matches_eager(lambda x: x * 2 + 1, x)
    assert not report.partitions and report.unsupported, str(report)


def test_new_shapes_reuse_the_fusion_cache():
    fusion_cache().clear()

    def model(x):
        return torch.tanh(x) * 3.0
    compiled = torch.compile(model, backend="smelt")
    for shape in [(2, 3), (4, 5), (6, 7)]:
        x = torch.randn(*shape, generator=gen(sum(shape)))
        torch.testing.assert_close(compiled(x), model(x))
    # Dynamo traces the first shape static (a kernel specialized on it), then
    # recompiles with symbolic sizes: one fusion serves the other two shapes.
    stats = fusion_cache().stats()
    assert stats.entries == 2 and stats.hits >= 1, stats
    assert sum(p.smelt_runs for r in smelt.backend.reports() for p in r.partitions) == 3


def test_backend_is_registered_under_its_name(repo_root):
    assert torch._dynamo.lookup_backend("smelt") is smelt.backend.smelt_backend
    # Installed copies register through the entry point instead of the import.
    with open(repo_root / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["entry-points"]["torch_dynamo_backends"] == {
        "smelt": "smelt.backend:smelt_backend"}


def test_training_step_matches_eager():
    mlp = MLPBlock()
    x = torch.randn(4, 8, generator=gen(12))
    eager_loss = mlp(x).square().sum()
    eager_loss.backward()
    expected = [p.grad.clone() for p in mlp.parameters()]
    mlp.zero_grad()
    loss = torch.compile(mlp, backend="smelt")(x).square().sum()
    loss.backward()
    torch.testing.assert_close(loss, eager_loss)
    for p, g in zip(mlp.parameters(), expected):
        torch.testing.assert_close(p.grad, g, rtol=1e-4, atol=1e-5)
    assert len(smelt.backend.reports()) == 2  # forward and backward graphs


def test_fused_fraction_leaves_out_attention_and_its_tuple_indexing():
    def fn(q, k, v):
        return F.scaled_dot_product_attention(q.tanh(), k, v) * 2

    q, k, v = (torch.randn(1, 2, 4, 8, generator=gen(13 + i)) for i in range(3))
    smelt.backend.reset_reports()
    torch.compile(fn, backend="smelt")(q, k, v)
    torch._dynamo.reset()
    (report,) = smelt.backend.reports()
    # tanh and mul fused; attention and the getitem of its result are a library's
    assert report.library_nodes == 2, str(report)
    assert report.fused_fraction == report.fused_node_count / (report.total_nodes - 2) == 1.0, str(report)


def _kernel_tensor_parameters(kernel) -> int:
    source = kernel.cuda
    signature = source[source.index("__global__"):]
    return signature[:signature.index(") {")].count("smelt::Tensor<")


def test_equal_nodes_are_computed_once():
    # Three projections of one normalized input, each through its own view
    # (as a transformer's q/k/v linears are traced): one view node feeds the
    # three matmuls, so the normalization's kernel writes its result once
    # (it wrote it three times, once per view). Two equal bmms are one.
    def fn(x, wq, wk, wv, a, b):
        h = F.layer_norm(x, (8,))
        q, k, v = (h.view(-1, 8) @ w for w in (wq, wk, wv))
        return q, k, v, torch.bmm(a, b) + torch.bmm(a, b).relu()

    x = torch.randn(2, 3, 8, generator=gen(30))
    ws = [torch.randn(8, 8, generator=gen(31 + i)) for i in range(3)]
    a, b = torch.randn(2, 3, 5, generator=gen(34)), torch.randn(2, 5, 4, generator=gen(35))
    smelt.backend.reset_reports()
    actual = torch.compile(fn, backend="smelt")(x, *ws, a, b)
    for got, want in zip(actual, fn(x, *ws, a, b)):
        torch.testing.assert_close(got, want)
        assert got.stride() == want.stride()
    (report,) = smelt.backend.reports()
    ops = report.fused_ops()
    assert ops["view.default"] == 1 and ops["bmm.default"] == 1, str(report)
    runs = "\n".join(p.last_run for p in report.partitions)
    schedulers = [line.split()[1] for line in runs.splitlines() if line[:1].isdigit()]
    assert sorted(schedulers) == ["matmul"] * 4 + ["persistent"], runs
    (norm,) = [k for p in report.partitions for k, s in zip(p.kernels, schedulers) if s == "persistent"]
    assert _kernel_tensor_parameters(norm) == 2, norm.cuda  # x in, the normalized rows out


def test_fused_fraction_leaves_out_views_left_in_torch():
    # A transposed weight used by the forward's matmul and returned (as
    # AOTAutograd saves it for the backward) stays a view in torch, which
    # launches nothing: not counted as work left unfused.
    def fn(x, w):
        t = w.t()
        return x @ t, t

    x, w = torch.randn(4, 8, generator=gen(40)), torch.randn(6, 8, generator=gen(41))
    smelt.backend.reset_reports()
    torch.compile(fn, backend="smelt")(x, w)
    (report,) = smelt.backend.reports()
    assert report.free_view_nodes == report.torch_ops["t.default"] == 1, str(report)
    assert report.torch_launches() == 0, str(report)
    assert report.fused_fraction == 1.0, str(report)


def test_partition_without_tensor_inputs_runs_where_torch_put_its_outputs():
    """An arange computed alone (llama's position ids) is a partition with no
    tensor inputs: it must run on its outputs' device (a CUDA model's bmm got
    a CPU tensor from it), so the partition records that device from the
    traced values (fake CUDA tensors need no GPU)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from smelt.fx.definition import translate_graph
    with FakeTensorMode():
        gm = make_fx(lambda: (torch.arange(8, device="cuda") * 2,))()
    assert translate_graph(gm).device == torch.device("cuda", 0)


@pytest.mark.parametrize("device", DEVICES)
def test_rotary_positions_from_an_arange_stay_on_the_model_device(device):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, 8, 2, dtype=torch.float, device=device) / 8))

    def rotary(x):
        positions = torch.arange(x.shape[1], device=x.device)[None, :, None].float()
        freqs = torch.matmul(positions, inv_freq[None, None, :])
        return x * freqs.cos().repeat(1, 1, 2)

    x = torch.randn(2, 5, 8, device=device)
    torch._dynamo.reset()
    got = torch.compile(rotary, backend="smelt")(x)
    assert got.device == x.device
    torch.testing.assert_close(got, rotary(x))


class NormMLP(torch.nn.Module):
    """Linear, GELU and layer norm: two fusions around a matmul."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(16, 32)
        self.norm = torch.nn.LayerNorm(32)

    def forward(self, x):
        return self.norm(F.gelu(self.fc(x))) * 2.0


def _cudagraph_skips():
    from torch._dynamo.utils import counters
    return counters["inductor"]["cudagraph_skips"]


@pytest.mark.parametrize("device", DEVICES)
def test_reduce_overhead_mode_replays_a_cuda_graph_where_torch_allows_one(device):
    """mode="reduce-overhead" as Inductor users write it: on a GPU the forward
    is recorded once and replayed (smelt's fusions run in the warm-up and the
    recording, never again, while every call's values follow its new inputs);
    on the CPU torch skips the recording and the graph runs as compiled."""
    model = NormMLP().to(device)
    compiled = torch.compile(model, backend="smelt", mode="reduce-overhead")
    skips = _cudagraph_skips()
    calls = 6
    with torch.no_grad():
        for call in range(calls):
            x = torch.randn(8, 16, generator=gen(call)).to(device)
            torch.testing.assert_close(compiled(x).clone(), model(x), rtol=1e-4, atol=1e-5)
    report = smelt.backend.last_report()
    assert report.partitions and all(p.fallback_runs == 0 for p in report.partitions), str(report)
    runs = [p.smelt_runs for p in report.partitions]
    if device == "cuda":
        assert _cudagraph_skips() == skips
        assert all(0 < n < calls for n in runs), runs  # the replays call no fusion
    else:
        assert _cudagraph_skips() == skips + 1
        assert runs == [calls] * len(runs), runs


@pytest.mark.parametrize("device", DEVICES)
def test_reduce_overhead_mode_trains_like_eager(device):
    """Forward and backward graphs recorded (on a GPU): gradients of several
    steps match eager's."""
    model = NormMLP().to(device)
    reference = NormMLP().to(device)
    compiled = torch.compile(model, backend="smelt", mode="reduce-overhead")
    for step in range(4):
        x = torch.randn(8, 16, generator=gen(10 + step)).to(device)
        for m, f in ((model, compiled), (reference, reference)):
            m.zero_grad()
            f(x).square().sum().backward()
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            # Layer norm's input gradient cancels: eager's float32 fc.weight
            # gradient is itself ~9e-5 from float64's (max ~0.06).
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=2e-4, msg=name)


def test_unknown_modes_and_options_are_errors_naming_the_choices():
    model = NormMLP()
    with pytest.raises(Exception, match="unknown mode 'fastest'.*reduce-overhead"):
        torch.compile(model, backend="smelt", mode="fastest")(torch.randn(2, 16))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="unknown option.*cuda_graphs.*cudagraphs"):
        torch.compile(model, backend="smelt", options={"cuda_graphs": True})(torch.randn(2, 16))


def test_compiled_graphs_take_their_inputs_boxed():
    """AOTAutograd calls a compiled graph with a list it must empty (so
    inputs can be freed early); torch's CUDA graph trees assert it."""
    def fn(x, y):
        return torch.relu(x) + y

    gm = torch.fx.symbolic_trace(fn)
    example = [torch.randn(3), torch.randn(3)]
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, value in zip(placeholders, example):  # what AOTAutograd's graphs carry
        node.meta["val"] = value
    compiled = smelt.backend._compiler("forward", None)(gm, example)
    args = list(example)
    out = compiled(args)
    assert args == []
    torch.testing.assert_close(out, torch.relu(example[0]) + example[1])


def test_reduce_overhead_mode_reads_parameters_where_they_lie():
    """A CUDA graph replay copies each input that is not static into the
    graph's buffers: the parameters (ordinary graph inputs while Dynamo
    inlines modules) must be static, or every call copies every weight (the
    H100 run: 29 device copies per gpt2 forward)."""
    from smelt.backend import cudagraphs
    from torch._dynamo.backends.common import aot_autograd
    seen = {}

    def forward(aot_graph, aot_inputs):
        fixed = cudagraphs.fixed_forward_inputs(seen["dynamo_inputs"], len(aot_inputs))
        seen["static"] = cudagraphs.static_forward_inputs(fixed)
        return aot_graph

    def backend(gm, example_inputs):
        seen["dynamo_inputs"] = len(example_inputs)
        seen["parameters"] = [i for i, x in enumerate(example_inputs)
                              if any(x is p for p in model.parameters())]
        return aot_autograd(fw_compiler=forward)(gm, example_inputs)

    model = NormMLP()
    with torch.no_grad():
        torch.compile(model, backend=backend)(torch.randn(2, 16))
    # Nothing was lifted (fixed == 0): the forward's inputs are Dynamo's.
    assert len(seen["parameters"]) == 4 and set(seen["parameters"]) <= set(seen["static"]), seen
    assert len(seen["static"]) == 4, seen  # the activation is copied


@pytest.mark.usefixtures("fresh_dynamo")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_floor_division_rounds_the_quotient_in_float(dtype):
    """torch floors (or truncates) the float quotient of half/bfloat16
    operands, then rounds: -5.28125 / 1.0546875 is -5.0074, floored -6. The
    quotient rounded to bfloat16 first is -5.0, floored -5 (the OpInfo
    sweep's bfloat16 floor_divide)."""
    a = torch.tensor([-5.28125, 7.5, -3.0], dtype=dtype)
    b = torch.tensor([1.0546875, 2.0, 0.7], dtype=dtype)

    def f(a, b):
        return torch.floor_divide(a, b), torch.div(a, b, rounding_mode="trunc")
    for got, want in zip(torch.compile(f, backend="smelt")(a, b), f(a, b)):
        assert torch.equal(got, want), (got, want)
