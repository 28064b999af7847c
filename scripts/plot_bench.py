#!/usr/bin/env python3
"""Plot strata-bench JSON results: bus bandwidth against message size.

    plot_bench.py [-o busbw.png] [--title TEXT] RESULT.json [RESULT.json ...]

One curve per JSON file (labelled by the algorithm it ran and, when the files
differ in rank count, the ranks), plus the MPI baseline measured in the same
runs (dashed, one per rank count). With a baseline, a second panel shows the
ratio baseline time / strata time (> 1: strata faster). Uses Debian's
python3-matplotlib; no display needed.

Files from a simulated device (JSON `simulated`: the test double) have no
bandwidth: they are left out with a note on stderr, and when every file is
such, nothing is written (exit 0).
"""
import argparse
import json
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter
except ImportError:
    sys.exit("plot_bench.py: matplotlib is missing; install python3-matplotlib (Debian) "
             "or run with /usr/bin/python3")


def human(bytes_, _pos=None):
    for unit in ("B", "K", "M", "G"):
        if bytes_ < 1024:
            return f"{bytes_:g}{unit}"
        bytes_ /= 1024
    return f"{bytes_:g}T"


def label_for(doc, vary_ranks):
    algorithms = []
    for row in doc["rows"]:
        if row["algorithm"] not in algorithms:
            algorithms.append(row["algorithm"])
    # "auto" that ran several algorithms reads better as the spec plus the list.
    name = algorithms[0] if len(algorithms) == 1 else f"{doc['algorithm']} ({'/'.join(algorithms)})"
    if doc.get("model"):
        name += f" {doc['model']['name']}"
    return f"strata {name}" + (f", {doc['ranks']} ranks" if vary_ranks else "")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", help="strata-bench -J output files")
    parser.add_argument("-o", "--output", default="busbw.png", help="PNG to write (default: busbw.png)")
    parser.add_argument("--title", help="plot title (default: collective, dtype, op and hosts)")
    args = parser.parse_args()

    docs = []
    for path in args.results:
        with open(path) as f:
            doc = json.load(f)
        if doc.get("simulated"):
            print(f"plot_bench.py: {path}: ran on a simulated device ({doc.get('simulated_device')}): "
                  "no bandwidth to plot, left out", file=sys.stderr)
        else:
            docs.append(doc)
    if not docs:
        print("plot_bench.py: nothing to plot: every file ran on a simulated device", file=sys.stderr)
        return
    vary_ranks = len({d["ranks"] for d in docs}) > 1
    has_baseline = any(d.get("baseline") for d in docs)

    if has_baseline:
        fig, (ax, ax_ratio) = plt.subplots(2, 1, figsize=(9, 7.5), sharex=True, gridspec_kw={"height_ratios": [3, 1.3]})
    else:
        fig, ax = plt.subplots(figsize=(9, 5.5))
        ax_ratio = None

    baselines_drawn = set()
    for doc in docs:
        rows = doc["rows"]
        sizes = [r["bytes"] for r in rows]
        line, = ax.plot(sizes, [r["busbw"] for r in rows], marker="o", markersize=3, label=label_for(doc, vary_ranks))
        if doc.get("baseline"):
            key = (doc["collective"], doc["ranks"], len(doc["hosts"]))
            if key not in baselines_drawn:  # the same MPI call measured again adds no information
                baselines_drawn.add(key)
                ax.plot(sizes, [r["baseline"]["busbw"] for r in rows], linestyle="--", color="0.35" if not vary_ranks else None,
                        marker="x", markersize=3,
                        label=f"{doc['baseline']}" + (f", {doc['ranks']} ranks" if vary_ranks else ""))
            ax_ratio.plot(sizes, [r.get("ratio", float("nan")) for r in rows], color=line.get_color(), marker="o", markersize=3)
        if doc.get("summary", {}).get("memcpy"):
            ax.axhline(doc["summary"]["memcpy"]["gbps"], color="0.7", linewidth=0.8, linestyle=":")
            ax.annotate("memcpy, 1 core", (sizes[0], doc["summary"]["memcpy"]["gbps"]), fontsize=8, color="0.5",
                        va="bottom")

    first = docs[0]
    hosts = ", ".join(h["host"] for h in first["hosts"])
    ax.set_title(args.title or f"{first['collective']} {first['dtype']} {first['op']}, {first['ranks']} ranks on {hosts}")
    ax.set_xscale("log", base=2)
    ax.set_ylabel(f"bus bandwidth (GB/s), busbw = algbw x {first['bus_factor']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    bottom = ax_ratio or ax
    bottom.xaxis.set_major_formatter(FuncFormatter(human))
    bottom.set_xlabel("message size")
    if ax_ratio:
        ax_ratio.axhline(1.0, color="0.3", linewidth=0.8)
        ax_ratio.set_ylabel("baseline time /\nstrata time")
        ax_ratio.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"plot_bench.py: wrote {args.output}")


if __name__ == "__main__":
    main()
