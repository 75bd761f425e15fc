"""A deterministic scheduler of concurrent actors, explored with a preemption bound
(SPEC.md §10.1; CHESS, Musuvathi & Qadeer, PLDI'07/OSDI'08).

Actors run in real threads, but only one at a time: an actor runs until it reaches a
*yield point* (an intercepted file call, a lock, a sleep: faultfs/_actors.py's hooks,
or the start of one of its calls), and there the scheduler picks who continues. So a
schedule is a sequence of choices, and one schedule gives one deterministic trace.

* A *choice point* is a decision with more than one runnable actor; a schedule is
  written as the actor chosen at each choice point (``"0110"``), and replays exactly
  (:class:`Scheduler` ``forced``).
* A *preemption* is a switch away from an actor that could have continued: one that
  is not blocked on a lock, not sleeping and not finished. Switching away from an
  actor that blocks, sleeps or ends is free.
* Time is virtual (:attr:`Scheduler.now`): a sleeping actor is not runnable until its
  wake time, and the clock jumps to the earliest wake time when nobody else can run;
  lock timeouts and poll loops advance it, they never wait.
* A deadlock (every unfinished actor blocked on a lock), a schedule longer than
  ``step_budget`` yield points (an actor spinning for ever) and an actor that does not
  reach a yield point within ``stall_seconds`` of real time are :attr:`Outcome.stuck`
  (W1), never a hang.

:func:`explore_schedules` runs schedules depth-first from the default one (each actor
continues while it can), branching at every choice point past the forced prefix while
the preemptions stay within the bound; what the bound cuts off is counted
(:attr:`Exploration.beyond_bound`) and an exploration with any is never exhaustive.
"""

from __future__ import annotations

import contextvars
import errno
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_PREEMPTIONS",
    "Decision",
    "Exploration",
    "Outcome",
    "Scheduler",
    "SchedulerClock",
    "explore_schedules",
    "format_schedule",
    "parse_schedule",
]

DEFAULT_PREEMPTIONS = 2
"""CHESS's observation: most concurrency bugs need at most two preemptions."""


