"""fd.segment(inputs): the kernels a fusion becomes, as FusionDefinitions.

nvFuser's entry point: segmenting a FusionDefinition for given inputs returns
one FusionDefinition per segment (an empty list when the whole fusion is one
kernel). Each segment here is the segmenter's own unscheduled fusion, so
running it alone schedules and compiles the same kernel the whole fusion
runs. Values are named as in the complete fusion ("T<n>" for a tensor, the
symbol for a scalar input): a segment's `input_names` are values of the
complete fusion or outputs (`output_names`) of earlier segments.
"""
from __future__ import annotations

import itertools
from typing import Any, List, Sequence

from smelt._C import SmeltError
from smelt.fusion_definition import FusionDefinition

_segment_keys = itertools.count()


def value_name(val: Any) -> str:
    """A value's name in the complete fusion, as segments name it."""
    return f"T{val.number}" if val.is_tensor else val.symbol


def segment(fd, inputs: Sequence[Any]) -> list:
    if fd.is_scheduled:
        raise SmeltError("segment: this fusion is scheduled by hand (one kernel); segmentation "
                         "is for unscheduled fusions")
    fd.compile_for(inputs)
    segments = fd._last_executor._impl.last_segments()
    if len(segments) <= 1:
        return []
    return [SegmentDefinition(s["fusion"], s["scheduler"], s["inputs"], s["outputs"])
            for s in segments]


class SegmentDefinition(FusionDefinition):
    """One segment of a segmented FusionDefinition: executable on its own
    (inputs in `input_names` order, outputs in `output_names` order)."""

    def __init__(self, fusion, scheduler: str, input_names: List[str], output_names: List[str]):
        super().__init__()
        self._fusion = fusion
        self.scheduler = scheduler
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self._key = ("segment", next(_segment_keys))
        for val in fusion.inputs():
            self._values.append(val)
            self._fusion_inputs.append(("user", len(self._inputs)))
            self._inputs.append(self._new_handle(val))
            self._input_layouts.append(None)
        for val in fusion.outputs():
            self._values.append(val)
            self._outputs.append(self._new_handle(val))
            self._output_layouts.append(None)

    def __enter__(self):
        raise SmeltError("a segment's definition comes from the segmenter; it cannot be extended")

    def _records_key(self):
        return self._key

    @property
    def is_scheduled(self) -> bool:
        return False

    def build_fusion(self):
        return self._fusion.clone()

    def __repr__(self) -> str:
        return (f"SegmentDefinition ({self.scheduler}): {', '.join(self.input_names)} -> "
                f"{', '.join(self.output_names)}\n{self._fusion.math_string()}")
