"""Run one engine configuration of the catalogue under ``crashpoint verify --exec`` and
classify its findings (issue 24)::

    python examples/engines/run.py sqlite:wal --model process-crash,ext4,posix \
        --workload first-save [--json] [--runner strace|exec] [--sample RATE --sample-seed N]

The engine runs as a Python target of ``--runner strace`` (``targets.py``, a fork server)
or through ``drive.py``'s commands (``exec``); the engine module's ``RUNNER`` chooses when
``--runner`` is not given (``strace`` if it names none).

Prints one line per finding (family, invariant, class, crash point, operation, the
documented line when it is a trade-off) and the figures (time, processes, distinct
states, whether the verdict is complete). Exit 0 when no finding breaks a documented
guarantee, 1 otherwise, 2 on a bad engine or configuration.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import classify  # noqa: E402
import drive  # noqa: E402
import targets  # noqa: E402
from crashpoint.faultfs import parse_models, with_sample  # noqa: E402
from crashpoint.scenarios.jobs.exec import driver_commands, verify_exec  # noqa: E402

RUNNERS = ("strace", "exec")
"""How a run reaches the engine: ``strace`` (default) the engine as a Python target of
crashpoint's strace driver (``targets.py``: one fork server imports it, each save and
load a forked child); ``exec`` ``drive.py``'s commands, an interpreter each."""


@dataclass
class EngineRun:
    """What one (engine, configuration, families, workloads) run gave.

    Attributes: engine, config, version (the engine's), families, workloads; seconds
    (wall), processes (commands run), distinct (distinct crash states judged), crash_points,
    cut (crash-state combinations the model's bounds left out: an upper bound on what was
    not examined; 0 is exhaustive for the model and workload), not_examined (distinct crash
    states ``--sample`` left out, exactly counted) and sample (``[rate, seed]`` or None),
    incomplete
    (calls the replay could not model, named: the verdict is then incomplete), volatile
    (model paths of the files the engine declares volatile that the run mapped shared and
    writable: garbage in every crash state, ``--volatile``), found (every finding
    classified, recovery included)."""

    engine: str
    config: str
    version: str
    families: list[str]
    workloads: list[str]
    seconds: float = 0.0
    processes: int = 0
    distinct: int = 0
    crash_points: int = 0
    cut: int = 0
    not_examined: int = 0
    sample: list[float] | None = None
    incomplete: list[str] = field(default_factory=list)
    volatile: list[str] = field(default_factory=list)
    found: list[classify.Classified] = field(default_factory=list)

    @property
    def findings(self) -> list[classify.Classified]:
        """The findings (the engine's recovery on open left out)."""
        return [f for f in self.found if f.is_finding]

    @property
    def bugs(self) -> list[classify.Classified]:
        """Findings no documentation line allows, hypothetical ones left out."""
        return [f for f in self.findings if f.trade_off is None and not f.hypothetical]


