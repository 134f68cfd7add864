"""DataType <-> torch.dtype."""
from typing import Any

import torch

from smelt._C import DataType, SmeltError

_TORCH_TO_SMELT = {
    torch.float32: DataType.Float,
    torch.float64: DataType.Double,
    torch.float16: DataType.Half,
    torch.bfloat16: DataType.BFloat16,
    torch.int64: DataType.Int,
    torch.int32: DataType.Int32,
    torch.int16: DataType.Int16,
    torch.int8: DataType.Int8,
    torch.uint8: DataType.UInt8,
    torch.bool: DataType.Bool,
}
_SMELT_TO_TORCH = {v: k for k, v in _TORCH_TO_SMELT.items()}


def is_supported_torch_dtype(dtype: torch.dtype) -> bool:
    return dtype in _TORCH_TO_SMELT


# Python's scalar types, as torch types Python numbers (nvFuser's
# torch_dtype_to_nvfuser_dtype takes them too).
_PYTHON_TO_SMELT = {float: DataType.Double, int: DataType.Int, bool: DataType.Bool}


def to_data_type(dtype: Any) -> DataType:
    """A DataType from a DataType, a torch.dtype or a Python scalar type
    (float, int, bool). nvFuser calls it torch_dtype_to_nvfuser_dtype."""
    if isinstance(dtype, DataType):
        return dtype
    if dtype in _PYTHON_TO_SMELT:
        return _PYTHON_TO_SMELT[dtype]
    if isinstance(dtype, torch.dtype):
        if dtype not in _TORCH_TO_SMELT:
            raise SmeltError(f"torch dtype {dtype} has no smelt DataType (supported: "
                             f"{', '.join(str(d) for d in _TORCH_TO_SMELT)})")
        return _TORCH_TO_SMELT[dtype]
    raise SmeltError(f"expected a smelt DataType, a torch.dtype or float/int/bool, got {dtype!r}")


torch_dtype_to_nvfuser_dtype = to_data_type


def to_torch_dtype(dtype: DataType) -> torch.dtype:
    return _SMELT_TO_TORCH[dtype]
