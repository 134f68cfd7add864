"""The torch-level fuzzer's programs (torch_program_fuzz.py runs them).

`generate(seed)` builds a Program deterministically from its seed: a list of
steps over a pool of tensors (inputs, then values computed from them), each
step one line of Python. The generator runs every step eagerly on sample
inputs as it goes, so it knows each value's shape and never emits a program
torch rejects. `Program.source()` renders a self-contained reproducer: paste
it into a file and run it. The value-safety rules are in
torch_program_fuzz.py's docstring.
"""
from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

MAX_RANK = 4
MAX_EXTENT = 6


def _r(*shape: int, generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """A float32 tensor of uniform values in [-2, 2]."""
    return torch.rand(*shape, generator=generator) * 4 - 2


@dataclass
class Value:
    name: str
    shape: Tuple[int, ...]
    mag: float          # a bound on |value| (analytic, loose)
    computed: bool      # derived from at least one computing (non-view) op


@dataclass
class Program:
    seed: int
    inputs: List[Tuple[str, str]]   # (name, expression over r(...)), in signature order
    steps: List[str]                # "name = expr" lines of fn's body
    outputs: List[str]

    def fn_source(self) -> str:
        args = ", ".join(name for name, _ in self.inputs)
        body = [f"    {s}" for s in self.steps]
        outs = ", ".join(self.outputs) + ("," if len(self.outputs) == 1 else "")
        return "\n".join([f"def fn({args}):", *body, f"    return ({outs})"]) + "\n"

    def inputs_source(self) -> str:
        lines = ["def make_inputs(seed):",
                 "    g = torch.Generator().manual_seed(seed)",
                 "    r = lambda *shape: torch.rand(*shape, generator=g) * 4 - 2"]
        lines += [f"    {name} = {expr}" for name, expr in self.inputs]
        lines.append(f"    return [{', '.join(name for name, _ in self.inputs)}]")
        return "\n".join(lines) + "\n"

    def source(self, dynamic: bool = False) -> str:
        """A self-contained reproducer."""
        return (f"# torch_program_fuzz seed {self.seed}{' (dynamic=True)' if dynamic else ''}\n"
                "import torch\nimport torch.nn.functional as F\nimport smelt.backend\n\n"
                + self.fn_source() + "\n\n" + self.inputs_source() + "\n\n"
                "for seed in (1, 2):\n"
                "    inputs = make_inputs(seed)\n"
                "    expected = fn(*inputs)\n"
                f"    actual = torch.compile(fn, backend=\"smelt\", dynamic={dynamic})(*inputs)\n"
                "    for e, a in zip(expected, actual):\n"
                "        torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-5)\n"
                "        assert a.shape == e.shape and all(\n"
                "            x == y for n, x, y in zip(e.shape, a.stride(), e.stride()) if n > 1), \\\n"
                "            (a.stride(), e.stride())\n"
                "    print(smelt.backend.last_report())\n")

    def make_fn(self):
        env: Dict[str, Any] = {"torch": torch, "F": F}
        exec(compile(self.fn_source(), f"<torch_program_fuzz seed {self.seed}>", "exec"), env)
        return env["fn"]

    def make_inputs(self, seed: int) -> List[torch.Tensor]:
        g = torch.Generator().manual_seed(seed)
        env = {"torch": torch, "r": lambda *shape: _r(*shape, generator=g)}
        return [eval(expr, env) for _, expr in self.inputs]  # noqa: S307 - our own source


# ---------------------------------------------------------------- generator
def _shape_str(shape: Sequence[int]) -> str:
    return ", ".join(str(s) for s in shape)


def _dims_str(dims: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def _broadcast(a: Sequence[int], b: Sequence[int]) -> Optional[Tuple[int, ...]]:
    try:
        return tuple(torch.broadcast_shapes(tuple(a), tuple(b)))
    except RuntimeError:
        return None


# Generator settings. "default" is what the CI seeds were chosen with: do not
# change it (that would change every seed's program); add a profile instead.
PROFILES: Dict[str, Dict[str, Any]] = {
    "default": {
        "weights": {"unary": 22, "binary": 22, "where": 5, "reduce": 12, "softmax": 5,
                    "layer_norm": 4, "var_mean": 3, "reshape": 10, "permute": 7, "unsqueeze": 3,
                    "squeeze": 3, "expand": 4, "slice": 5, "cat": 3, "contiguous": 2},
        "steps": (2, 7), "noncontig": 0.35, "size1": 0.2,
    },
    # Longer programs heavy in reductions and normalizations, over fewer
    # size-1 dimensions, non-contiguous inputs and expands (the triggers of
    # the most frequent known bugs, which mask what comes after them).
    "deep": {
        "weights": {"unary": 16, "binary": 20, "where": 4, "reduce": 16, "softmax": 8,
                    "layer_norm": 7, "var_mean": 5, "reshape": 10, "permute": 7, "unsqueeze": 2,
                    "squeeze": 1, "expand": 1, "slice": 3, "cat": 2, "contiguous": 2},
        "steps": (4, 9), "noncontig": 0.15, "size1": 0.06,
    },
    # Linear layers as models write them (rows flattened, a matmul with a
    # weight, viewed back) between elementwise ops, residual adds and
    # normalizations: the views the backend moves below matmul epilogues.
    "models": {
        "weights": {"unary": 16, "binary": 24, "where": 3, "reduce": 6, "softmax": 4,
                    "layer_norm": 6, "var_mean": 2, "reshape": 6, "permute": 4, "unsqueeze": 2,
                    "squeeze": 1, "expand": 2, "slice": 2, "cat": 2, "contiguous": 1,
                    "linear": 14},
        "steps": (3, 8), "noncontig": 0.2, "size1": 0.1,
    },
    # No size-1 dimensions from inputs, unsqueeze or expand (only keepdim
    # reductions make them): away from every known open bug's trigger.
    "clean": {
        "weights": {"unary": 18, "binary": 20, "where": 5, "reduce": 14, "softmax": 7,
                    "layer_norm": 6, "var_mean": 4, "reshape": 12, "permute": 8, "unsqueeze": 0,
                    "squeeze": 1, "expand": 0, "slice": 4, "cat": 3, "contiguous": 2},
        "steps": (3, 9), "noncontig": 0.35, "size1": 0.0, "related_size1": 0.0,
    },
}


class _Reject(Exception):
    """This step does not fit the chosen operand: try another."""


class Generator:
    def __init__(self, seed: int, profile: str = "default"):
        self.seed = seed
        self.profile = PROFILES[profile]
        self.rng = random.Random(seed)
        self.pool: List[Value] = []
        self.inputs: List[Tuple[str, str]] = []
        self.steps: List[str] = []
        self.env: Dict[str, Any] = {"torch": torch, "F": F}
        self.g = torch.Generator().manual_seed(seed)
        self.env["r"] = lambda *shape: _r(*shape, generator=self.g)
        self.counter = 0
        self.used: set = set()

    # -- pool --
    def _fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _sample(self, name: str) -> torch.Tensor:
        return self.env[name]

    def _add_input(self, shape: Tuple[int, ...], allow_noncontig: bool = True,
                   prefix: str = "x") -> Value:
        rng = self.rng
        name = f"{prefix}{len(self.inputs)}"
        expr = f"r({_shape_str(shape)})" if shape else "r(())"
        if allow_noncontig and len(shape) >= 1 and rng.random() < self.profile["noncontig"]:
            kind = rng.choice(["transpose", "slice", "step"] if len(shape) >= 2
                              else ["slice", "step"])
            if kind == "transpose":
                i, j = sorted(rng.sample(range(len(shape)), 2))
                base = list(shape)
                base[i], base[j] = base[j], base[i]
                expr = f"r({_shape_str(base)}).transpose({i}, {j})"
            elif kind == "slice":
                d = rng.randrange(len(shape))
                extra = rng.randint(1, 3)
                start = rng.randint(0, extra)
                base = list(shape)
                base[d] += extra
                idx = [":"] * d + [f"{start}:{start + shape[d]}"]
                expr = f"r({_shape_str(base)})[{', '.join(idx)}]"
            else:
                d = rng.randrange(len(shape))
                base = list(shape)
                base[d] = 2 * shape[d]
                idx = [":"] * d + ["::2"]
                expr = f"r({_shape_str(base)})[{', '.join(idx)}]"
        self.env[name] = eval(expr, self.env)  # noqa: S307
        assert tuple(self.env[name].shape) == shape, (expr, shape)
        self.inputs.append((name, expr))
        v = Value(name, shape, 2.0, False)
        self.pool.append(v)
        return v

    def _random_shape(self, rank: Optional[int] = None) -> Tuple[int, ...]:
        rng = self.rng
        rank = rng.randint(1, MAX_RANK) if rank is None else rank
        one = self.profile["size1"]
        return tuple(1 if rng.random() < one else rng.randint(2, MAX_EXTENT) for _ in range(rank))

    def _pick(self, pred=None) -> Optional[Value]:
        """A pool value, the latest ones more likely."""
        cands = [v for v in self.pool if pred is None or pred(v)]
        if not cands:
            return None
        unused = [v for v in cands if v.name not in self.used and not v.computed]
        if unused and self.rng.random() < 0.5:
            return unused[0]  # every input used, most of the time
        if self.rng.random() < 0.55:
            return cands[-1]
        weights = [1.0 + i for i in range(len(cands))]
        return self.rng.choices(cands, weights)[0]

    def _emit(self, expr: str, mag: float, computed: bool, names: Optional[List[str]] = None):
        """Runs `expr` on the samples; adds the result(s) to the pool."""
        if names is None:
            name = self._fresh()
            result = eval(expr, self.env)  # noqa: S307
            outs = [(name, result)]
            line = f"{name} = {expr}"
        else:
            result = eval(expr, self.env)  # noqa: S307
            outs = list(zip(names, result))
            line = f"{', '.join(names)} = {expr}"
        for name, t in outs:
            if not isinstance(t, torch.Tensor) or t.dtype != torch.float32:
                raise AssertionError(f"generator: {line} gave {type(t)}")
            if t.numel() == 0 or t.dim() > MAX_RANK or max(t.shape, default=1) > 4 * MAX_EXTENT:
                raise _Reject(f"result shape {tuple(t.shape)}")
            if not torch.isfinite(t).all():
                raise _Reject("not finite")
        self.steps.append(line)
        self.used.update(re.findall(r"\b[vxwb]\d+\b", expr))
        vals = []
        for name, t in outs:
            self.env[name] = t
            v = Value(name, tuple(t.shape), mag, computed)
            self.pool.append(v)
            vals.append(v)
        return vals[0] if names is None else vals

    # -- steps --
    def step(self) -> None:
        rng = self.rng
        kinds = [k for k, w in self.profile["weights"].items() for _ in range(w)]
        for _ in range(20):
            kind = rng.choice(kinds)
            x = self._pick()
            try:
                getattr(self, f"_op_{kind}")(x)
                return
            except _Reject:
                continue
        self._op_unary(self.pool[-1])

    def _op_unary(self, x: Value) -> Value:
        rng = self.rng
        choices = ["relu", "tanh", "sigmoid", "neg", "abs", "sqrt", "scalar"]
        if x.mag <= 6:
            choices.append("exp")
        op = rng.choice(choices)
        n = x.name
        if op == "relu":
            return self._emit(f"torch.relu({n})", x.mag, True)
        if op == "tanh":
            return self._emit(f"torch.tanh({n})", 1.0, True)
        if op == "sigmoid":
            return self._emit(f"torch.sigmoid({n})", 1.0, True)
        if op == "neg":
            return self._emit(f"-{n}", x.mag, True)
        if op == "abs":
            return self._emit(f"{n}.abs()", x.mag, True)
        if op == "sqrt":
            return self._emit(f"torch.sqrt({n}.abs() + 1e-3)", math.sqrt(x.mag + 1e-3), True)
        if op == "exp":
            return self._emit(f"torch.exp({n})", math.exp(x.mag), True)
        c = rng.choice([0.5, 1.5, 2.0, -0.75, 3.0])
        form = rng.choice(["+", "-", "*", "/", "r-", "pow"])
        if form == "+":
            return self._emit(f"{n} + {c}", x.mag + abs(c), True)
        if form == "-":
            return self._emit(f"{n} - {c}", x.mag + abs(c), True)
        if form == "*":
            return self._emit(f"{n} * {c}", x.mag * abs(c), True)
        if form == "/":
            return self._emit(f"{n} / {c}", x.mag / abs(c), True)
        if form == "r-":
            return self._emit(f"{c} - {n}", x.mag + abs(c), True)
        return self._emit(f"{n} * {n}", x.mag * x.mag, True) if x.mag < 100 else \
            self._emit(f"torch.tanh({n})", 1.0, True)

    def _partner(self, x: Value) -> Optional[Value]:
        """Another pool value that broadcasts with x within the rank limit."""
        return self._pick(lambda v: v is not x and _broadcast(v.shape, x.shape) is not None)

    def _op_binary(self, x: Value) -> Value:
        rng = self.rng
        y = self._partner(x) if rng.random() < 0.8 else None
        op = rng.choice(["add", "sub", "mul", "div", "maximum"])
        if y is None:
            c = rng.choice([0.5, 2.0, -1.25, 0.1])
            if op == "maximum":
                return self._emit(f"torch.maximum({x.name}, torch.tensor({c}))",
                                  max(x.mag, abs(c)), True)
            sym = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[op]
            return self._emit(f"{x.name} {sym} {c}", x.mag / abs(c) if op == "div" else
                              x.mag * abs(c) if op == "mul" else x.mag + abs(c), True)
        a, b = (x, y) if rng.random() < 0.7 else (y, x)
        if op == "add":
            return self._emit(f"{a.name} + {b.name}", a.mag + b.mag, True)
        if op == "sub":
            return self._emit(f"{a.name} - {b.name}", a.mag + b.mag, True)
        if op == "mul":
            if a.mag * b.mag > 1e4:
                raise _Reject("too large")
            return self._emit(f"{a.name} * {b.name}", a.mag * b.mag, True)
        if op == "div":
            return self._emit(f"{a.name} / ({b.name}.abs() + 1)", a.mag, True)
        return self._emit(f"torch.maximum({a.name}, {b.name})", max(a.mag, b.mag), True)

    def _op_linear(self, x: Value) -> Value:
        """x @ w over x's last dimension, as nn.Linear and GPT-2's Conv1D
        compute it: rows flattened, a matmul (addmm with a bias input half
        the time), the result viewed back to x's leading dimensions."""
        rng = self.rng
        if len(x.shape) < 2 or x.mag > 1e2:
            raise _Reject("rank < 2 or too large")
        k, n = x.shape[-1], rng.randint(2, MAX_EXTENT)
        w = self._add_input((k, n), allow_noncontig=False, prefix="w")
        rows = f"{x.name}.reshape(-1, {k})"
        if rng.random() < 0.5:
            b = self._add_input((n,), allow_noncontig=False, prefix="b")
            product = f"torch.addmm({b.name}, {rows}, {w.name})"
        else:
            product = f"({rows} @ {w.name})"
        shape = _shape_str(tuple(x.shape[:-1]) + (n,))
        return self._emit(f"{product}.view({shape})", x.mag * 2.0 * k + 2.0, True)

    def _op_where(self, x: Value) -> Value:
        rng = self.rng
        y = self._partner(x)
        if y is not None and rng.random() < 0.5:
            # x > y: only where the sample has no near-ties.
            if (self._sample(x.name) - self._sample(y.name)).abs().min() < 1e-3:
                raise _Reject("near tie")
            cond = f"{x.name} > {y.name}"
            shape = _broadcast(x.shape, y.shape)
        else:
            shape = x.shape
            c = rng.choice([0.3, -0.45, 0.15, 1.1])
            if (self._sample(x.name) - c).abs().min() < 1e-3:
                raise _Reject("near tie")
            cond = f"{x.name} {rng.choice(['>', '<', '>='])} {c}"
        z = self._pick(lambda v: v is not x and _broadcast(v.shape, shape) is not None)
        other = z.name if z is not None and rng.random() < 0.6 else str(rng.choice([0.0, -1.0, 2.5]))
        mag = max(x.mag, z.mag if z is not None and other == z.name else 2.5)
        if rng.random() < 0.5:
            return self._emit(f"torch.where({cond}, {x.name}, {other})", mag, True)
        return self._emit(f"torch.where({cond}, {other}, {x.name})", mag, True)

    def _rand_dims(self, rank: int) -> List[int]:
        k = self.rng.randint(1, rank)
        dims = sorted(self.rng.sample(range(rank), k))
        if self.rng.random() < 0.3:
            dims = [d - rank for d in dims]  # negative dims
        return dims

    def _op_reduce(self, x: Value) -> Value:
        rng = self.rng
        rank = len(x.shape)
        if rank == 0:
            raise _Reject("rank 0")
        op = rng.choice(["sum", "mean", "amax"])
        keep = rng.random() < 0.5
        if rng.random() < 0.1 and op != "amax":
            n = math.prod(x.shape)
            return self._emit(f"{x.name}.{op}()", x.mag * (n if op == "sum" else 1), True)
        dims = self._rand_dims(rank)
        n = math.prod(x.shape[d] for d in dims)
        mag = x.mag * n if op == "sum" else x.mag
        dim_arg = str(dims[0]) if len(dims) == 1 and rng.random() < 0.5 else _dims_str(dims)
        return self._emit(f"{x.name}.{op}(dim={dim_arg}{', keepdim=True' if keep else ''})",
                          mag, True)

    def _op_softmax(self, x: Value) -> Value:
        rank = len(x.shape)
        if rank == 0:
            raise _Reject("rank 0")
        d = self.rng.randrange(-rank, rank)
        if self.rng.random() < 0.5:
            return self._emit(f"torch.softmax({x.name}, dim={d})", 1.0, True)
        return self._emit(f"F.log_softmax({x.name}, dim={d})",
                          2 * x.mag + math.log(x.shape[d]) + 1, True)

    def _op_layer_norm(self, x: Value) -> Value:
        rng = self.rng
        rank = len(x.shape)
        if rank == 0:
            raise _Reject("rank 0")
        k = rng.randint(1, min(rank, 2))
        norm = x.shape[rank - k:]
        n = math.prod(norm)
        sample = self._sample(x.name).reshape(-1, n) if n > 0 else None
        if n > 1 and sample.var(dim=1, unbiased=False).min() < 1e-2:
            raise _Reject("degenerate variance")
        args = f"{x.name}, {_dims_str(norm)}"
        mode = rng.choice(["none", "weight", "both"])
        if mode != "none":
            w = self._add_input(tuple(norm), allow_noncontig=False, prefix="w")
            args += f", weight={w.name}"
            if mode == "both":
                b = self._add_input(tuple(norm), allow_noncontig=False, prefix="b")
                args += f", bias={b.name}"
        mag = (math.sqrt(n) + 1) * (2 if mode != "none" else 1) + 2
        return self._emit(f"F.layer_norm({args})", mag, True)

    def _op_var_mean(self, x: Value) -> List[Value]:
        rng = self.rng
        rank = len(x.shape)
        if rank == 0:
            raise _Reject("rank 0")
        dims = self._rand_dims(rank)
        n = math.prod(x.shape[d] for d in dims)
        correction = rng.choice([0, 1]) if n > 1 else 0
        keep = rng.random() < 0.5
        names = [self._fresh(), self._fresh()]
        return self._emit(f"torch.var_mean({x.name}, dim={_dims_str(dims)}, "
                          f"correction={correction}{', keepdim=True' if keep else ''})",
                          x.mag * x.mag * 4 + x.mag, True, names=names)

    def _new_shape(self, shape: Tuple[int, ...]) -> List[int]:
        """Splits and merges of `shape` (its product kept), rank <= MAX_RANK."""
        rng = self.rng
        dims = list(shape) if shape else [1]
        for _ in range(rng.randint(1, 3)):
            move = rng.choice(["merge", "split", "split1", "drop1"])
            if move == "merge" and len(dims) >= 2:
                i = rng.randrange(len(dims) - 1)
                dims[i:i + 2] = [dims[i] * dims[i + 1]]
            elif move == "split" and len(dims) < MAX_RANK:
                i = rng.randrange(len(dims))
                divisors = [a for a in range(2, dims[i]) if dims[i] % a == 0]
                if divisors:
                    a = rng.choice(divisors)
                    dims[i:i + 1] = [a, dims[i] // a]
            elif move == "split1" and len(dims) < MAX_RANK:
                dims.insert(rng.randint(0, len(dims)), 1)
            elif move == "drop1" and 1 in dims and len(dims) > 1:
                dims.remove(1)
        return dims

    def _op_reshape(self, x: Value) -> Value:
        rng = self.rng
        rank = len(x.shape)
        if rank >= 2 and rng.random() < 0.2:
            start = rng.randrange(rank - 1)
            end = rng.randrange(start + 1, rank)
            return self._emit(f"{x.name}.flatten({start}, {end})", x.mag, x.computed)
        dims = self._new_shape(x.shape)
        if list(dims) == list(x.shape):
            raise _Reject("same shape")
        entries = [str(d) for d in dims]
        if rng.random() < 0.35:
            entries[rng.randrange(len(entries))] = "-1"
        method = "view" if rng.random() < 0.5 else "reshape"
        if method == "view" and not self._sample(x.name).is_contiguous():
            try:
                self._sample(x.name).view(*dims)
            except RuntimeError:
                method = "reshape"
        return self._emit(f"{x.name}.{method}({', '.join(entries)})", x.mag, x.computed)

    def _op_permute(self, x: Value) -> Value:
        rng = self.rng
        rank = len(x.shape)
        if rank < 2:
            raise _Reject("rank < 2")
        form = rng.choice(["permute", "transpose", "t"] if rank == 2 else ["permute", "transpose"])
        if form == "t":
            return self._emit(f"{x.name}.t()", x.mag, x.computed)
        if form == "transpose":
            i, j = rng.sample(range(rank), 2)
            return self._emit(f"{x.name}.transpose({i}, {j})", x.mag, x.computed)
        perm = list(range(rank))
        while perm == list(range(rank)):
            rng.shuffle(perm)
        return self._emit(f"{x.name}.permute({', '.join(map(str, perm))})", x.mag, x.computed)

    def _op_unsqueeze(self, x: Value) -> Value:
        rank = len(x.shape)
        if rank >= MAX_RANK:
            raise _Reject("rank")
        d = self.rng.randint(-rank - 1, rank)
        return self._emit(f"{x.name}.unsqueeze({d})", x.mag, x.computed)

    def _op_squeeze(self, x: Value) -> Value:
        ones = [d for d, s in enumerate(x.shape) if s == 1]
        if not ones:
            raise _Reject("no size-1 dimension")
        if self.rng.random() < 0.3:
            return self._emit(f"{x.name}.squeeze()", x.mag, x.computed)
        return self._emit(f"{x.name}.squeeze({self.rng.choice(ones)})", x.mag, x.computed)

    def _op_expand(self, x: Value) -> Value:
        rng = self.rng
        ones = [d for d, s in enumerate(x.shape) if s == 1]
        lead = 1 if len(x.shape) < MAX_RANK and rng.random() < 0.3 else 0
        if not ones and not lead:
            raise _Reject("nothing to expand")
        sizes = ["-1"] * len(x.shape)
        for d in ones:
            if rng.random() < 0.7 or not lead:
                sizes[d] = str(rng.randint(2, 4))
        if all(s == "-1" for s in sizes) and not lead:
            sizes[ones[0]] = "3"
        sizes = [str(rng.randint(2, 4))] * lead + sizes
        return self._emit(f"{x.name}.expand({', '.join(sizes)})", x.mag, x.computed)

    def _op_slice(self, x: Value) -> Value:
        rng = self.rng
        dims = [d for d, s in enumerate(x.shape) if s >= 2]
        if not dims:
            raise _Reject("nothing to slice")
        d = rng.choice(dims)
        size = x.shape[d]
        start = rng.randint(0, size - 1)
        length = rng.randint(1, size - start)
        if rng.random() < 0.4:
            return self._emit(f"{x.name}.narrow({d}, {start}, {length})", x.mag, x.computed)
        step = 2 if rng.random() < 0.15 and size >= 3 else 1
        sl = f"{start or ''}:{start + length if start + length < size else ''}" + \
            (f":{step}" if step != 1 else "")
        if sl == ":":
            sl = "1:" if size > 1 else ":"
        return self._emit(f"{x.name}[{', '.join([':'] * d + [sl])}]", x.mag, x.computed)

    def _op_cat(self, x: Value) -> Value:
        rng = self.rng
        rank = len(x.shape)
        if rank == 0:
            raise _Reject("rank 0")
        d = rng.randrange(rank)
        def fits(v):
            return v is not x and len(v.shape) == rank and all(
                a == b for i, (a, b) in enumerate(zip(v.shape, x.shape)) if i != d)
        y = self._pick(fits)
        if y is not None and x.shape[d] + y.shape[d] <= 4 * MAX_EXTENT:
            other, mag = y.name, y.mag
        elif rng.random() < 0.5:
            other, mag = f"torch.tanh({x.name})", 1.0
        else:
            other, mag = f"{x.name}.narrow({d}, 0, 1)", x.mag
        dim = d - rank if rng.random() < 0.3 else d
        return self._emit(f"torch.cat([{x.name}, {other}], dim={dim})", max(x.mag, mag), True)

    def _op_contiguous(self, x: Value) -> Value:
        if self._sample(x.name).is_contiguous():
            raise _Reject("already contiguous")
        return self._emit(f"{x.name}.contiguous()", x.mag, x.computed)

    def _output_view(self, x: Value) -> Value:
        """A view of a computed value returned as an output (its strides matter)."""
        ops = [self._op_permute, self._op_slice, self._op_unsqueeze, self._op_expand]
        self.rng.shuffle(ops)
        for op in ops:
            try:
                return op(x)
            except _Reject:
                continue
        return x

    def generate(self) -> Program:
        rng = self.rng
        n_inputs = rng.choice([1, 1, 2, 2, 2, 3])
        first = self._random_shape()
        self._add_input(first)
        for _ in range(n_inputs - 1):
            # Related shapes broadcast more often: a copy, a reduced or a fresh shape.
            form = rng.random()
            if form < 0.35:
                shape = first
            elif form < 0.7:
                ones = self.profile.get("related_size1", 0.4)
                shape = tuple(1 if rng.random() < ones else s for s in first)
                shape = shape[rng.randint(0, len(shape) - 1):]
            else:
                shape = self._random_shape()
            self._add_input(shape)
        for _ in range(rng.randint(*self.profile["steps"])):
            self.step()
        computed = [v for v in self.pool if v.computed]
        if not computed:
            self._op_unary(self.pool[-1])
            computed = [v for v in self.pool if v.computed]
        # Outputs: the latest computed value and some others, unconsumed ones
        # (leaves) first, so that little of the program is dead code.
        outs = [computed[-1]]
        leaves = [v for v in computed[:-1] if v.name not in self.used]
        others = [v for v in computed[:-1] if v.name in self.used]
        rng.shuffle(leaves)
        rng.shuffle(others)
        outs += (leaves + others)[:rng.choice([0, 1, 1, 2, 2])]
        names = []
        for v in outs:
            if rng.random() < 0.35:
                v = self._output_view(v)
            if v.name not in names:
                names.append(v.name)
        return Program(self.seed, self.inputs, self.steps, names)


def generate(seed: int, profile: str = "default") -> Program:
    return Generator(seed, profile).generate()
