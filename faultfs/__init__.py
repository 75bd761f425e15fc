"""An injectable filesystem that records, crashes and faults (FAULT-MODEL.md).

Storage code takes a :class:`FileSystem`; production passes :class:`OsFileSystem`,
the harness passes a :class:`RecordingFileSystem` over a :class:`MemoryFileSystem`
and derives crash states from the recorded trace with :func:`crash_points` under
a :class:`PersistenceModel`.
"""

from typing import TYPE_CHECKING, Any

from ._descriptors import Description, DescriptorTable
from ._image import CrashState, Image, os_error
from ._memory import MemoryFileSystem
from ._models import (
    MODELS,
    POWER_LOSS,
    POWER_LOSS_REORDER,
    PROCESS_CRASH,
    CrashPoint,
    PersistenceModel,
    crash_points,
    effective,
    get_model,
)
from ._os import OsFileSystem
from ._protocol import FileSystem, makedirs, write_bytes
from ._recording import Fault, FaultKind, RecordingFileSystem, SimulatedCrash
from ._trace import Op, OpKind, Trace

if TYPE_CHECKING:
    from ._intercept import Interception, intercept


def __getattr__(name: str) -> Any:
    """``intercept`` and ``Interception`` are imported on first use: interception
    (pyfakefs and the fake os/io) is for verify, and explore need not pay for it."""
    if name in ("Interception", "intercept"):
        from . import _intercept

        return getattr(_intercept, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MODELS",
    "POWER_LOSS",
    "POWER_LOSS_REORDER",
    "PROCESS_CRASH",
    "CrashPoint",
    "CrashState",
    "Description",
    "DescriptorTable",
    "Fault",
    "FaultKind",
    "FileSystem",
    "Image",
    "Interception",
    "MemoryFileSystem",
    "Op",
    "OpKind",
    "OsFileSystem",
    "PersistenceModel",
    "RecordingFileSystem",
    "SimulatedCrash",
    "Trace",
    "crash_points",
    "effective",
    "get_model",
    "intercept",
    "makedirs",
    "os_error",
    "write_bytes",
]
