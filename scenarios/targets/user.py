"""A user's target: ``package.module:factory`` or ``path/to/file.py:factory``, and how it runs.

A factory taking one argument, ``factory(base_dir)``, is unmodified code: it runs
*intercepted* (FAULT-MODEL.md §4): its standard-library file calls go into the
model through :func:`crashpoint.faultfs.intercept`. A factory taking two,
``factory(fs, base_dir)``, is written against the
:class:`~crashpoint.faultfs.FileSystem` protocol and runs on the recording
filesystem directly. Either way a :class:`Runner` builds the target on a given
filesystem and calls it, with an optional time limit per call.

Errors: :class:`BadTarget` (the target cannot be judged: exit 2, one line naming
the target and the reason), :class:`TargetTimeout` (a call hung: exit 2, naming the
call) and :class:`TargetExit` (the target called ``os._exit``: exit 2).
"""

from __future__ import annotations

import abc
import contextlib
import importlib
import importlib.util
import inspect
import os
import signal
import sys
import tempfile
import threading
import types
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from ...faultfs import FileSystem, MemoryFileSystem
from ...faultfs._audit import LIMITS, Containment, contained

__all__ = [
    "BadTarget",
    "InterceptRunner",
    "ProtocolRunner",
    "Runner",
    "TargetExit",
    "TargetTimeout",
    "a_storage",
    "exits_refused",
    "import_findings",
    "interception_available",
    "load_factory",
    "make_runner",
    "target_mode",
]

T = TypeVar("T")


class BadTarget(Exception):
    """The target cannot be judged (import error, missing attribute, wrong signature,
    a call that raises on a clean run, a save that writes nothing). One line."""


def a_storage(built: T | None, who: str) -> T:
    """``built``, what ``who`` (a factory, named for the message) returned; BadTarget when
    that is None: a factory that returns nothing has no storage to judge (every load
    would fail, which is no finding of the storage's)."""
    if built is None:
        raise BadTarget(f"{who} returned None, not a storage (does the factory return it?)")
    return built


class TargetTimeout(BaseException):
    """A call of the target ran longer than ``--timeout`` seconds.

    A ``BaseException`` so the target's own ``except Exception`` cannot swallow it."""

    def __init__(self, call: str, seconds: float) -> None:
        super().__init__(call, seconds)
        self.call = call
        self.seconds = seconds

    def __str__(self) -> str:
        return f"{self.call} did not return within --timeout {self.seconds:g} s"


class TargetExit(BaseException):
    """The target called ``os._exit`` (its process would end there, with no report:
    with code 0 a run that judged nothing would read as a pass).

    A ``BaseException`` so the target's own ``except Exception`` cannot swallow it."""

    def __init__(self, code: object) -> None:
        super().__init__(code)
        self.code = code

    def __str__(self) -> str:
        return (
            f"the target called os._exit({self.code!r}): a process exit inside the storage, "
            "where nothing after it could be judged"
        )


class exits_refused:  # used as a function: ``with exits_refused():``
    """While it runs, ``os._exit`` (and ``posix._exit``) raise :class:`TargetExit`
    instead of ending the process (the harness runs the target in its own process;
    ``sys.exit`` raises ``SystemExit`` already). A process forked meanwhile (a worker)
    exits as it asks. Nested uses restore in turn."""

    __slots__ = ("_pid", "_saved")

    def __enter__(self) -> None:
        self._pid = os.getpid()
        self._saved = os._exit, getattr(_POSIX, "_exit", None)
        os._exit = self._refuse
        if _POSIX is not None:
            _POSIX._exit = self._refuse

    def __exit__(self, *exc: object) -> None:
        os._exit = self._saved[0]
        if _POSIX is not None:
            _POSIX._exit = self._saved[1]

    def _refuse(self, status: int) -> NoReturn:
        if os.getpid() != self._pid:  # a child forked meanwhile: not the target's call
            self._saved[0](status)
        raise TargetExit(status)


_POSIX: Any = sys.modules.get("posix")  # os's own module on POSIX systems


