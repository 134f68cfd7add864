"""The torch.compile backend: `torch.compile(model, backend="smelt")`.

AOTAutograd turns Dynamo's graph into ATen graphs (forward, and backward when
training), decomposing composite ops (softmax, layer norm, addmm, ...)
into ones smelt translates. Each graph is partitioned (partition.py): the
supported parts run as smelt fusions (the fusion cache reuses their kernels
across recompilations and input shapes), everything else runs in torch, and
a fusion that smelt refuses at run time falls back to torch too: compiling
with smelt never makes a model fail. `mode="reduce-overhead"` replays each
compiled graph as a CUDA graph (cudagraphs.py), as it does for Inductor.

The backend is registered under the name "smelt" through the
`torch_dynamo_backends` entry point of the installed package, and by
importing this module (for the build tree, where no entry point exists).
`reports()` / `last_report()` tell what each compiled graph fused.
"""
from __future__ import annotations

import functools
import importlib.metadata
from typing import Any, List, Optional

import torch
from torch._decomp import get_decompositions
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend
from torch._prims_common import get_computation_dtype

from smelt._execution import matmul_policy
from smelt.backend import cudagraphs
from smelt.backend.composites import COMPOSITES
from smelt.backend.conv_layout import channels_last_convolutions, conv_layout_option
from smelt.backend.partition import GraphReport, PartitionReport, partition_graph

__all__ = ["GraphReport", "PartitionReport", "last_report", "reports", "reset_reports",
           "smelt_backend"]

aten = torch.ops.aten

# Composite ops lowered to the ATen/prims ops smelt translates: forward
# normalizations and activations, and their backward ops (training graphs).
DECOMPOSITIONS = get_decompositions([
    aten._softmax, aten._log_softmax, aten.addmm, aten.baddbmm, aten.linear, aten.mean,
    aten.native_layer_norm, aten.silu, aten.var_mean,
    aten._native_batch_norm_legit_no_training, aten._native_batch_norm_legit,
    aten._native_batch_norm_legit_functional,
    aten.native_group_norm, aten.var.correction, aten.std.correction,
    aten.hardtanh, aten.leaky_relu, aten.elu, aten.softplus, aten.hardswish, aten.hardsigmoid,
    aten.mish, aten.clamp, aten.clamp_min, aten.clamp_max, aten.rsub, aten.masked_fill,
    aten.detach, aten.zeros_like, aten.ones_like,
    aten.native_layer_norm_backward, aten.native_batch_norm_backward,
    aten.native_group_norm_backward, aten._softmax_backward_data,
    aten._log_softmax_backward_data, aten.threshold_backward, aten.tanh_backward,
    aten.gelu_backward, aten.sigmoid_backward, aten.silu_backward,
    # Elementwise composites, losses and reductions whose decompositions are
    # ops smelt translates (issue 44: OpInfo breadth). Each was checked by
    # scripts/opinfo_sweep.py against eager: values, dtypes and strides.
    aten.deg2rad, aten.rad2deg, aten.frac, aten.sgn, aten.sign, aten.isposinf, aten.isneginf,
    aten.isnan, aten.isinf, aten.nan_to_num, aten.celu, aten.threshold,
    aten.log_sigmoid_forward, aten.glu, aten.logit, aten.xlogy, aten.special_xlog1py,
    aten.logaddexp, aten.logaddexp2, aten.fmax, aten.fmin, aten.heaviside, aten.logical_xor,
    aten.addcmul, aten.lerp, aten.special_entr,
    aten.mse_loss, aten.huber_loss, aten.smooth_l1_loss, aten.soft_margin_loss,
    aten.binary_cross_entropy, aten.binary_cross_entropy_with_logits,
    aten.std_mean, aten.logsumexp, aten.count_nonzero, aten.nansum, aten.all, aten.any,
    aten.amin, aten.aminmax, aten.linalg_vector_norm, aten.dist, aten._safe_softmax,
    aten.new_full, aten.new_ones, aten.fill, aten.ones, aten.zeros,
    aten.tril, aten.triu, aten.roll, aten.stack, aten.flip, aten.rot90, aten.diag_embed,
    aten.diagonal_copy, aten.eye, aten.linspace, aten.logspace, aten.pixel_shuffle,
    aten.pixel_unshuffle, aten.channel_shuffle, aten.narrow_copy, aten.index_fill,
    aten.index_copy, aten.index_add, aten.embedding_dense_backward, aten.take, aten.select_scatter, aten.slice_scatter,
    aten.renorm, aten.native_dropout_backward, aten.mvlgamma, aten.addr, aten.dot, aten.vdot,
    aten.mv, aten.addmv, aten.nll_loss_forward, aten.im2col, aten.reflection_pad1d,
    aten.reflection_pad2d, aten.replication_pad1d, aten.replication_pad2d,
    aten._adaptive_avg_pool2d, aten._prelu_kernel, aten.round, aten.unfold, aten.repeat,
    aten.expand_copy, aten.permute_copy, aten.transpose_copy,
    aten.t_copy, aten.squeeze_copy, aten.unsqueeze_copy, aten.view_copy, aten.alias_copy,
    aten.unbind_copy, aten.split_with_sizes_copy, aten.as_strided_copy, aten.linalg_cross,
    aten._chunk_cat, aten.block_diag, aten.sinc, aten.angle, aten.ldexp,
    aten._batch_norm_with_update_functional,
    aten.tril_indices, aten.triu_indices,
    aten._unsafe_masked_index,
    aten.max_unpool2d, aten.max_unpool3d, aten._unsafe_masked_index_put_accumulate,
])


