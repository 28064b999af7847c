#!/usr/bin/env python3
"""strata against each MPI's own MPI_Allreduce, one build per MPI.

    scripts/bench_mpis.py [--rounds N] [--sizes 4k:16M] BUILD...

Each BUILD is a strata build folder configured for one MPI (`meson setup
build-mpich -Dmpi=mpich`, docs/MPI.md) with strata-bench built in it. In
each of N rounds (default 5) every build runs once, in the order given:
`BUILD/strata-launch -n 2 --bind core` (the launcher of that build's MPI,
ranks bound to cores in its own words) starts strata-bench with
`--baseline mpi`, so strata and that MPI's MPI_Allreduce are timed on the
same buffers in the same run (f32 sum, out of place, 50 timed iterations
after 5 warm-ups, every result checked). strata's log (STRATA_DEBUG=INFO)
says how near the two ranks sit at the start (a cache-line round trip:
"near" or "far", docs/ALGORITHMS.md); both libraries' times depend on it,
so the medians are grouped by it. Prints one Markdown table per placement:
per size, per MPI, the median of strata's and of MPI_Allreduce's time and
their ratio (above 1: strata is faster), with the number of runs.
Exit status: 0, or 1 when a run failed or a result was wrong.
"""
import argparse
import collections
import pathlib
import re
import statistics
import subprocess
import sys

ROW = re.compile(r"^\s*(\d+)\s+\d+\s+\S+\s+\S+\s+-?\d+\s+\S+\s+([\d.]+)\s+\S+\s+\S+\s+(\d+)\s+([\d.]+)\s")
PLACEMENT = re.compile(r"local ranks sit (near|far from) each other \(cache-line round trip (\d+) ns")


def run_once(build: pathlib.Path, sizes: str) -> tuple[str, str, dict[int, tuple[float, float]]]:
    """(MPI's name, placement, size -> (strata us, MPI us)) of one run."""
    low, high = sizes.split(":")
    command = [str(build / "strata-launch"), "-n", "2", "--bind", "core", "--env", "STRATA_DEBUG=INFO",
               str(build / "apps" / "bench" / "strata-bench"), "-b", low, "-e", high, "-f", "4", "-n", "50",
               "-w", "5", "--baseline", "mpi", "--no-progress"]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}:\n{done.stdout[-2000:]}")
    placement = PLACEMENT.search(done.stdout)
    where = "unknown" if placement is None else ("near" if placement.group(1) == "near" else "far")
    times = {}
    for line in done.stdout.splitlines():
        row = ROW.match(line)
        if row:
            if row.group(3) != "0":
                raise RuntimeError(f"{build}: wrong results at {row.group(1)} B:\n{line}")
            times[int(row.group(1))] = (float(row.group(2)), float(row.group(4)))
    # strata-launch's comment names the MPI configure found ("for MPICH 4.0.2 (").
    name = re.search(r"^# for (.*) \(", (build / "strata-launch").read_text(), re.M)
    return (name.group(1) if name else build.name), where, times


def label(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB" if size >= 1024 else f"{size} B"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default="4k:16M", help="smallest:largest, strata-bench's -b and -e (x4 steps)")
    parser.add_argument("builds", nargs="+", type=pathlib.Path)
    args = parser.parse_args()
    names = {}
    # placement -> MPI -> size -> ([strata], [mpi])
    times = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(lambda: ([], []))))
    runs = collections.Counter()
    try:
        for round_ in range(args.rounds):
            for build in args.builds:
                name, where, rows = run_once(build, args.sizes)
                names[build] = name
                runs[where, name] += 1
                for size, (strata, mpi) in rows.items():
                    times[where][name][size][0].append(strata)
                    times[where][name][size][1].append(mpi)
                print(f"round {round_ + 1}: {name}: {where}", file=sys.stderr, flush=True)
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        print(f"bench_mpis: {error}", file=sys.stderr)
        return 1
    for where in sorted(times):
        mpis = [names[b] for b in args.builds if names[b] in times[where]]
        print(f"\nRanks {where} ({', '.join(f'{m}: {runs[where, m]} runs' for m in mpis)}). Per cell: "
              "MPI_Allreduce's time / strata's (above 1: strata is faster), then (strata µs / MPI_Allreduce µs), "
              "medians\n")
        print("| size | " + " | ".join(mpis) + " |")
        print("|---|" + "---|" * len(mpis))
        for size in sorted({s for m in mpis for s in times[where][m]}):
            cells = []
            for m in mpis:
                strata, mpi = (statistics.median(v) for v in times[where][m][size])
                cells.append(f"**{mpi / strata:.2f}** ({strata:.1f} / {mpi:.1f})")
            print(f"| {label(size)} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
