"""The kernels an unscheduled fusion becomes, as the segmenter made them.

nvFuser's entry point is fd.segment(inputs): one FusionDefinition per
segment (SegmentDefinition in fusion_definition.py), an empty list when the
whole fusion is one kernel. This module holds what the executor reports of
each segment: the segmenter's own unscheduled fusion, so running it alone
schedules and compiles the same kernel the whole fusion runs. Values are
named as in the complete fusion ("T<n>" for a tensor, the symbol for a
scalar input): a segment's `input_names` are values of the complete fusion
or outputs (`output_names`) of earlier segments.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Sequence


def value_name(val: Any) -> str:
    """A value's name in the complete fusion, as segments name it."""
    return f"T{val.number}" if val.is_tensor else val.symbol


@dataclass(frozen=True)
class Segment:
    fusion: Any              # the segment's unscheduled _C.Fusion
    scheduler: str           # the scheduler that takes it
    input_names: List[str]
    output_names: List[str]


def index_space_maps(handles: Sequence[Any], segments: Sequence[Any]) -> Dict[Any, Dict[Any, Any]]:
    """nvFuser's segment_index_space_maps: per segment definition, each of
    its inputs and outputs (handles) -> the value of the complete
    definition it stands for (a handle of `handles`; the name where the
    definition has no handle of it, as for values of a concretized fusion)."""
    by_name = {value_name(h.ir): h for h in handles}
    return {s: {h: by_name.get(name, name) for h, name in
                zip(list(s.inputs) + list(s.outputs), list(s.input_names) + list(s.output_names))}
            for s in segments}
