"""Channels-last convolutions (python/smelt/backend/conv_layout.py): an
inference graph's convolutions run in NHWC, as Inductor runs them, and the
caller still sees eager's values and strides. On the CPU the "auto" default
leaves graphs as traced; conv_layout="channels_last" takes the GPU's
decision here, so these tests run it."""
import pytest
import torch

import smelt.backend
from models.zoo import CASES, output_tensors


class ConvolutionLayouts:
    """Whether each convolution the compiled graph runs gets channels-last
    input and weight: torch.ops.aten.convolution.default, which the graph's
    code looks up at each call, wrapped while in use."""

    def __init__(self):
        self.channels_last = []
        self.packet = torch.ops.aten.convolution
        self.original = self.packet.default

    def _record(self, x, w, *args):
        self.channels_last.append(all(t.is_contiguous(memory_format=torch.channels_last)
                                      for t in (x, w)))
        return self.original(x, w, *args)

    def __enter__(self):
        setattr(self.packet, "default", self._record)
        return self

    def __exit__(self, *exc):
        setattr(self.packet, "default", self.original)


def _compiled_run(model, args, conv_layout):
    """The compiled model's second call (the first compiles) and the layouts
    its convolutions got."""
    torch._dynamo.reset()
    smelt.backend.reset_reports()
    compiled = torch.compile(model, backend="smelt", options={"conv_layout": conv_layout})
    with torch.no_grad():
        compiled(*args)
        with ConvolutionLayouts() as layouts:
            out = compiled(*args)
    return out, layouts.channels_last, smelt.backend.last_report()


def _assert_like_eager(actual, expected, tol=1e-4):
    for a, e in zip(output_tensors(actual), output_tensors(expected)):
        torch.testing.assert_close(a, e, rtol=tol, atol=tol)
        assert a.stride() == e.stride()


def _run_like_eager(model, args, conv_layout):
    """_compiled_run, its outputs checked against eager's values and strides."""
    with torch.no_grad():
        expected = model(*args)
    out, channels_last, report = _compiled_run(model, args, conv_layout)
    _assert_like_eager(out, expected)
    return out, channels_last, report


@pytest.mark.parametrize("name,conversions", [("resnet18", 18), ("convnext", 5)])
def test_zoo_convolutions_run_channels_last_with_eager_outputs(name, conversions):
    build, make_inputs = CASES[name]
    torch.manual_seed(0)
    model = build().eval()
    args, _ = make_inputs(1)
    out, channels_last, report = _run_like_eager(model, args, "channels_last")
    assert channels_last and all(channels_last), channels_last
    # The image and every weight wider than 1x1 (a 1x1 or depthwise weight is
    # channels-last already); every activation comes out of a convolution.
    assert report.conv_layout.channels_last and report.conv_layout.converted == conversions
    assert all(not p.failed for p in report.partitions)


class Stem(torch.nn.Module):
    """resnet's stem (conv, batch norm, ReLU, 3x3 max pool) and a 1x1 conv."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 7, 2, 3, bias=False)
        self.bn = torch.nn.BatchNorm2d(16)
        self.pool = torch.nn.MaxPool2d(3, 2, 1)
        self.head = torch.nn.Conv2d(16, 8, 1)

    def forward(self, x):
        return self.head(self.pool(torch.relu(self.bn(self.conv(x)))))


def _stem(seed=0):
    torch.manual_seed(seed)
    model = Stem().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-1, 1)
        model.bn.running_var.uniform_(0.5, 2)
    return model


def test_stem_output_is_restored_to_eager_strides():
    model, x = _stem(), torch.randn(2, 3, 32, 32)
    out, channels_last, report = _run_like_eager(model, (x,), "channels_last")
    assert out.is_contiguous() and channels_last == [True, True]
    assert report.conv_layout.restored == 1, report.conv_layout


def test_channels_last_pool_reads_and_writes_along_channels():
    """The batch norm + ReLU kernel before the pool reads the NHWC
    convolution output with vector loads: the pool gathers from an NHWC
    tensor, so the intermediate between the kernels is NHWC too."""
    model, x = _stem(), torch.randn(8, 3, 64, 64)
    _, _, report = _compiled_run(model, (x,), "channels_last")
    pool = next(fd for fd, part in zip(report.definitions, report.partitions)
                if "max_pool2d_with_indices.default" in part.ops)
    fd, inputs, _ = next(call for call in report.traced_calls if call[0] is pool)
    fd.compile_for(inputs, device="cuda")
    kernels = fd.last_run_report().splitlines()
    assert len(kernels) >= 2 and "vectorized_inputs={0, 1, 2, 3, 4}" in kernels[0], kernels


def test_default_on_the_cpu_keeps_the_traced_layout():
    model, x = _stem(), torch.randn(2, 3, 32, 32)
    out, channels_last, report = _run_like_eager(model, (x,), "auto")
    assert channels_last == [False, False]
    assert report.conv_layout.reason == "convolutions not on a CUDA device"


class GroupedConv(torch.nn.Module):
    def __init__(self, groups):
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 8, 3, padding=1, groups=groups)

    def forward(self, x):
        return torch.relu(self.conv(x))


def test_grouped_convolution_with_channels_per_group_keeps_its_layout():
    x = torch.randn(2, 8, 10, 10)
    _, channels_last, report = _compiled_run(GroupedConv(groups=4), (x,), "channels_last")
    assert channels_last == [False]
    assert "grouped convolution with 2 input channels per group" in report.conv_layout.reason


def test_depthwise_convolution_runs_channels_last():
    model, x = GroupedConv(groups=8).eval(), torch.randn(2, 8, 10, 10)
    out, channels_last, report = _run_like_eager(model, (x,), "channels_last")
    assert channels_last == [True] and report.conv_layout.channels_last


class FlattenAfterConv(torch.nn.Module):
    """A view of the convolution's output that NHWC strides do not allow."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        y = self.conv(x)
        return y.view(y.shape[0], -1).sum(-1) + 1


