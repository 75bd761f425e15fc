"""An injectable filesystem that records, crashes and faults (FAULT-MODEL.md).

Storage code takes a :class:`FileSystem`; production passes :class:`OsFileSystem`,
the harness passes a :class:`RecordingFileSystem` over a :class:`MemoryFileSystem`
and derives crash states from the recorded trace with :func:`crash_points` under
a :class:`PersistenceModel`.
"""

from typing import TYPE_CHECKING, Any

from ._image import SYMLINK_MAGIC, CrashState, Image, os_error, symlink_content, symlink_target
from ._lock import Clock, SystemClock, VirtualClock
from ._memory import MemoryFileSystem
from ._models import (
    ALIASES,
    FAMILIES,
    FS_MODELS,
    MODELS,
    POWER_LOSS,
    POWER_LOSS_REORDER,
    PROCESS_CRASH,
    CrashPoint,
    Family,
    ModelError,
    PersistenceModel,
    canonical,
    crash_points,
    device_default,
    durable_at,
    effective,
    get_family,
    get_model,
    parse_models,
    register_family,
    with_device,
    with_sample,
)
from ._protocol import FileSystem, SymlinkFileSystem, makedirs, write_bytes
from ._recording import Fault, FaultKind, RecordingFileSystem, SimulatedCrash
from ._trace import Op, OpKind, Trace

if TYPE_CHECKING:
    from ._descriptors import Description, DescriptorTable
    from ._intercept import Interception, intercept
    from ._os import OsFileSystem

_LAZY = {
    "Interception": "_intercept",
    "intercept": "_intercept",
    "Description": "_descriptors",
    "DescriptorTable": "_descriptors",
    "OsFileSystem": "_os",
}


def __getattr__(name: str) -> Any:
    """Imported on first use: interception (pyfakefs and the fake os/io) and its
    descriptor table are for verify, the real OS for production storage; ``crashpoint
    explore`` need not pay for them (issue 11)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = [
    "ALIASES",
    "FAMILIES",
    "FS_MODELS",
    "MODELS",
    "POWER_LOSS",
    "POWER_LOSS_REORDER",
    "PROCESS_CRASH",
    "SYMLINK_MAGIC",
    "Clock",
    "CrashPoint",
    "CrashState",
    "Description",
    "DescriptorTable",
    "Family",
    "Fault",
    "FaultKind",
    "FileSystem",
    "Image",
    "Interception",
    "MemoryFileSystem",
    "ModelError",
    "Op",
    "OpKind",
    "OsFileSystem",
    "PersistenceModel",
    "RecordingFileSystem",
    "SimulatedCrash",
    "SymlinkFileSystem",
    "SystemClock",
    "Trace",
    "VirtualClock",
    "canonical",
    "crash_points",
    "device_default",
    "durable_at",
    "effective",
    "get_family",
    "get_model",
    "intercept",
    "makedirs",
    "os_error",
    "parse_models",
    "register_family",
    "symlink_content",
    "symlink_target",
    "with_device",
    "with_sample",
    "write_bytes",
]
