"""The shape of the C++ tree, checked from its source (issue 46).

- Includes run one way through the stages, fusion -> scheduler -> lower ->
  codegen -> runtime: a stage includes its own headers and those of the
  stages before it, never a later one.
- Torch's headers (torch/, ATen/, c10/) are included by the runtime alone.
- The segmenter knows no scheduler: it reads what it needs from the
  registry's entries (seeds, seed growth, grid splits, whether a scheduler
  keeps its segments), and names no SchedulerType and no scheduler header.

Each checker also runs on made-up sources, so one that stopped finding
anything would fail too. Nothing here builds: the checks read the source.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Tuple

CSRC = Path(__file__).resolve().parents[2] / "csrc"
STAGES = ("fusion", "scheduler", "lower", "codegen", "runtime")
TORCH_HEADERS = ("torch", "ATen", "c10")
# What the segmenter may include from scheduler/: the interface every
# scheduler registers through, and its own headers.
SEGMENTER_INCLUDES = {"scheduler/registry.h", "scheduler/segmenter.h", "scheduler/heuristic.h",
                      "scheduler/runtime_info.h", "scheduler/segment_extents.h"}
INCLUDE = re.compile(r'^\s*#include\s+[<"]([^">]+)[">]', re.MULTILINE)


def csrc_sources(root: Path) -> Dict[str, str]:
    """{"lower/loop_nest.cpp": text, ...} for every .h/.cpp under root."""
    return {str(p.relative_to(root)): p.read_text()
            for p in sorted(root.rglob("*")) if p.suffix in (".h", ".cpp")}


def upward_includes(sources: Dict[str, str]) -> List[Tuple[str, str]]:
    """(file, header) where a stage includes a later stage's header."""
    found = []
    for path, text in sources.items():
        stage = path.split("/")[0]
        if stage not in STAGES:
            continue
        for header in INCLUDE.findall(text):
            top = header.split("/")[0]
            if top in STAGES and STAGES.index(top) > STAGES.index(stage):
                found.append((path, header))
    return found


def torch_includes_outside_runtime(sources: Dict[str, str]) -> List[Tuple[str, str]]:
    return [(path, header) for path, text in sources.items() if not path.startswith("runtime/")
            for header in INCLUDE.findall(text) if header.split("/")[0] in TORCH_HEADERS]


def segmenter_scheduler_knowledge(sources: Dict[str, str]) -> List[str]:
    """What the segmenter's sources name of particular schedulers."""
    found = []
    for path in ("scheduler/segmenter.h", "scheduler/segmenter.cpp"):
        text = sources[path]
        found += [f"{path} includes {h}" for h in INCLUDE.findall(text)
                  if h.startswith("scheduler/") and h not in SEGMENTER_INCLUDES]
        if path.endswith(".cpp"):  # the header's Segment has a default scheduler
            found += [f"{path} names {m}" for m in re.findall(r"SchedulerType::\w+", text)]
    return found


def test_includes_run_one_way_through_the_stages():
    found = upward_includes(csrc_sources(CSRC))
    assert not found, "includes of a later stage:\n" + "\n".join(f"{p}: {h}" for p, h in found)


def test_torch_headers_only_in_the_runtime():
    found = torch_includes_outside_runtime(csrc_sources(CSRC))
    assert not found, "torch headers outside csrc/runtime:\n" + "\n".join(
        f"{p}: {h}" for p, h in found)


def test_the_segmenter_knows_no_scheduler():
    found = segmenter_scheduler_knowledge(csrc_sources(CSRC))
    assert not found, "the segmenter names schedulers (use SchedulerEntry's hooks):\n" + \
        "\n".join(found)


def test_the_checkers_find_what_they_look_for():
    made_up = {
        "lower/a.cpp": '#include "codegen/cuda_codegen.h"\n#include "fusion/ir.h"\n',
        "fusion/b.h": '#include <ATen/ATen.h>\n',
        "runtime/c.cpp": '#include <ATen/ATen.h>\n#include "lower/kir.h"\n',
        "scheduler/segmenter.h": '#include "scheduler/registry.h"\n',
        "scheduler/segmenter.cpp": '#include "scheduler/reduction.h"\n'
                                   'bool f(T t) { return t == SchedulerType::Matmul; }\n',
    }
    assert upward_includes(made_up) == [("lower/a.cpp", "codegen/cuda_codegen.h")]
    assert torch_includes_outside_runtime(made_up) == [("fusion/b.h", "ATen/ATen.h")]
    assert segmenter_scheduler_knowledge(made_up) == [
        "scheduler/segmenter.cpp includes scheduler/reduction.h",
        "scheduler/segmenter.cpp names SchedulerType::Matmul"]