#: What each target module's import refused or reached (issue 21): module name -> lines
#: of the verdict's incomplete list (:meth:`Runner.unsupported` adds its factory's).
_IMPORTED: dict[str, list[str]] = {}

#: Top-level modules whose use is a documented limit (``faultfs._audit.LIMITS``).
_LIMIT_MODULES = {
    "ctypes": "ctypes",
    "_ctypes": "ctypes",
    "socket": "socket",
    "_socket": "socket",
    "readline": "readline",
    "posix": "posix",
}


def import_findings(factory: Callable[..., Any]) -> list[str]:
    """What importing ``factory``'s module refused on the real disk or reached of the
    documented limits, as verdict lines (``... (at import)``); empty for a factory
    :func:`load_factory` did not import."""
    return list(_IMPORTED.get(getattr(factory, "__module__", None) or "", []))


def _limits_of(module: types.ModuleType) -> list[str]:
    """The documented limits a module's globals reach: the module ``ctypes``,
    ``socket``, ``readline`` or ``posix`` itself, or a class, function or object of
    ``ctypes``, ``socket`` or ``readline`` (``os``'s functions are ``posix``'s: only the
    ``posix`` module itself counts)."""
    found: list[str] = []
    for value in list(vars(module).values()):
        if isinstance(value, types.ModuleType):
            name = _LIMIT_MODULES.get(value.__name__.partition(".")[0])
        else:
            owner = value if isinstance(value, type) or callable(value) else type(value)
            top = str(getattr(owner, "__module__", "") or "").partition(".")[0]
            name = _LIMIT_MODULES.get(top)
            if name == "posix":
                name = None
        if name is not None and name not in found:
            found.append(name)
    return found