def _shifted_layer_norm(input, normalized_shape, weight, bias, eps):
    """native_layer_norm as torch decomposes it, on the rows shifted by their
    maximum (layer norm does not change when a row is shifted; the mean is
    shifted back). Without the shift, a constant row (a where() or clamp
    filling it with one value) has a mean sum / N that rounds away from the
    value, and rsqrt(0 + eps) multiplies the rounding by up to 316 (outputs
    of 4e-5 where eager's Welford mean gives exactly 0); shifted, its
    elements are exactly 0. One more reduction (max) in the same kernel."""
    axis = input.dim() - len(normalized_shape)
    if input.numel() == 0 or axis < 0:
        return _TORCH_LAYER_NORM(input, normalized_shape, weight, bias, eps)
    x = input.to(get_computation_dtype(input.dtype))
    shift = torch.amax(x, list(range(axis, input.dim())), keepdim=True)
    out, mean, rstd = _TORCH_LAYER_NORM(x - shift, normalized_shape, weight, bias, eps)
    mean = mean + shift
    if input.device.type in ("cpu", "mtia"):  # torch's dtypes for the statistics
        mean, rstd = mean.to(input.dtype), rstd.to(input.dtype)
    return out.to(input.dtype), mean, rstd


# A decomposition whose work grows faster than its input, taken only while it
# stays small (else torch runs the op itself): isin compares every element
# with every test element. Up to this size that is a few reductions' work.
# (The scans run in smelt's scan kernels, linear in their extent: fx/scans.py.)
MAX_DECOMPOSED_ISIN_ELEMENTS = 128


def _decomposed_while(small, op):
    decomposition = get_decompositions([op])[op]

    def decompose(*args, **kwargs):
        return decomposition(*args, **kwargs) if small(*args) else NotImplemented
    DECOMPOSITIONS[op] = decompose


_decomposed_while(lambda elements, test_elements, *_: not isinstance(test_elements, torch.Tensor)
                  or test_elements.numel() <= MAX_DECOMPOSED_ISIN_ELEMENTS,
                  aten.isin.Tensor_Tensor)

DECOMPOSITIONS.update(COMPOSITES)  # smelt's own (composites.py)
_TORCH_LAYER_NORM = DECOMPOSITIONS[aten.native_layer_norm.default]
DECOMPOSITIONS[aten.native_layer_norm.default] = _shifted_layer_norm

_REPORTS: List[GraphReport] = []


def reports() -> List[GraphReport]:
    """Reports of every graph compiled since the last reset, in order."""
    return list(_REPORTS)


def last_report() -> GraphReport:
    if not _REPORTS:
        raise RuntimeError("no graph was compiled with the smelt backend yet")
    return _REPORTS[-1]


def reset_reports() -> None:
    _REPORTS.clear()


def _compiler(kind: str, matmul: Optional[str], conv_layout: Optional[str] = None):
    """conv_layout: the option for an inference graph (conv_layout.py); None
    for training graphs, which keep their traced layout."""
    def compile_graph(gm: torch.fx.GraphModule, example_inputs: List[Any]):
        layout = None
        if conv_layout is not None:
            layout = channels_last_convolutions(gm, example_inputs, conv_layout)
        compiled, report = partition_graph(gm, f"{kind} graph {len(_REPORTS)}", matmul)
        report.conv_layout = layout
        _REPORTS.append(report)

        def run(args: List[Any]):
            # AOTAutograd's boxed convention: the callee empties the list it is
            # given, so inputs the graph no longer needs can be freed (and
            # torch's CUDA graph trees check that it did).
            inputs = list(args)
            args.clear()
            return compiled.forward(*inputs)
        run._boxed_call = True
        return run
    return compile_graph


