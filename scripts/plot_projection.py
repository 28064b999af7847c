#!/usr/bin/env python3
"""Plot strata-tune --project's CSV: predicted bus bandwidth against nodes.

    plot_projection.py [-o projection.png] [--title TEXT] PROJECTION.csv

The CSV is what `strata-tune --project ... --csv FILE` writes (bytes, nodes,
ranks, plan, time_us, busbw_gbps). One panel per message size, one curve
per plan, nodes on a log2 axis. strata-tune writes the CSV and this script
draws it (docs/SCALING.md): the program needs no Python, the plot needs
matplotlib (Debian's python3-matplotlib; /usr/bin/python3 where another
python3 comes first on PATH).
"""
import argparse
import csv
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot_projection.py: matplotlib is missing; install python3-matplotlib (Debian) "
             "or run with /usr/bin/python3")


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:g} {unit}"
        n /= 1024
    return f"{n:g} TiB"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("-o", "--output", default="projection.png")
    parser.add_argument("--title", default="")
    args = parser.parse_args()
    rows = list(csv.DictReader(open(args.csv)))
    if not rows:
        sys.exit(f"plot_projection.py: {args.csv} has no rows")
    sizes = sorted({int(r["bytes"]) for r in rows})
    fig, axes = plt.subplots(1, len(sizes), figsize=(6 * len(sizes), 4.5), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        plans = []
        for r in rows:
            if int(r["bytes"]) == size and r["plan"] not in plans:
                plans.append(r["plan"])
        for plan in plans:
            points = [(int(r["nodes"]), float(r["busbw_gbps"])) for r in rows
                      if int(r["bytes"]) == size and r["plan"] == plan]
            style = "-" if "/" in plan else "--"
            ax.plot([p[0] for p in points], [p[1] for p in points], style, marker=".", label=plan)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("nodes")
        ax.set_ylabel("predicted busbw (GB/s)")
        ax.set_title(f"{human(size)} per rank")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.output, dpi=80)
    print(f"plot_projection.py: wrote {args.output}")


if __name__ == "__main__":
    main()
