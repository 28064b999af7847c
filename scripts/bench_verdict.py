#!/usr/bin/env python3
"""bench.sh's verdict: one line per strata-bench JSON file.

  bench_verdict.py RESULT.json...

Against a baseline, the verdict states the range over every size, not the
largest size alone: the slowest and the fastest ratio (baseline time /
strata time, so above 1 strata is faster) with the size of each, and the
sizes where strata is slower than the baseline. A run on a simulated device
(the GPU test double) compares no speeds: its times are the simulator's.
Every verdict ends with whether every result was right. Exit 0; a file
that is not a strata-bench JSON is an error (exit 1, one line naming it).
"""
import json
import sys


def human(n):
    """8 B, 4 KiB, 64 MiB; 97.5 MiB where a size is not a whole unit."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            value = n / scale
            return f"{value:g} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} B"


def speed(ratio):
    return f"{ratio:.2f}x faster" if ratio >= 1 else f"{1 / ratio:.2f}x slower"


def spans(rows, losing):
    """Runs of consecutive rows where strata loses, as '8 B-2 KiB, 256 KiB'."""
    out, start, prev = [], None, None
    for row in rows + [None]:
        if row is not None and losing(row):
            start = start or row
            prev = row
            continue
        if start is not None:
            out.append(human(start["bytes"]) if start is prev else f"{human(start['bytes'])}-{human(prev['bytes'])}")
            start = None
    return ", ".join(out)


def verdict(d):
    wrong = d["summary"]["wrong_total"]
    check = "all results correct" if wrong == 0 else f"{wrong} WRONG values"
    rows = d["rows"]
    what = f"strata ({d['algorithm']}) on {d['ranks']} ranks"
    if d.get("model"):
        what += f", {d['model']['name']}"
    if d.get("simulated"):
        return f"verdict: simulated device ({d['simulated_device']}): no bandwidth and no speed comparison; {check}"
    measured = [r for r in rows if r.get("ratio") is not None]
    if not measured:
        last = rows[-1]
        return f"verdict: {what}: {last['busbw']:.2f} GB/s busbw at {human(last['bytes'])}; {check}"
    sizes = (f"at {human(measured[0]['bytes'])}" if len(measured) == 1 else
             f"{len(measured)} sizes from {human(measured[0]['bytes'])} to {human(measured[-1]['bytes'])}")
    low = min(measured, key=lambda r: r["ratio"])
    high = max(measured, key=lambda r: r["ratio"])
    head = f"verdict: {what} vs {d['baseline']}, {sizes}:"
    if len(measured) == 1:
        return f"{head} {speed(low['ratio'])}; {check}"
    slower = [r for r in measured if r["ratio"] < 1]
    if not slower:
        where = "faster at every size"
    elif len(slower) == len(measured):
        where = "slower at every size"
    else:
        where = f"slower at {len(slower)} of {len(measured)} sizes ({spans(measured, lambda r: r['ratio'] < 1)})"
    return (f"{head} from {speed(low['ratio'])} (at {human(low['bytes'])}) to {speed(high['ratio'])} "
            f"(at {human(high['bytes'])}); {where}; {check}")


def main():
    for path in sys.argv[1:]:
        try:
            with open(path) as f:
                print(verdict(json.load(f)))
        except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
            print(f"bench_verdict: {path}: not a strata-bench result ({type(e).__name__}: {e})", file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()