# torch.compile's modes as Inductor reads them: whether graphs are recorded
# as CUDA graphs.
MODES = {"default": False, "reduce-overhead": True, "max-autotune": True,
         "max-autotune-no-cudagraphs": False}
# Modes whose matmuls are autotuned on a GPU unless the matmul option says
# otherwise (autotune.py).
AUTOTUNE_MODES = ("max-autotune", "max-autotune-no-cudagraphs")
# cudagraphs: record CUDA graphs (as the mode says by default); matmul:
# "auto", "library" or "generated", who computes matmuls (fd.execute's), or
# "autotune", the faster measured per fusion on a GPU (autotune.py);
# conv_layout: "auto", "channels_last" or "as_traced", the memory order of an
# inference graph's convolutions (conv_layout.py).
OPTIONS = ("cudagraphs", "matmul", "conv_layout")


def _uses_cudagraphs(mode, options) -> bool:
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"smelt backend: unknown mode {mode!r}; the modes are "
                           f"{', '.join(MODES)}")
    unknown = sorted(set(options or {}) - set(OPTIONS))
    if unknown:
        raise RuntimeError(f"smelt backend: unknown option(s) {', '.join(unknown)}; the options "
                           f"are {', '.join(OPTIONS)}")
    return bool((options or {}).get("cudagraphs", MODES[mode or "default"]))


def _without_cudagraphs(gm: torch.fx.GraphModule, example_inputs: List[Any],
                        matmul: Optional[str], conv_layout: str):
    return aot_autograd(fw_compiler=_compiler("forward", matmul),
                        bw_compiler=_compiler("backward", matmul),
                        inference_compiler=_compiler("forward", matmul, conv_layout),
                        decompositions=DECOMPOSITIONS)(gm, example_inputs)


def _with_cudagraphs(gm: torch.fx.GraphModule, example_inputs: List[Any], matmul: Optional[str],
                     conv_layout: str):
    """AOTAutograd's graphs compiled by smelt, each recorded as a CUDA graph
    where torch allows it (cudagraphs.py)."""
    compile_training_forward = _compiler("forward", matmul)
    compile_inference = _compiler("forward", matmul, conv_layout)
    compile_backward = _compiler("backward", matmul)
    recorded_on: List[Any] = [None]  # the forward's device, None if not recorded

    def forward(aot_graph, aot_inputs, is_inference=False):
        fixed = cudagraphs.fixed_forward_inputs(len(example_inputs), len(aot_inputs))
        compiled, recorded_on[0] = cudagraphs.recorded(
            compile_inference if is_inference else compile_training_forward, aot_graph,
            aot_inputs, fixed, cudagraphs.static_forward_inputs(fixed),
            is_backward=False, is_inference=is_inference)
        return compiled

    def backward(aot_graph, aot_inputs):
        if recorded_on[0] is None:
            return compile_backward(aot_graph, aot_inputs)
        fixed = cudagraphs.fixed_backward_inputs(aot_graph)
        compiled, device = cudagraphs.recorded(
            compile_backward, aot_graph, aot_inputs, fixed, range(fixed), is_backward=True,
            is_inference=False)
        if device is None:
            return cudagraphs.backward_after_recorded_forward(compiled, recorded_on[0])
        return compiled

    return aot_autograd(fw_compiler=forward, bw_compiler=backward,
                        inference_compiler=functools.partial(forward, is_inference=True),
                        decompositions=DECOMPOSITIONS)(gm, example_inputs)


def smelt_backend(gm: torch.fx.GraphModule, example_inputs: List[Any], mode=None, options=None):
    """The backend torch.compile calls: `torch.compile(model, backend="smelt")`,
    with `mode="reduce-overhead"` (or `options={"cudagraphs": True}`) to
    replay each compiled graph as a CUDA graph."""
    cuda_graphs = _uses_cudagraphs(mode, options)
    matmul = (options or {}).get("matmul", "autotune" if mode in AUTOTUNE_MODES else None)
    if matmul not in (None, "autotune"):
        matmul_policy(matmul)  # an unknown policy fails here, naming the choices
    conv_layout = conv_layout_option(options)
    if cuda_graphs:
        return _with_cudagraphs(gm, example_inputs, matmul, conv_layout)
    return _without_cudagraphs(gm, example_inputs, matmul, conv_layout)


def _register() -> None:
    names = importlib.metadata.entry_points(group="torch_dynamo_backends").names
    if "smelt" not in names and "smelt" not in _COMPILER_FNS:
        register_backend(smelt_backend, name="smelt")


_register()
