"""Kernel quality without a GPU: what the machine code of a kernel says.

    q = kernel_quality(kernel)          # a smelt.inspection.Kernel
    q = sass_quality(cubin, name, threads_per_block, dynamic_smem, ptxas)
    print(q.text())                     # or q.to_dict()

From ptxas (NVRTC's -v report): registers, stack frame, spill bytes, static
shared memory, barriers. From the SASS that `cuobjdump -sass` prints (the
disassembler ships in the triton wheel torch installs): the static
instruction count and mix (integer, float, conversion, memory, control,
other), local-memory loads/stores (LDL/STL), CALLs and the integer-division
routines among them, global load/store widths, block barriers. Theoretical
occupancy for sm_80 and sm_90 from registers, shared memory and threads per
block against smelt's device-limits table (smelt.occupancy, the CUDA occupancy
calculator's arithmetic). Only mnemonics are counted: no SASS semantics are modelled.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, Optional

from smelt._C import SmeltError
from smelt.occupancy import Occupancy, occupancy

# Instruction classes by base mnemonic (the part before the first '.'; a
# leading U, the uniform datapath, is the same class).
_INTEGER = {"IMAD", "IADD3", "IADD", "ISETP", "LOP3", "LOP", "SHF", "SHL", "SHR", "LEA", "IMNMX",
            "IABS", "POPC", "FLO", "BREV", "PRMT", "SEL", "ISCADD", "IMUL", "BMSK", "VIADD",
            "VIMNMX", "IDP", "BMOV", "PLOP3", "P2R", "R2P", "IMMA", "ICMP", "IDE"}
_FLOAT = {"FADD", "FMUL", "FFMA", "FSETP", "FMNMX", "MUFU", "HADD2", "HMUL2", "HFMA2", "HSETP2",
          "HMNMX2", "DADD", "DMUL", "DFMA", "DSETP", "FSEL", "FCHK", "FRND", "HMMA", "FSWZADD",
          "FSET", "DMNMX", "HSET2"}
_CONVERSION = {"I2F", "F2I", "F2F", "I2FP", "F2IP", "I2I", "F2FP", "I2IP", "FRND"}
_MEMORY = {"LDG", "STG", "LDS", "STS", "LDL", "STL", "LD", "ST", "LDC", "ATOM", "ATOMG", "ATOMS",
           "RED", "LDGSTS", "LDSM", "STSM", "LDGDEPBAR", "DEPBAR", "CCTL", "MEMBAR", "UBLKCP",
           "UTMALDG", "UTMASTG", "SULD", "SUST", "TEX", "TLD"}
_CONTROL = {"BRA", "BRX", "JMP", "JMX", "EXIT", "CALL", "RET", "BSSY", "BSYNC", "BAR", "WARPSYNC",
            "NOP", "YIELD", "BPT", "BREAK", "KILL", "SYNCS", "ACQBULK", "ELECT", "WARPGROUP",
            "ERRBAR"}

_INSTRUCTION = re.compile(
    r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)(.*?);")
_WIDTH = {"128": 128, "64": 64, "U8": 8, "S8": 8, "U16": 16, "S16": 16}
_CALL_TARGET = re.compile(r"0x([0-9a-f]+)")


def _base(mnemonic: str) -> str:
    base = mnemonic.split(".")[0]
    if base.startswith("U") and base[1:] in _INTEGER | _MEMORY | _CONTROL | {"MOV", "SEL"}:
        return base[1:]
    return base


def _class(base: str) -> str:
    for name, group in (("conversion", _CONVERSION), ("integer", _INTEGER), ("float", _FLOAT),
                        ("memory", _MEMORY), ("control", _CONTROL)):
        if base in group:
            return name
    return "other"


def _access_width(mnemonic: str) -> int:
    widths = [_WIDTH[m] for m in mnemonic.split(".")[1:] if m in _WIDTH]
    return widths[0] if widths else 32


def cuobjdump() -> str:
    """The disassembler: on PATH, else the one in the triton wheel."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    try:
        import triton
        candidate = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
        if candidate.is_file():
            return str(candidate)
    except ImportError:
        pass
    raise SmeltError("kernel quality: no cuobjdump on PATH or in the triton wheel "
                     "(pip install triton, which torch's CUDA wheels bring)")