def run(
    spec: str,
    families: str,
    workloads: list[str],
    jobs: int = 2,
    seed: int = 0,
    runner: str | None = None,
    sample: float | None = None,
    sample_seed: int = 0,
) -> EngineRun:
    """Verify ``spec`` (``ENGINE[:CONFIG]``) through ``runner`` (:data:`RUNNERS`; None: the
    engine module's ``RUNNER``, else ``strace``). Raises
    KeyError (unknown configuration), ModuleNotFoundError (unknown engine), ValueError (an
    unknown runner), BadTarget (crashpoint refused the commands: no strace, a clean save
    failing)."""
    mod, config = drive.engine(spec)
    runner = runner or getattr(mod, "RUNNER", "strace")
    shown = ""
    if runner == "strace":
        shown = targets.target(spec)
        save, load, _ = driver_commands(shown, "document")
    elif runner == "exec":
        cmd = f"{sys.executable} {os.path.join(HERE, 'drive.py')} {mod.NAME}:{config}"
        save, load = f"{cmd} save {{dir}} {{value}}", f"{cmd} load {{dir}}"
    else:
        raise ValueError(f"runner {runner!r}: one of {', '.join(RUNNERS)}")
    models = [with_sample(m, sample, sample_seed) for m in parse_models(families)]
    t0 = time.monotonic()
    result, facts = verify_exec(
        save,
        load,
        shown=shown,
        models=models,
        workloads=workloads,
        jobs=jobs,
        seed=seed,
        shrink=False,
        volatile=volatile(mod, config),
    )
    out = EngineRun(mod.NAME, config, mod.version(), [m.name for m in models], workloads)
    out.seconds = time.monotonic() - t0
    out.processes = facts.processes
    out.volatile = list(facts.volatile_mapped)
    out.distinct = sum(r.distinct_states for r in result.results)
    out.crash_points = sum(r.crash_points for r in result.results)
    out.cut = sum(r.cut for r in result.results)
    out.not_examined = sum(r.not_examined for r in result.results)
    out.sample = None if sample is None else [sample, sample_seed]
    out.incomplete = list(dict.fromkeys(u for r in result.results for u in r.unsupported))
    out.found = classify.classify_result(mod.NAME, config, result)
    unjudged = sum(f.cls == "unjudged" for f in out.found)
    if unjudged:
        out.incomplete.append(
            f"{unjudged} finding(s) not judged: the load opened its directory (issue 22), "
            "or a call the replay does not model (classify.REPLAY_GAPS)"
        )
    return out


def volatile(mod: Any, config: str) -> tuple[str, ...]:
    """The ``--volatile`` globs the engine module declares for ``config`` (its
    ``volatile(config)``; none when it has no such function)."""
    fn = getattr(mod, "volatile", None)
    return tuple(fn(config)) if fn is not None else ()


def as_dict(r: EngineRun) -> dict[str, Any]:
    """``r`` as JSON-able data (the benchmark's and field-results' rows)."""
    d = asdict(r)
    d["summary"] = classify.summary(r.found)
    return d


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("spec")
    p.add_argument("--model", default="process-crash,ext4,posix")
    p.add_argument("--workload", action="append")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--json", action="store_true")
    p.add_argument("--runner", choices=RUNNERS, default=None)
    p.add_argument("--sample", type=float, default=None, metavar="RATE")
    p.add_argument("--sample-seed", type=int, default=0, metavar="N")
    a = p.parse_args(argv)
    try:
        r = run(
            a.spec,
            a.model,
            a.workload or ["first-save"],
            jobs=a.jobs,
            runner=a.runner,
            sample=a.sample,
            sample_seed=a.sample_seed,
        )
    except (KeyError, ModuleNotFoundError, ValueError) as exc:
        print(f"run.py: {exc}", file=sys.stderr)
        return 2
    if a.json:
        json.dump(as_dict(r), sys.stdout, indent=1)
        print()
    else:
        for f in r.found:
            doc = f"  [{f.trade_off[1]}]" if f.trade_off else ""
            hyp = " (hypothetical)" if f.hypothetical else ""
            print(
                f"{f.family:13} {f.invariant} {f.label:34} k={f.crash_point:<4} "
                f"{f.operation}{hyp}{doc}"
            )
        print(
            f"{r.engine} {r.version} {r.config}: {classify.summary(r.found)}; {r.seconds:.0f} s, "
            f"{r.processes} processes, {r.distinct} distinct states, {r.cut} cut by the bounds"
            + (
                f", {r.not_examined} not examined (sample {r.sample[0]:g}, seed {r.sample[1]})"
                if r.sample
                else ""
            )
            + (f"; INCOMPLETE: {r.incomplete}" if r.incomplete else "")
        )
    return 1 if r.bugs or r.incomplete or (r.sample and not r.distinct) else 0


if __name__ == "__main__":
    sys.exit(main())
