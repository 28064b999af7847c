#!/usr/bin/env python3
"""Medians of alternating strata-bench runs, one column per variant.

  scripts/profile/ab_medians.py DIR

DIR holds strata-bench's text output (run with --baseline mpi), one file per
run, named COLLECTIVE-VARIANT-ROUND.txt (all_reduce-avx512-3.txt, say): the
variants are whatever was compared (a setting, a library), each run in
every round, alternating. Prints a markdown table per collective and size:
each variant's median time (us), the median of the MPI baseline over every
run, and MPI / variant (above 1 strata is faster). Exit 1 when DIR holds
no such file.
"""
import collections
import pathlib
import re
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from bench_verdict import human  # noqa: E402  (sizes as bench.sh's verdicts print them)


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    mpi = collections.defaultdict(list)
    rounds = collections.Counter()
    for path in sorted(pathlib.Path(sys.argv[1]).glob("*.txt")):
        m = re.fullmatch(r"(\w+?)-([\w.]+)-(\d+)\.txt", path.name)
        if not m:
            continue
        collective, variant, _ = m.groups()
        rounds[(collective, variant)] += 1
        for line in path.read_text().splitlines():
            fields = line.split()
            if line.startswith("#") or len(fields) < 13 or not fields[0].isdigit():
                continue
            size = int(fields[0])
            times[(collective, size)][variant].append(float(fields[6]))
            mpi[(collective, size)].append(float(fields[10]))
    if not times:
        print(f"ab_medians: no COLLECTIVE-VARIANT-ROUND.txt in {sys.argv[1]}", file=sys.stderr)
        return 1
    variants = sorted({v for row in times.values() for v in row})
    print("| collective | size | " + " | ".join(f"{v} (us)" for v in variants) + " | MPI (us) | " +
          " | ".join(f"MPI / {v}" for v in variants) + " |")
    print("|---" * (3 + 2 * len(variants)) + "|")
    for (collective, size) in sorted(times):
        row = times[(collective, size)]
        med = {v: statistics.median(row[v]) if row[v] else float("nan") for v in variants}
        base = statistics.median(mpi[(collective, size)])
        print(f"| {collective} | {human(size)} | " + " | ".join(f"{med[v]:.1f}" for v in variants) +
              f" | {base:.1f} | " + " | ".join(f"{base / med[v]:.2f}" for v in variants) + " |")
    print(f"\n(runs per collective and variant: {', '.join(f'{c} {v} {n}' for (c, v), n in sorted(rounds.items()))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
