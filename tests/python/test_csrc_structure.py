"""The shape of the C++ tree, checked from its source (issue 46).

- Includes run one way through the stages, fusion -> scheduler -> lower ->
  codegen -> runtime: a stage includes its own headers and those of the
  stages before it, never a later one.
- Torch's headers (torch/, ATen/, c10/) are included by the runtime alone.
- The segmenter knows no scheduler: it reads what it needs from the
  registry's entries (seeds, seed growth, grid splits, whether a scheduler
  keeps its segments), and names no SchedulerType and no scheduler header.
- Files are at most 800 lines and functions at most 120 (csrc/ and the
  Python bindings' python/csrc/), unless a `// long: <reason>` comment
  opens the function.

Each checker also runs on made-up sources, so one that stopped finding
anything would fail too. Nothing here builds: the checks read the source.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Tuple

CSRC = Path(__file__).resolve().parents[2] / "csrc"
BINDINGS = Path(__file__).resolve().parents[2] / "python" / "csrc"
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 120
STAGES = ("fusion", "scheduler", "lower", "codegen", "runtime")
TORCH_HEADERS = ("torch", "ATen", "c10")
# What the segmenter may include from scheduler/: the interface every
# scheduler registers through, and its own headers.
SEGMENTER_INCLUDES = {"scheduler/registry.h", "scheduler/segmenter.h", "scheduler/heuristic.h",
                      "scheduler/runtime_info.h", "scheduler/segment_extents.h",
                      "scheduler/segment_rewrite.h"}
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
    for path in ("scheduler/segmenter.h", "scheduler/segmenter.cpp", "scheduler/segment_rewrite.h",
                 "scheduler/segment_rewrite.cpp"):
        text = sources[path]
        found += [f"{path} includes {h}" for h in INCLUDE.findall(text)
                  if h.startswith("scheduler/") and h not in SEGMENTER_INCLUDES]
        if path.endswith(".cpp"):  # the header's Segment has a default scheduler
            found += [f"{path} names {m}" for m in re.findall(r"SchedulerType::\w+", text)]
    return found


def code_only(text: str) -> str:
    """`text` with comments and string, character and raw-string literals
    blanked (their braces are no code); line breaks kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i) or text.startswith("/*", i):
            end = text.find("\n", i) if text[i + 1] == "/" else text.find("*/", i + 2) + 2
            end = n if end < (1 if text[i + 1] == "/" else 2) else end
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            delimiter = re.match(r'R"([^(\s]*)\(', text[i:]).group(1)
            end = text.find(")" + delimiter + '"', i) + len(delimiter) + 2
        elif text[i] in "\"'":
            end = i + 1
            while end < n and text[end] != text[i]:
                end += 2 if text[end] == "\\" else 1
            end += 1
        else:
            out.append(text[i])
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:end]))
        i = end
    return "".join(out)


CONTROL = re.compile(r"^(if|for|while|switch|do|else|catch|try)\b")


def long_functions(text: str, limit: int = MAX_FUNCTION_LINES) -> List[Tuple[int, int, str]]:
    """(first line, lines, header) of each function body longer than `limit`
    lines: a brace block after a parenthesized header that is not a control
    statement, outside any other function (lambdas count in their function).
    A `// long: <reason>` comment in its first lines exempts it."""
    code, lines = code_only(text), text.split("\n")
    stack: List[Tuple[bool, int]] = []  # (is a function, first line)
    found, last = [], 0
    for i, c in enumerate(code):
        if c == "{":
            header = " ".join(code[last:i].split())
            is_function = (not any(f for f, _ in stack) and ")" in header and not CONTROL.match(header)
                           and not header.startswith("=") and "namespace" not in header.split())
            first = code.count("\n", 0, i - len(code[last:i]) + (len(code[last:i]) - len(code[last:i].lstrip()))) + 1
            stack.append((is_function, first))
            last = i + 1
        elif c == "}":
            if stack:
                is_function, first = stack.pop()
                count = code.count("\n", 0, i) + 2 - first
                exempt = any("// long:" in line for line in lines[first - 1:first + 2])
                if is_function and count > limit and not exempt:
                    found.append((first, count, " ".join(lines[first - 1].split())[:80]))
            last = i + 1
        elif c == ";":
            last = i + 1
    return found


def length_problems(sources: Dict[str, str]) -> List[str]:
    problems = []
    for path, text in sources.items():
        count = len(text.splitlines())
        if count > MAX_FILE_LINES:
            problems.append(f"{path}: {count} lines")
        problems += [f"{path}:{first}: {n}-line function {header}"
                     for first, n, header in long_functions(text)]
    return problems


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


def test_files_and_functions_are_short():
    sources = csrc_sources(CSRC)
    sources.update({f"python/csrc/{p}": text for p, text in csrc_sources(BINDINGS).items()})
    found = length_problems(sources)
    assert not found, f"over {MAX_FILE_LINES} lines per file or {MAX_FUNCTION_LINES} per " \
        "function (split it, or open the function with `// long: <reason>`):\n" + "\n".join(found)


def test_the_length_check_finds_a_long_function_and_reads_the_reason():
    body = "".join(f"  x += {i};\n" for i in range(MAX_FUNCTION_LINES))
    text = ("namespace a {\nconst char* kText = R\"(\n{ not code }\n)\";\n"
            "struct S {\n  int member(int x) const {\n" + body + "    return x;\n  }\n};\n"
            "int short_one(int x) {\n  auto f = [&](int y) {\n    return y;\n  };\n"
            "  if (x) {\n    return f(x);\n  }\n  return 0;\n}\n"
            "int excused(int x) {\n  // long: one case per op\n" + body + "  return x;\n}\n}\n")
    assert long_functions(text) == [(6, MAX_FUNCTION_LINES + 3, "int member(int x) const {")]
    assert length_problems({"a.cpp": "\n" * (MAX_FILE_LINES + 1)}) == [
        f"a.cpp: {MAX_FILE_LINES + 1} lines"]


def test_the_checkers_find_what_they_look_for():
    made_up = {
        "lower/a.cpp": '#include "codegen/cuda_codegen.h"\n#include "fusion/ir.h"\n',
        "fusion/b.h": '#include <ATen/ATen.h>\n',
        "runtime/c.cpp": '#include <ATen/ATen.h>\n#include "lower/kir.h"\n',
        "scheduler/segmenter.h": '#include "scheduler/registry.h"\n',
        "scheduler/segment_rewrite.h": '#include "scheduler/segmenter.h"\n',
        "scheduler/segment_rewrite.cpp": '#include "scheduler/registry.h"\n',
        "scheduler/segmenter.cpp": '#include "scheduler/reduction.h"\n'
                                   'bool f(T t) { return t == SchedulerType::Matmul; }\n',
    }
    assert upward_includes(made_up) == [("lower/a.cpp", "codegen/cuda_codegen.h")]
    assert torch_includes_outside_runtime(made_up) == [("fusion/b.h", "ATen/ATen.h")]
    assert segmenter_scheduler_knowledge(made_up) == [
        "scheduler/segmenter.cpp includes scheduler/reduction.h",
        "scheduler/segmenter.cpp names SchedulerType::Matmul"]