class _Abort(BaseException):
    """Unwinds an actor's thread when its schedule is abandoned (W1)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """One choice point.

    Attributes:
        current: the actor that reached the yield point (None before any ran).
        enabled: the actors that could run, in order.
        chosen: the one that ran next.
        current_enabled: whether ``current`` could have continued.
        at: operations done when it was taken (the scheduler's ``counter``).
    """

    current: int | None
    enabled: tuple[int, ...]
    chosen: int
    current_enabled: bool
    at: int = 0

    @property
    def preemption(self) -> bool:
        """A switch away from an actor that could have continued."""
        return self.current_enabled and self.current is not None and self.chosen != self.current


@dataclass(slots=True)
class Outcome:
    """One schedule run.

    Attributes:
        choices: the actor chosen at each choice point (replays it).
        decisions: the choice points.
        stuck: why the schedule was abandoned (W1), None when every actor ended.
        diverged: a forced choice named an actor that could not run (a replay that
            does not fit the target any more).
        now: virtual seconds at the end.
        events: ``(actor, what)`` for every yield point, in order.
        segments: ``(actor, start)``: from ``start`` operations done on, ``actor`` ran
            (until the next segment): who issued each operation (a report's lanes).
    """

    choices: tuple[int, ...] = ()
    decisions: list[Decision] = field(default_factory=list)
    stuck: str | None = None
    diverged: bool = False
    now: float = 0.0
    events: list[tuple[int, str]] = field(default_factory=list)
    segments: list[tuple[int, int]] = field(default_factory=list)

    @property
    def preemptions(self) -> int:
        return sum(d.preemption for d in self.decisions)

    @property
    def preempted_at(self) -> list[int]:
        """Operations done when each preemption happened (:attr:`Decision.at`)."""
        return [d.at for d in self.decisions if d.preemption]

    def actor_of(self, op: int) -> int | None:
        """The actor that issued operation ``op`` (None: before any actor ran)."""
        who = None
        for actor, start in self.segments:
            if start > op:
                break
            who = actor
        return who


def format_schedule(choices: Sequence[int]) -> str:
    """``"0110"``: one digit per choice point (``"-"`` for none)."""
    return "".join(str(c) for c in choices) or "-"


def parse_schedule(text: str, actors: int) -> tuple[int, ...]:
    """The inverse of :func:`format_schedule`. Raises ValueError for anything else or an
    actor number not below ``actors``."""
    if text == "-":
        return ()
    if not text or not text.isdigit() or any(int(c) >= actors for c in text):
        raise ValueError(
            f"a schedule is one digit per choice point, each an actor below {actors} "
            f"(as a counterexample prints it), not {text!r}"
        )
    return tuple(int(c) for c in text)


class Scheduler:
    """Runs ``len(bodies)`` actors serialised (see the module docstring).

    Implements :class:`~crashpoint.faultfs.ActorHooks` for an interception.

    Args:
        forced: choices to take at the first choice points (a schedule prefix).
        step_budget: yield points a schedule may pass before it is stuck (W1).
        stall_seconds: real seconds an actor may run without yielding before the
            schedule is stuck (W1).
        pid_base: ``os.getpid`` of actor ``i`` is ``pid_base + i``.
        counter: operations done so far (a recording's ``op_count``): decisions and
            :attr:`Outcome.segments` are placed on it.
    """

    def __init__(
        self,
        forced: Sequence[int] = (),
        *,
        step_budget: int = 5_000,
        stall_seconds: float = 10.0,
        pid_base: int = 2000,
        counter: Callable[[], int] | None = None,
    ) -> None:
        self.counter = counter or (lambda: len(self.outcome.events))
        self.forced = tuple(forced)
        self.step_budget = step_budget
        self.stall_seconds = stall_seconds
        self.pid_base = pid_base
        self.now = 0.0
        self._cv = threading.Condition()
        self._local = threading.local()
        self._n = 0
        self._turn: int | None = None
        self._finished: list[bool] = []
        self._wake: list[float] = []
        self._blocked: list[str | None] = []
        self._locks: dict[str, int] = {}
        self._steps = 0
        self._aborted = False
        self.outcome = Outcome()
        self.foreign: list[str] = []
        """Threads other than the actors that made a file call, locked or slept (a
        target's own threads: not scheduled, so the verdict is incomplete)."""

    # --- the hooks (faultfs/_actors.py) ---------------------------------------------
    def _me(self) -> int | None:
        me: int | None = getattr(self._local, "actor", None)
        if me is None and self._n and threading.current_thread() is not threading.main_thread():
            name = threading.current_thread().name
            if name not in self.foreign:  # a thread the target started: not scheduled
                self.foreign.append(name)
        return me

    def before_call(self) -> None:
        self.point("call")

    def point(self, what: str) -> None:
        """A yield point of the calling actor (nothing outside an actor)."""
        me = self._me()
        if me is None:
            return
        with self._cv:
            self.outcome.events.append((me, what))
            self._switch(me)

    def sleep(self, seconds: float) -> None:
        me = self._me()
        seconds = max(float(seconds), 0.0)
        if me is None:
            self.now += seconds
            return
        with self._cv:
            self.outcome.events.append((me, f"sleep {seconds:g}s"))
            self._wake[me] = self.now + seconds
            self._switch(me)

    def monotonic(self) -> float:
        return self.now

    def pid(self) -> int | None:
        me = self._me()
        return None if me is None else self.pid_base + me

    def flock(self, path: str, exclusive: bool, blocking: bool, unlock: bool) -> None:
        me = self._me()
        if me is None:
            return
        with self._cv:
            self.outcome.events.append((me, f"{'unlock' if unlock else 'lock'} {path}?"))
            self._switch(me)  # a lock call is a yield point
            if unlock:
                if self._locks.get(path) == me:
                    del self._locks[path]
                    self.outcome.events.append((me, f"unlock {path}"))
                return
            while self._locks.get(path, me) != me:
                if not blocking:
                    self.outcome.events.append((me, f"lock {path}: held"))
                    raise BlockingIOError(errno.EWOULDBLOCK, "Resource temporarily unavailable")
                self.outcome.events.append((me, f"lock {path}: waits"))
                self._blocked[me] = path
                self._switch(me)
            self._blocked[me] = None
            self._locks[path] = me
            self.outcome.events.append((me, f"lock {path}"))

    # --- scheduling -----------------------------------------------------------------
    def _enabled(self) -> list[int]:
        return [
            i
            for i in range(self._n)
            if not self._finished[i]
            and self._wake[i] <= self.now
            and (self._blocked[i] is None or self._locks.get(self._blocked[i] or "") is None)
        ]

    def _decide(self, current: int | None) -> None:
        """Pick who runs next (holding the condition)."""
        self._steps += 1
        if self._steps > self.step_budget:
            self._abort(f"no end within {self.step_budget} scheduler steps (an actor spins)")
            return
        enabled = self._enabled()
        while not enabled:
            sleeping = [
                self._wake[i]
                for i in range(self._n)
                if not self._finished[i] and self._wake[i] > self.now
            ]
            if not sleeping:
                break
            self.now = min(sleeping)
            enabled = self._enabled()
        if not enabled:
            if all(self._finished):
                self._turn = None
            else:
                waits = ", ".join(
                    f"actor {i} waits for {p} (held by actor {self._locks.get(p)})"
                    for i, p in enumerate(self._blocked)
                    if p is not None and not self._finished[i]
                )
                self._abort(f"deadlock: {waits}")
            self._cv.notify_all()
            return
        can_continue = current is not None and current in enabled
        chosen: int = current if current is not None and can_continue else enabled[0]
        if len(enabled) > 1:
            k = len(self.outcome.decisions)
            if k < len(self.forced):
                if self.forced[k] in enabled:
                    chosen = self.forced[k]
                else:
                    self.outcome.diverged = True
            self.outcome.decisions.append(
                Decision(
                    current,
                    tuple(enabled),
                    chosen,
                    can_continue,
                    at=self.counter(),
                )
            )
        if chosen != self._turn or not self.outcome.segments:
            self.outcome.segments.append((chosen, self.counter()))
        self._turn = chosen
        self._cv.notify_all()

    def _abort(self, why: str) -> None:
        if self.outcome.stuck is None:
            self.outcome.stuck = why
        self._aborted = True
        self._turn = None
        self._cv.notify_all()

    def _switch(self, me: int) -> None:
        """The calling actor yields; return when it is its turn again (holding the
        condition). Raises _Abort when the schedule is abandoned."""
        self._decide(me)
        self._wait_turn(me)

    def _wait_turn(self, me: int) -> None:
        while self._turn != me:
            if self._aborted:
                raise _Abort
            self._cv.wait()
        if self._aborted:
            raise _Abort

    def run(self, bodies: Sequence[Callable[[], None]]) -> Outcome:
        """Run every body as an actor to its end (or until the schedule is stuck).

        Exceptions a body raises are its own business (the caller records them inside
        the body); one escaping a body ends that actor."""
        n = self._n = len(bodies)
        self._finished = [False] * n
        self._wake = [0.0] * n
        self._blocked = [None] * n
        threads = []
        for i, body in enumerate(bodies):
            ctx = contextvars.copy_context()
            t = threading.Thread(
                target=ctx.run,
                args=(self._actor, i, body),
                name=f"crashpoint-actor-{i}",
                daemon=True,
            )
            threads.append(t)
        for t in threads:
            t.start()
        with self._cv:
            self._decide(None)
            last = -1
            while not all(self._finished) and not self._aborted:
                if last == self._steps:
                    who = self._turn
                    self._abort(
                        f"actor {who} did not reach a yield point within "
                        f"{self.stall_seconds:g} s of real time"
                    )
                    break
                last = self._steps
                self._cv.wait(self.stall_seconds)
        deadline = time.monotonic() + 2.0
        for t in threads:
            t.join(max(deadline - time.monotonic(), 0.0))
        self.outcome.choices = tuple(d.chosen for d in self.outcome.decisions)
        self.outcome.now = self.now
        return self.outcome

    def _actor(self, me: int, body: Callable[[], None]) -> None:
        self._local.actor = me
        try:
            with self._cv:
                self._wait_turn(me)
            body()
        except _Abort:
            pass
        finally:
            with self._cv:
                self._finished[me] = True
                for path in [p for p, who in self._locks.items() if who == me]:
                    del self._locks[path]  # a process's locks end with it
                if not self._aborted and self._turn == me:
                    self._decide(me)
                self._cv.notify_all()


class SchedulerClock:
    """A :class:`~crashpoint.faultfs.Clock` on a scheduler's virtual time: a
    filesystem's lock waits (``fs.lock``, SPEC.md §6) sleep as actors."""

    __slots__ = ("_s",)

    def __init__(self, scheduler: Scheduler) -> None:
        self._s = scheduler

    def monotonic(self) -> float:
        return self._s.now

    def sleep(self, seconds: float) -> None:
        self._s.sleep(seconds)


@dataclass(slots=True)
class Exploration:
    """What :func:`explore_schedules` ran.

    Attributes:
        bound: the preemption bound.
        schedules: schedules run.
        distinct: schedules kept (distinct by their key: the trace they produced).
        beyond_bound: branches the bound cut off (each at least one schedule unrun).
        beyond_limit: branches left when ``max_schedules`` was reached.
        kept: ``(key, outcome)`` of the first schedule of each distinct key, in order.
        replayed: one schedule given (``--schedule``), the others not run.
    """

    bound: int
    schedules: int = 0
    distinct: int = 0
    beyond_bound: int = 0
    beyond_limit: int = 0
    kept: list[tuple[Hashable, Outcome]] = field(default_factory=list)
    replayed: bool = False

    @property
    def exhaustive(self) -> bool:
        """Every schedule was run (nothing cut off by the bound or the limit)."""
        return self.beyond_bound == 0 and self.beyond_limit == 0 and not self.replayed

    def words(self) -> str:
        """One line stating the bound and what it left out."""
        head = (
            f"{self.schedules} schedules ({self.distinct} distinct traces), "
            f"at most {self.bound} preemptions"
        )
        if self.replayed:
            return head + ": one schedule replayed (--schedule), the others not run"
        if self.exhaustive:
            return head + ": every schedule within the bound (no schedule needs more)"
        parts = []
        if self.beyond_bound:
            parts.append(f"{self.beyond_bound} branches beyond the bound not run")
        if self.beyond_limit:
            parts.append(f"{self.beyond_limit} branches past the schedule limit not run")
        return head + ": not exhaustive, " + ", ".join(parts)


def explore_schedules(
    run_one: Callable[[tuple[int, ...]], tuple[Hashable, Outcome]],
    *,
    preemptions: int = DEFAULT_PREEMPTIONS,
    max_schedules: int | None = None,
) -> Exploration:
    """Depth-first over the choice points of ``run_one(prefix)`` (a schedule forced to
    ``prefix``, then each actor continuing while it can), within ``preemptions``.

    Returns:
        the :class:`Exploration`; ``kept`` holds one outcome per distinct key.
    """
    found = Exploration(preemptions)
    stack: list[tuple[int, ...]] = [()]
    seen: set[Hashable] = set()
    while stack:
        if max_schedules is not None and found.schedules >= max_schedules:
            found.beyond_limit = len(stack)
            break
        prefix = stack.pop()
        key, out = run_one(prefix)
        found.schedules += 1
        if key not in seen:
            seen.add(key)
            found.kept.append((key, out))
        spent = 0
        branches = []
        for i, d in enumerate(out.decisions):
            if i >= len(prefix):
                for alt in d.enabled:
                    if alt == d.chosen:
                        continue
                    cost = spent + (1 if d.current_enabled and alt != d.current else 0)
                    if cost <= preemptions:
                        branches.append((*out.choices[:i], alt))
                    else:
                        found.beyond_bound += 1
            spent += d.preemption
        stack.extend(reversed(branches))
    found.distinct = len(found.kept)
    return found
