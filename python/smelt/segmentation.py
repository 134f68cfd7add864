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
from typing import Any, List


def value_name(val: Any) -> str:
    """A value's name in the complete fusion, as segments name it."""
    return f"T{val.number}" if val.is_tensor else val.symbol


@dataclass(frozen=True)
class Segment:
    fusion: Any              # the segment's unscheduled _C.Fusion
    scheduler: str           # the scheduler that takes it
    input_names: List[str]
    output_names: List[str]