def load_factory(spec: str) -> Callable[..., Any]:
    """Import ``module:attr`` or ``path/file.py:attr`` and return the attribute. A
    file's directory goes first on ``sys.path`` (as ``python file.py`` puts it), so
    the modules beside it import; a module is imported from the current directory.

    The import runs contained (``faultfs._audit``, issue 21): a real-disk change it
    makes (creating a default data directory) is refused; when the import goes on
    anyway, the verdict of every run of this target is incomplete, naming the path
    (:func:`import_findings`), as it is for a module that uses ``ctypes``, ``socket``,
    ``readline`` or ``posix``.

    The standard library's probe for a usable temporary directory (``tempfile.
    gettempdir``) is answered first, outside containment, by the first writable candidate
    directory, without the probe's real file: a module that calls it at import (portalocker 4.4's
    default arguments, ``directory=tempfile.gettempdir()``) would otherwise find every
    candidate refused and fail with "No usable temporary directory".

    Raises BadTarget naming the target and the reason."""
    if tempfile.tempdir is None:  # the first writable candidate, chosen without a probe file
        tempfile.tempdir = next(
            (
                d
                for d in tempfile._candidate_tempdir_list()  # type: ignore[attr-defined]
                if os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK)
            ),
            None,
        )
    imported = Containment()
    module_part, sep, attr = spec.rpartition(":")
    if not sep or not module_part or not attr:
        raise BadTarget(
            f"target {spec!r}: expected package.module:factory or path/to/file.py:factory"
        )
    try:
        if module_part.endswith(".py") or os.sep in module_part or "/" in module_part:
            path = os.path.abspath(module_part)
            if not os.path.isfile(path):
                raise BadTarget(f"target {spec!r}: no such file {module_part!r}")
            here = os.path.dirname(path)  # as `python file.py`: its siblings import
            if here not in sys.path:
                sys.path.insert(0, here)
            name = "crashpoint_target_" + os.path.splitext(os.path.basename(path))[0]
            loader_spec = importlib.util.spec_from_file_location(name, path)
            if loader_spec is None or loader_spec.loader is None:
                raise BadTarget(f"target {spec!r}: cannot import {module_part!r}")
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[name] = module
            with contained(imported):
                loader_spec.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path and "" not in sys.path:
                sys.path.insert(0, os.getcwd())
            with contained(imported):
                module = importlib.import_module(module_part)
    except BadTarget:
        raise
    except BaseException as exc:  # an import that fails in any way is a bad target
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise BadTarget(
            f"target {spec!r}: import failed: {type(exc).__name__}: {_one_line(exc)}"
        ) from None
    limits = [*imported.limits, *(n for n in _limits_of(module) if n not in imported.limits)]
    _IMPORTED[module.__name__] = [
        *(f"real disk: {event} {path} (at import)" for event, path in imported.refused),
        *(f"limit: {LIMITS[n]}" for n in limits),
    ]
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise BadTarget(f"target {spec!r}: {module_part} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise BadTarget(f"target {spec!r}: {attr} is not callable")
    return obj  # type: ignore[no-any-return]


def target_mode(factory: Callable[..., Any], spec: str = "") -> str:
    """``"intercepted"`` for ``factory(base_dir)``, ``"protocol"`` for
    ``factory(fs, base_dir)``. Raises BadTarget for any other signature."""
    label = spec or getattr(factory, "__qualname__", repr(factory))
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return "intercepted"
    params = [
        p
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values())
    if len(params) == 1 or (not params and varargs):
        return "intercepted"
    if len(params) == 2:
        return "protocol"
    raise BadTarget(
        f"target {label!r}: wrong signature {sig}: expected factory(base_dir) "
        "or factory(fs, base_dir)"
    )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def interception_available() -> bool:
    """Whether :func:`crashpoint.faultfs.intercept` exists in this installation."""
    return _intercept_function() is not None


def _intercept_function() -> Callable[..., Any] | None:
    """``crashpoint.faultfs.intercept`` if this installation has it."""
    from ... import faultfs

    found = getattr(faultfs, "intercept", None)
    if found is None:
        try:
            found = importlib.import_module(f"{faultfs.__name__}._intercept").intercept
        except ImportError:
            return None
    return found if callable(found) else None


class Runner(abc.ABC):
    """Builds a target on a filesystem and calls it, under an optional time limit.

    While its ``with`` block runs, one interception (FAULT-MODEL.md §4) routes the
    standard library's file calls into the filesystem of the current run: for an
    unmodified target that is how it runs at all; for a protocol target it is a guard,
    so a storage that ignores ``fs`` and calls ``open`` still writes into the model,
    recorded and judged, never onto the real disk.

    Args:
        factory: the user's factory.
        base_dir: the directory handed to it.
        timeout: seconds a single call may take (None: no limit).
        seed: seeds the interception (tempfile names, pid, clock).

    Attributes:
        mode: ``"protocol"`` or ``"intercepted"``.
    """

    mode = "protocol"
    requires_interception = False

    def __init__(
        self,
        factory: Callable[..., Any],
        base_dir: str,
        *,
        timeout: float | None = None,
        seed: int = 0,
    ) -> None:
        self.factory = factory
        self.base_dir = base_dir
        self.timeout = timeout
        self.seed = seed
        self._stack: contextlib.ExitStack | None = None
        self._icpt: Any = None
        self._containment = Containment()  # real-disk changes refused (faultfs/_audit.py)

    def __enter__(self) -> Runner:
        intercept = _intercept_function()
        if intercept is None and self.requires_interception:
            raise BadTarget(
                "intercepted targets (factory(base_dir)) need crashpoint.faultfs.intercept,"
                " which this installation lacks; give factory(fs, base_dir) instead"
            )
        with contextlib.ExitStack() as stack:
            stack.enter_context(exits_refused())
            if intercept is not None:
                self._icpt = stack.enter_context(
                    intercept(MemoryFileSystem(dirs=("/",)), root=self.base_dir, seed=self.seed)
                )
            self._stack = stack.pop_all()  # closed by __exit__
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stack is not None:
            self._stack.close()
            self._stack = None
            self._icpt = None

    def use(self, fs: FileSystem) -> None:
        """Make the target's file calls go to ``fs`` from now on (the same run goes on
        when ``fs`` is already current: descriptors the target holds stay valid)."""
        if self._icpt is not None and self._icpt.fs is not fs:
            self._icpt.switch(fs)

    def _fresh(self, fs: FileSystem) -> None:
        """A new process on ``fs``: a fresh descriptor table, seeds again."""
        if self._icpt is not None:
            self._icpt.switch(fs)

    @abc.abstractmethod
    def build(self, fs: FileSystem) -> Any:
        """The target object on ``fs`` (the factory called, as a new process would)."""

    def build_actor(self, fs: FileSystem) -> Any:
        """Another target object on ``fs``, sharing the current run (SPEC.md §10.1: an
        actor; the descriptors of the ones built before stay valid)."""
        if self.mode == "protocol":
            return self._contained(lambda: self.factory(fs, self.base_dir))
        return self._contained(lambda: self.factory(self.base_dir))

    def escapes(self) -> list[str]:
        """Paths outside the base directory the target tried to change so far."""
        return list(getattr(self._icpt, "escapes", []) or [])

    def unsupported(self) -> list[str]:
        """Calls the model cannot represent, so far, real-disk changes refused and
        documented limits reached (the factory's import included)."""
        found = list(getattr(self._icpt, "unsupported", []) or [])
        found += [d for d in self._containment.descriptions() if d not in found]
        return found + [d for d in import_findings(self.factory) if d not in found]

    def mark(self) -> tuple[int, ...]:
        """How many escapes, unsupported calls and refusals were noted so far (for
        :meth:`rewind`)."""
        return tuple(len(noted) for noted in self._noted())

    def rewind(self, mark: tuple[int, ...]) -> None:
        """Forget the escapes, unsupported calls and refusals noted since ``mark``: a
        recording that is no run of the workload (the document kind's probe, issue 22)
        neither reports one nor, noted first, hides it from a later run (each is noted
        once)."""
        for noted, n in zip(self._noted(), mark, strict=True):
            del noted[n:]

    def _noted(self) -> list[list[Any]]:
        lists: list[list[Any]] = [self._containment.refused, self._containment.limits]
        icpt = self._icpt
        if icpt is not None:
            lists += [icpt.escapes, icpt.unsupported, icpt.outside_reads]
        return lists

    def _contained(self, fn: Callable[[], T]) -> T:
        """``fn()`` with every real-disk change refused (issue 21, ``faultfs._audit``)."""
        with contained(self._containment):
            return fn()

    def call(self, label: str, fn: Callable[[], T]) -> T:
        """``fn()``, stopped with :class:`TargetTimeout` after ``timeout`` seconds."""
        if not self.timeout or threading.current_thread() is not threading.main_thread():
            return self._contained(fn)
        seconds = self.timeout

        def expire(signum: int, frame: types.FrameType | None) -> None:
            raise TargetTimeout(label, seconds)

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return self._contained(fn)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


class ProtocolRunner(Runner):
    """A ``factory(fs, base_dir)`` target: calls go to the filesystem it was given
    (and, when interception is available, any direct ``open``/``os`` call too)."""

    mode = "protocol"

    def build(self, fs: FileSystem) -> Any:
        self._fresh(fs)
        return self._contained(lambda: self.factory(fs, self.base_dir))


class InterceptRunner(Runner):
    """A ``factory(base_dir)`` target run intercepted: one interception for the whole
    run, switched from filesystem to filesystem (FAULT-MODEL.md §4)."""

    mode = "intercepted"
    requires_interception = True

    def build(self, fs: FileSystem) -> Any:
        if self._icpt is None:
            raise RuntimeError("InterceptRunner used outside its with-block")
        self._fresh(fs)
        return self._contained(lambda: self.factory(self.base_dir))


def make_runner(
    factory: Callable[..., Any],
    base_dir: str,
    *,
    spec: str = "",
    timeout: float | None = None,
    seed: int = 0,
) -> Runner:
    """The runner for ``factory``'s signature (see :func:`target_mode`)."""
    if target_mode(factory, spec) == "protocol":
        return ProtocolRunner(factory, base_dir, timeout=timeout, seed=seed)
    return InterceptRunner(factory, base_dir, timeout=timeout, seed=seed)