def disassemble(cubin: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        result = subprocess.run([cuobjdump(), "-sass", f.name], capture_output=True, text=True)
    if result.returncode != 0:
        raise SmeltError(f"cuobjdump -sass failed: {result.stderr.strip()}")
    return result.stdout


@dataclass
class SassCounts:
    instructions: int = 0
    mix: Dict[str, int] = field(default_factory=dict)  # class -> count
    mnemonics: Dict[str, int] = field(default_factory=dict)  # base mnemonic -> count
    local_loads: int = 0  # LDL
    local_stores: int = 0  # STL
    calls: int = 0
    integer_division_calls: int = 0  # CALLs of the 64-bit integer division routine
    inline_integer_divisions: int = 0  # 32-bit divisions emulated in line (I2F.U32.RP ...)
    # Integer instructions doing 64-bit work: IMAD.WIDE (a 32x32->64-bit
    # multiply-add) and the high halves of 64-bit adds and address
    # arithmetic (.X: with carry in, e.g. IADD3.X, LEA.HI.X).
    wide_integer_ops: int = 0
    global_loads: Dict[int, int] = field(default_factory=dict)  # width in bits -> count
    global_stores: Dict[int, int] = field(default_factory=dict)
    block_barriers: int = 0


def _is_wide_integer(base: str, mnemonic: str) -> bool:
    parts = set(mnemonic.split(".")[1:])
    return base in _INTEGER and bool(parts & {"WIDE", "X"})


def _is_integer_division(mnemonic: str) -> bool:
    """The reciprocal estimate that opens an emulated integer division."""
    return mnemonic.startswith("I2F") and ".RP" in mnemonic


def count_sass(sass: str) -> SassCounts:
    """Counts the instructions of every function in `sass` (cuobjdump -sass).
    cuobjdump names no internal routine, so a CALL's target is classified by
    its body: the integer division routine converts with I2F...RP."""
    instructions = [(int(m.group(1), 16), m.group(2), m.group(3))
                    for m in _INSTRUCTION.finditer(sass)]
    index_of = {address: i for i, (address, _, _) in enumerate(instructions)}
    subroutine = [False] * len(instructions)
    divides = {}  # call target -> whether the routine is an integer division
    for address, mnemonic, operands in instructions:
        target = _CALL_TARGET.search(operands) if mnemonic.startswith("CALL") else None
        if target is None or int(target.group(1), 16) not in index_of:
            continue
        start = index_of[int(target.group(1), 16)]
        end = start
        while end < len(instructions) and not instructions[end][1].startswith("RET"):
            subroutine[end] = True
            end += 1
        divides[address] = any(_is_integer_division(m) for _, m, _ in instructions[start:end])
    counts = SassCounts()
    mix: Counter = Counter()
    bases: Counter = Counter()
    loads: Counter = Counter()
    stores: Counter = Counter()
    for i, (address, mnemonic, operands) in enumerate(instructions):
        base = _base(mnemonic)
        counts.instructions += 1
        mix[_class(base)] += 1
        bases[base] += 1
        if _is_integer_division(mnemonic) and not subroutine[i]:
            counts.inline_integer_divisions += 1
        counts.wide_integer_ops += _is_wide_integer(base, mnemonic)
        if base == "LDL":
            counts.local_loads += 1
        elif base == "STL":
            counts.local_stores += 1
        elif base == "CALL":
            counts.calls += 1
            counts.integer_division_calls += divides.get(address, False)
        elif base == "LDG":
            loads[_access_width(mnemonic)] += 1
        elif base == "STG":
            stores[_access_width(mnemonic)] += 1
        elif base == "BAR":
            counts.block_barriers += 1
    counts.mix, counts.mnemonics = dict(mix), dict(bases.most_common())
    counts.global_loads, counts.global_stores = dict(loads), dict(stores)
    return counts


@dataclass
class KernelQuality:
    name: str
    registers: int
    stack_frame_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int
    shared_memory_bytes: int  # static (ptxas) plus dynamic
    threads_per_block: int
    sass: SassCounts
    occupancy: Dict[int, Occupancy]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["occupancy"] = {f"sm_{a}": asdict(o) for a, o in self.occupancy.items()}
        return d

    def json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def text(self) -> str:
        s = self.sass
        widths = lambda c: ", ".join(f"{n}x{w}b" for w, n in sorted(c.items(), reverse=True)) or "-"
        mix = ", ".join(f"{k} {v}" for k, v in sorted(s.mix.items(), key=lambda kv: -kv[1]))
        occ = "; ".join(f"sm_{a}: {o.blocks_per_sm} blocks, {o.warps_per_sm} warps "
                        f"({o.occupancy:.0%}, {o.limited_by})" for a, o in self.occupancy.items())
        return "\n".join([
            f"kernel {self.name}: {s.instructions} SASS instructions ({mix})",
            f"  registers {self.registers}, stack frame {self.stack_frame_bytes} B, spills "
            f"{self.spill_store_bytes} B stored / {self.spill_load_bytes} B loaded, "
            f"LDL {s.local_loads} / STL {s.local_stores}",
            f"  CALLs {s.calls} ({s.integer_division_calls} integer division), "
            f"{s.inline_integer_divisions} inline integer divisions, {s.wide_integer_ops} "
            f"64-bit integer ops, block barriers "
            f"{s.block_barriers}, shared memory {self.shared_memory_bytes} B, "
            f"{self.threads_per_block} threads per block",
            f"  global loads {widths(s.global_loads)}; stores {widths(s.global_stores)}",
            f"  occupancy {occ}",
        ])


def sass_quality(cubin: bytes, name: str, threads_per_block: int, dynamic_smem_bytes: int,
                 ptxas, archs=(80, 90)) -> KernelQuality:
    """The report for one compiled kernel: `ptxas` has registers,
    stack_frame_bytes, spill_*_bytes and static_smem_bytes."""
    smem = ptxas.static_smem_bytes + dynamic_smem_bytes
    return KernelQuality(
        name=name, registers=ptxas.registers, stack_frame_bytes=ptxas.stack_frame_bytes,
        spill_store_bytes=ptxas.spill_store_bytes, spill_load_bytes=ptxas.spill_load_bytes,
        shared_memory_bytes=smem, threads_per_block=threads_per_block,
        sass=count_sass(disassemble(cubin)),
        occupancy={a: occupancy(a, threads_per_block, ptxas.registers, smem) for a in archs})


def kernel_quality(kernel, archs=(80, 90)) -> KernelQuality:
    """The report for a smelt.inspection.Kernel (fd.lower() or
    fd.last_kernels()). Its launch must have concrete block and shared-memory
    sizes (an executed kernel, or one lowered with static extents)."""
    block = kernel.block
    if any(not isinstance(b, int) for b in block):
        raise SmeltError(f"kernel quality: the block {block} is symbolic; run the kernel (or lower "
                         "it with static sizes) to know its threads per block")
    threads = block[0] * block[1] * block[2]
    compiled = kernel.compiled
    dynamic = kernel.shared_memory_bytes
    dynamic = dynamic if isinstance(dynamic, int) else 0
    # ptxas counts statically declared shared memory; the rest is dynamic.
    dynamic = max(dynamic - compiled.ptxas.static_smem_bytes, 0)
    return sass_quality(compiled.cubin, compiled.kernel_name, threads, dynamic, compiled.ptxas,
                        archs)
