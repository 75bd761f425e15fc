"""The engine catalogue's figures (issue 24): per engine configuration and family, the
wall time, the processes run, the distinct crash states judged and the findings by class.

    python benchmarks/bench_engines.py                       # every configuration
    python benchmarks/bench_engines.py sqlite:wal lmdb       # some
    python benchmarks/bench_engines.py --model ext4 --workload resize --out rows.jsonl
    python benchmarks/bench_engines.py hg --model posix --sample 0.25 --sample-seed 1

Each row is printed as one JSON line (and appended to ``--out``): the table of
docs/field-results.md is made from these rows. Figures are printed, never asserted.
Runs one configuration at a time, ``--jobs`` loads at once (default 2). ``--sample RATE``
judges a seeded share of the distinct crash states (the row's ``not_examined`` counts the
rest): the figure to set beside the full row's is the ratio of their times.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "engines"))

import drive  # noqa: E402
import run  # noqa: E402

ENGINES = ("sqlite", "lmdb", "leveldb", "rocksdb", "zodb", "git", "hg")


def every_spec() -> list[str]:
    """``ENGINE:CONFIG`` of every configuration of the catalogue."""
    out = []
    for name in ENGINES:
        mod, _ = drive.engine(name)
        out += [f"{name}:{c}" for c in mod.CONFIGS]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("specs", nargs="*")
    p.add_argument("--model", default="process-crash,ext4,posix")
    p.add_argument("--workload", action="append")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out")
    p.add_argument("--sample", type=float, default=None, metavar="RATE")
    p.add_argument("--sample-seed", type=int, default=0, metavar="N")
    a = p.parse_args(argv)
    for spec in a.specs or every_spec():
        for family in a.model.split(","):
            try:
                r = run.run(
                    spec,
                    family,
                    a.workload or ["first-save"],
                    jobs=a.jobs,
                    sample=a.sample,
                    sample_seed=a.sample_seed,
                )
            except Exception as exc:  # a row that failed says why, the next one runs
                row = {"spec": spec, "families": [family], "error": f"{type(exc).__name__}: {exc}"}
            else:
                row = run.as_dict(r)
                row["spec"] = spec
                row["found"] = [
                    {k: f[k] for k in ("family", "invariant", "cls", "crash_point", "operation")}
                    | {"documented": bool(f["trade_off"]), "hypothetical": f["hypothetical"]}
                    for f in row["found"]
                ]
            line = json.dumps(row)
            print(line, flush=True)
            if a.out:
                with open(a.out, "a", encoding="utf-8") as f:
                    f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
