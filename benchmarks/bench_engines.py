"""The engine catalogue's figures (issue 24): per engine configuration and family, the
wall time, the processes run, the distinct crash states judged and the findings by class.

    python benchmarks/bench_engines.py                       # every configuration
    python benchmarks/bench_engines.py sqlite:wal lmdb       # some
    python benchmarks/bench_engines.py --model ext4 --workload resize --out rows.jsonl
    python benchmarks/bench_engines.py hg --model posix --sample 0.25 --sample-seed 1
    python benchmarks/bench_engines.py --table rows.jsonl    # the rows as a Markdown table

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
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "engines"))

import drive  # noqa: E402
import run  # noqa: E402

ENGINES = ("sqlite", "lmdb", "leveldb", "rocksdb", "zodb", "git", "hg")
NAMES = {
    "sqlite": "SQLite",
    "lmdb": "LMDB (py-lmdb)",
    "leveldb": "LevelDB (plyvel)",
    "rocksdb": "RocksDB (rocksdict)",
    "zodb": "ZODB FileStorage",
    "git": "git",
    "hg": "Mercurial",
}
NOT_FINDINGS = ("recovery", "unjudged", "model")
"""Summary labels that are no finding (classify.py): counted in the row, apart."""


def table(rows: list[dict[str, Any]]) -> str:
    """The Markdown table of docs/field-results.md from benchmark rows (one a line of
    ``--out``): engine (version), configuration, family, findings by class (crash
    states), seconds, processes, distinct crash states, the bound's cut, the verdict."""
    head = (
        "| engine (version) | configuration | family | findings by class (crash states) "
        "| time | processes | distinct states | cut | verdict |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
    )
    out = [head]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['spec']} | | {r['families'][0]} | error: {r['error']} |||||\n")
            continue
        summary: dict[str, int] = r["summary"]
        found = {k: n for k, n in summary.items() if k not in NOT_FINDINGS}
        apart = {k: n for k, n in summary.items() if k in NOT_FINDINGS}
        by_class = ", ".join(f"{n:,} {k}" for k, n in found.items()) or "none"
        if apart:
            by_class += "; " + ", ".join(f"{n:,} {k}" for k, n in apart.items())
        verdict = ["findings" if found else "clean"]
        if r["cut"]:
            verdict.append("bounded")
        if r["incomplete"]:
            verdict.append("incomplete")
        if r["volatile"]:
            names = ", ".join(str(v).rsplit("/", 1)[-1] for v in r["volatile"])
            verdict.append(f"{names} volatile")
        cut = int(r["cut"])
        shown = f"{cut:,}" if cut < 10**6 else f"{cut:.1e}"
        out.append(
            f"| {NAMES.get(r['engine'], r['engine'])} {r['version']} | {r['config']} "
            f"| {r['families'][0]} | {by_class} | {r['seconds']:.1f} s "
            f"| {r['processes']:,} | {r['distinct']:,} | {shown} | {', '.join(verdict)} |\n"
        )
    return "".join(out)


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
    p.add_argument("--table", metavar="ROWS", help="print ROWS (a --out file) as a table")
    a = p.parse_args(argv)
    if a.table:
        with open(a.table, encoding="utf-8") as f:
            print(table([json.loads(line) for line in f if line.strip()]), end="")
        return 0
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
