#!/usr/bin/env python3
"""The peer yardstick's tables (scripts/peers.sh): strata against each peer
MPI, from the raw CSV that peers.sh writes.

    report.py CSV [--skipped 'MPI: why']... [--failed 'run: why']...

CSV: a header, then one row per (run, size): round, config, collective,
size, median_us, placement_before_ns, placement_after_ns, placement. A run
is one (round, config, collective); its placement is "near" or "far" when
the probes before and after it agreed, else "mixed", and mixed runs are
left out of every table (counted in the last line).

Prints, per placement (near, then far) and per collective, one Markdown
table: per size, the median over runs of strata's time and of each peer's
(µs, the number of runs in brackets); Open MPI 5's cell is the best of its
three configurations (default, coll sm, coll han), named; then the best
peer and strata's time over the best peer's (below 1: strata is faster).
A peer with no rows at all (skipped) has no column. The last line counts
the runs by placement, the mixed ones left out and the failed ones, and
names the MPIs skipped, with why (--skipped, --failed: given by peers.sh).
"""
import argparse
import collections
import csv
import statistics
import sys

# config -> (peer column, variant named in the cell)
CONFIGS = {
    "ompi41": ("Open MPI 4.1", ""),
    "ompi5": ("Open MPI 5", "default"),
    "ompi5-sm": ("Open MPI 5", "sm"),
    "ompi5-han": ("Open MPI 5", "han"),
    "mpich5": ("MPICH 5", ""),
    "impi": ("Intel MPI", ""),
}
PEERS = ["Open MPI 4.1", "Open MPI 5", "MPICH 5", "Intel MPI"]
COLLECTIVES = {
    "allreduce": "MPI_Allreduce (f32 sum, out of place)",
    "reduce": "MPI_Reduce (f32 sum, root 0)",
    "bcast": "MPI_Bcast (root 0)",
    "allgather": "MPI_Allgather (size: the whole output)",
    "reduce_scatter": "MPI_Reduce_scatter_block (f32 sum, size: the whole input)",
}
FIELDS = ["round", "config", "collective", "size", "median_us", "placement_before_ns", "placement_after_ns",
          "placement"]


def label(size):
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB" if size >= 1024 else f"{size} B"


def load(path):
    """[(run, placement, size, µs)], run being (round, config, collective)."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != FIELDS:
            raise ValueError(f"{path}: header {reader.fieldnames}, expected {FIELDS}")
        return [((int(r["round"]), r["config"], r["collective"]), r["placement"], int(r["size"]),
                 float(r["median_us"])) for r in reader]


def tables(rows, skipped=(), failed=()):
    """The report's lines."""
    runs = {}  # run -> placement
    # placement -> collective -> size -> config -> [µs, one per run]
    times = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(
        lambda: collections.defaultdict(list))))
    for run, placement, size, us in rows:
        runs[run] = placement
        if placement in ("near", "far"):
            times[placement][run[2]][size][run[1]].append(us)
    present = {CONFIGS[c][0] for _, c, _ in runs if c in CONFIGS}
    peers = [p for p in PEERS if p in present]
    out = []
    for placement in ("near", "far"):
        for collective in [c for c in COLLECTIVES if c in times[placement]]:
            out += ["", f"### {placement}: {COLLECTIVES[collective]}", "",
                    "Median µs over runs (runs); strata / best below 1: strata is faster.", "",
                    "| size | strata | " + " | ".join(peers) + " | best peer | strata / best |",
                    "|---|---|" + "---|" * len(peers) + "---|---|"]
            for size in sorted(times[placement][collective]):
                out.append(row(size, times[placement][collective][size], peers))
    counts = collections.Counter(runs.values())
    summary = (f"{len(runs)} runs: {counts['near']} near, {counts['far']} far, "
               f"{counts['mixed']} mixed (left out); {len(failed)} failed")
    summary += (": " + "; ".join(failed)) if failed else ""
    summary += "; skipped: " + ("; ".join(skipped) if skipped else "none") + "."
    return out + ["", summary]


def row(size, by_config, peers):
    """One size's table row: by_config is config -> [µs, one per run]."""
    def cell(values):
        return f"{statistics.median(values):.2f} ({len(values)})"
    best = {}  # peer -> (median, variant, runs)
    for config, values in by_config.items():
        if config in CONFIGS:
            peer, variant = CONFIGS[config]
            median = statistics.median(values)
            if peer not in best or median < best[peer][0]:
                best[peer] = (median, variant, len(values))
    cells = [cell(by_config["strata"]) if "strata" in by_config else "–"]
    for peer in peers:
        if peer not in best:
            cells.append("–")
            continue
        median, variant, n = best[peer]
        cells.append(f"{median:.2f} ({variant}, {n})" if variant else f"{median:.2f} ({n})")
    if best:
        top = min(best, key=lambda p: best[p][0])
        cells.append(f"{top} ({best[top][1]})" if best[top][1] else top)
        cells.append(f"{statistics.median(by_config['strata']) / best[top][0]:.2f}" if "strata" in by_config else "–")
    else:
        cells += ["–", "–"]
    return f"| {label(size)} | " + " | ".join(cells) + " |"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv")
    parser.add_argument("--skipped", action="append", default=[], help="an MPI skipped, and why")
    parser.add_argument("--failed", action="append", default=[], help="a run that failed, and why")
    args = parser.parse_args()
    try:
        rows = load(args.csv)
    except (OSError, ValueError, KeyError) as error:
        print(f"report.py: {error}", file=sys.stderr)
        return 1
    print("\n".join(tables(rows, args.skipped, args.failed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
