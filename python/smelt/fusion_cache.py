"""The fusion cache: compiled kernels by fusion record.

A FusionDefinition's record (its definition and schedule calls) is the key, so
defining the same fusion again — in a new `with` block, a new subclass
instance, or a torch.compile recompilation — finds the executors already
built. Each entry keeps one executor per device kind ("cpu": the simulator,
"cuda"); an executor handles new input shapes itself (new kernels where the
shapes need them).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Tuple

from smelt._records import Record


@dataclass
class CacheStats:
    entries: int
    hits: int      # lookups that found the fusion's entry
    misses: int    # lookups that created one
    executors_built: int


class RecordsKey:
    """A fusion record as a cache key, its hash computed once: a
    FusionDefinition keeps its key, so a call of execute() does not hash
    every record again (a partition of a transformer holds hundreds)."""
    __slots__ = ("records", "_hash")

    def __init__(self, records: Tuple[Record, ...]):
        self.records = records
        self._hash = hash(records)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, RecordsKey) and self._hash == other._hash
                and self.records == other.records)


class CacheEntry:
    def __init__(self, key: RecordsKey):
        self.key = key
        self.executors: Dict[str, Any] = {}
        self.runs = 0


class FusionCache:
    def __init__(self):
        self._lock = threading.Lock()
        self._entries: Dict[RecordsKey, CacheEntry] = {}
        self._hits = 0
        self._misses = 0
        self._executors_built = 0

    def entry(self, records: RecordsKey) -> CacheEntry:
        with self._lock:
            entry = self._entries.get(records)
            if entry is None:
                self._misses += 1
                entry = self._entries[records] = CacheEntry(records)
            else:
                self._hits += 1
            return entry

    def executor(self, entry: CacheEntry, device_kind: str, build: Callable[[], Any]) -> Any:
        with self._lock:
            executor = entry.executors.get(device_kind)
            if executor is None:
                executor = entry.executors[device_kind] = build()
                self._executors_built += 1
            return executor

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(len(self._entries), self._hits, self._misses, self._executors_built)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._hits = self._misses = self._executors_built = 0

    def __len__(self) -> int:
        return len(self._entries)


_CACHE = FusionCache()


def fusion_cache() -> FusionCache:
    """The process-wide fusion cache."""
    return _CACHE