def test_a_view_the_new_strides_break_keeps_the_traced_layout():
    model, x = FlattenAfterConv().eval(), torch.randn(2, 3, 8, 8)
    out, channels_last, report = _run_like_eager(model, (x,), "channels_last")
    assert not report.conv_layout.channels_last
    assert channels_last == [False]


def test_training_graphs_keep_the_traced_layout():
    model = _stem().train()
    x = torch.randn(2, 3, 32, 32, requires_grad=True)
    torch._dynamo.reset()
    smelt.backend.reset_reports()
    compiled = torch.compile(model, backend="smelt", options={"conv_layout": "channels_last"})
    compiled(x).sum().backward()
    assert [r.conv_layout for r in smelt.backend.reports()] == [None, None]


def test_unknown_conv_layout_is_refused_naming_the_choices():
    with pytest.raises(Exception, match="unknown conv_layout 'nhwc'.*auto, channels_last, as_traced"):
        torch.compile(_stem(), backend="smelt",
                      options={"conv_layout": "nhwc"})(torch.randn(1, 3, 8, 8))


@pytest.mark.parametrize("pool", [
    lambda x: torch.nn.functional.max_pool2d(x, 3, 2, 1),
    lambda x: torch.nn.functional.max_pool2d(x, 2, return_indices=True),
    lambda x: torch.nn.functional.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
    lambda x: torch.nn.functional.adaptive_max_pool2d(x, (3, 2)),
], ids=["max", "max_indices", "avg", "adaptive_max"])
def test_pools_of_a_channels_last_tensor_match_eager(pool):
    """Pools gather a channels-last input as [N, H*W, C] (fx/pools.py)."""
    x = torch.randn(2, 5, 9, 7).to(memory_format=torch.channels_last)
    expected = pool(torch.relu(x) * 2)
    torch._dynamo.reset()
    smelt.backend.reset_reports()
    actual = torch.compile(lambda t: pool(torch.relu(t) * 2), backend="smelt")(x)
    _assert_like_eager(actual, expected, tol=1e-6)
    report = smelt.backend.last_report()
    assert report.partitions and not report.torch_ops.get("max_pool2d_with_indices.default")


@pytest.mark.parametrize("name,converted", [
    # Depthwise and squeeze-excitation convolutions: only the image and the
    # stem's 3x3 weight are converted (depthwise and 1x1 weights are both).
    ("mobilenetv3_small_100", 2),
    # Each channel shuffle's contiguous() makes its output NCHW, so every
    # branch's next convolution input is converted again after the retrace.
    ("shufflenet_v2_x0_5", 50),
])
def test_library_models_run_channels_last_with_eager_outputs(name, converted):
    if name.startswith("shufflenet"):
        torchvision = pytest.importorskip("torchvision")
        build = lambda: torchvision.models.shufflenet_v2_x0_5(weights=None, num_classes=10)  # noqa: E731
    else:
        timm = pytest.importorskip("timm")
        build = lambda: timm.create_model(name, pretrained=False, num_classes=10)  # noqa: E731
    torch.manual_seed(0)
    model = build().eval()
    x = torch.randn(2, 3, 64, 64)
    out, channels_last, report = _run_like_eager(model, (x,), "channels_last")
    assert channels_last and all(channels_last)
    assert report.conv_layout.converted == converted, report.conv_layout
    assert all(not p.failed for p in report.partitions)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_stem_runs_channels_last_by_default():
    """On a GPU the default ("auto") converts: cuDNN gets NHWC tensors, and
    the output has eager's values and strides."""
    model, x = _stem().cuda(), torch.randn(4, 3, 32, 32, device="cuda")
    out, channels_last, report = _run_like_eager(model, (x,), "auto")
    assert channels_last == [True, True] and report.conv_layout.channels_last
