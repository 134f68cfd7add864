"""CUDA graphs over smelt's compiled graphs: `mode="reduce-overhead"`.

A small model's forward is host-bound: each fusion call checks its inputs,
finds its kernels and launches them, and every op left to torch dispatches
too. Recorded once as a CUDA graph, a forward is one replay. The recording
and replay are torch's own (Inductor's CUDA graph trees: one memory pool
for every graph, inputs copied into static buffers unless they are
parameters, outputs valid until the next replay); this module decides
whether a graph may be recorded and hands torch the graph smelt compiled.

A graph is not recorded (it runs as compiled, and torch counts the skip in
torch._dynamo.utils.counters["inductor"]["cudagraph_skips"]) when torch's
own check refuses it: CPU tensors, several devices, an op that cannot be
captured, or an input it mutates.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

import torch
import torch.fx
from torch._dynamo.backends.cudagraphs import (check_for_skip, find_input_mutations,
                                               get_device_index, get_stack_traces)
from torch._inductor.cudagraph_utils import (get_placeholder_info,
                                             log_cudagraph_skip_and_bump_counter)
from torch._inductor.utils import count_tangents, num_fw_fixed_arguments


def recorded(compile_graph: Callable[[torch.fx.GraphModule, List[Any]], Callable],
             aot_graph: torch.fx.GraphModule, aot_inputs: List[Any], fixed_inputs: int,
             static_inputs: Sequence[int], *, is_backward: bool,
             is_inference: bool) -> Tuple[Callable, Optional[int]]:
    """compile_graph(aot_graph, aot_inputs) (a boxed function), recorded as a
    CUDA graph where torch's check allows it (the check reads the graph before
    compile_graph rewrites it; the first `fixed_inputs` may be mutated); and
    the device it was recorded for, None where it was not. Inputs at
    `static_inputs` are read where they lie (a replay copies the others into
    the graph's buffers)."""
    from torch._inductor.cudagraph_trees import cudagraphify_impl  # 0.8 s, this mode only
    skip = check_for_skip(aot_graph, fixed_inputs)
    if skip is not None:
        log_cudagraph_skip_and_bump_counter(f"skipping cudagraphs due to {skip}")
        return compile_graph(aot_graph, aot_inputs), None
    device = get_device_index(aot_graph)
    stack_traces = get_stack_traces(aot_graph)
    placeholders = get_placeholder_info(aot_graph.graph)
    mutated = find_input_mutations(aot_graph.graph)
    compiled = compile_graph(aot_graph, aot_inputs)
    replay = cudagraphify_impl(compiled, aot_inputs, static_inputs, device_index=device,
                               is_backward=is_backward, is_inference=is_inference,
                               stack_traces=stack_traces, placeholders=placeholders,
                               mutated_input_idxs=mutated)
    replay._boxed_call = True
    return replay, device


def backward_after_recorded_forward(compiled: Callable, device: int) -> Callable:
    """A backward run as compiled while its forward was recorded: torch's
    graph manager must know the forward's outputs are being consumed."""
    from torch._inductor.cudagraph_trees import get_manager
    manager = get_manager(device, create_if_none_exists=False)

    def run(inputs: List[Any]) -> Any:
        if manager is not None:
            manager.set_to_running_backward()
        return compiled(inputs)
    run._boxed_call = True
    return run


def fixed_forward_inputs(dynamo_inputs: int, aot_inputs: int) -> int:
    """How many of a forward graph's first inputs AOTAutograd lifted from the
    module (parameters and buffers: they keep their addresses)."""
    return num_fw_fixed_arguments(dynamo_inputs, aot_inputs)


def static_forward_inputs(fixed_inputs: int) -> List[int]:
    """The forward's inputs that keep their addresses between calls: with
    Dynamo inlining nn.Modules, the parameters are ordinary graph inputs that
    AOTAutograd marks static (a replay would otherwise copy every weight);
    else the lifted ones."""
    from torch._inductor.compile_fx import get_static_input_idxs
    return list(get_static_input_idxs(fixed_inputs))


def fixed_backward_inputs(aot_graph: torch.fx.GraphModule) -> int:
    """A backward graph's inputs saved by the recorded forward (all but the
    tangents) keep their addresses."""
    return count_tangents(aot_graph)
