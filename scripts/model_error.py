#!/usr/bin/env python3
"""The cost model's error over one or more strata-tune sweeps, and the
machine's own spread between them (docs/SCALING.md, "Measured error").

  model_error.py SWEEP.csv [SWEEP.csv ...] [--from BYTES] [--within FRACTION] [--markdown]

Each SWEEP.csv is what `strata-tune --model FILE --csv SWEEP.csv` writes
(bytes,plan,iters,time_us,model_us). For (plan, size) pairs from --from
bytes up (default 64K), the error is predicted / measured - 1, and a pair
is "within" when |error| <= --within (default 0.25). Prints:

  - each sweep: its pairs within, of those it has a prediction for;
  - with several sweeps, the median error of each pair over the sweeps (a
    table: plan by size) and how many of those medians are within;
  - with several sweeps, the machine against itself: for each two sweeps,
    how many pairs' measured times are within --within of each other. A
    model that is calibrated in one moment and compared in another cannot
    be expected to do better than that.

Pairs missing from some sweep, or without a prediction (a plan the model
has no formula for), are left out of the comparisons that need them.
Exit status 2, with one line, for a file that is not such a sweep.
"""
import argparse
import csv
import itertools
import signal
import statistics
import sys

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size_arg(text):
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = text[-1:] if text[-1:] in UNITS else ""
    try:
        value = int(text[: len(text) - len(unit)]) * UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 65536, 64K, 1M)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"a size cannot be negative: {text!r}")
    return value


def human(nbytes):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def fail(message):
    print(f"model_error.py: {message}", file=sys.stderr)
    sys.exit(2)


def read_sweep(path):
    """{(plan, bytes): (time_us, model_us or None)} and the plans in file order."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    needed = {"bytes", "plan", "time_us", "model_us"}
    if not rows or not needed <= set(rows[0]):
        fail(f"{path} is not a strata-tune sweep CSV "
             f"(needs the columns {','.join(sorted(needed))} and at least one row)")
    pairs, plans = {}, []
    for line, row in enumerate(rows, start=2):
        try:
            key = (row["plan"], int(row["bytes"]))
            model = float(row["model_us"]) if row["model_us"] else None
            pairs[key] = (float(row["time_us"]), model)
        except (TypeError, ValueError):
            fail(f"{path}:{line}: not a number where one belongs")
        if row["plan"] not in plans:
            plans.append(row["plan"])
    return pairs, plans


def error(time_us, model_us):
    return model_us / time_us - 1 if model_us is not None and time_us > 0 else None


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweeps", nargs="+", metavar="SWEEP.csv")
    parser.add_argument("--from", dest="smallest", type=size_arg, default=64 << 10,
                        help="smallest message size compared (default 64K)")
    parser.add_argument("--within", type=float, default=0.25, help="the target, as a fraction (default 0.25)")
    parser.add_argument("--markdown", action="store_true", help="the median table in Markdown")
    args = parser.parse_args()
    if not 0 < args.within < 10:
        parser.error("--within must be a fraction above 0, such as 0.25")

    sweeps = [(path, *read_sweep(path)) for path in args.sweeps]
    pct = f"{args.within:.0%}"
    print(f"# pairs (plan, size) from {human(args.smallest)} whose prediction is within {pct} of the measurement")
    for path, pairs, _ in sweeps:
        errors = [e for (plan, b), (t, m) in pairs.items() if b >= args.smallest and (e := error(t, m)) is not None]
        print(f"{path}: {sum(abs(e) <= args.within for e in errors)} of {len(errors)}")
    if len(sweeps) < 2:
        return

    medians = {}
    for key in sweeps[0][1]:
        if key[1] < args.smallest or not all(key in s[1] for s in sweeps):
            continue
        errors = [error(*s[1][key]) for s in sweeps]
        if all(e is not None for e in errors):
            medians[key] = statistics.median(errors)
    plans = [p for p in sweeps[0][2] if any(k[0] == p for k in medians)]
    sizes = sorted({b for (_, b) in medians})
    inside = sum(abs(e) <= args.within for e in medians.values())
    print(f"\n# the median error over {len(sweeps)} sweeps: {inside} of {len(medians)} pairs within {pct}")
    if args.markdown:
        print("| plan | " + " | ".join(human(b) for b in sizes) + f" | within {pct} |")
        print("|---|" + "---|" * (len(sizes) + 1))
    else:
        print(f"{'plan':16}" + "".join(f"{human(b):>9}" for b in sizes) + "   within")
    for plan in plans:
        cells = [medians.get((plan, b)) for b in sizes]
        shown = ["" if e is None else f"{e:+.0%}" for e in cells]
        count = f"{sum(e is not None and abs(e) <= args.within for e in cells)} of {sum(e is not None for e in cells)}"
        if args.markdown:
            print(f"| `{plan}` | " + " | ".join(shown) + f" | {count} |")
        else:
            print(f"{plan:16}" + "".join(f"{s:>9}" for s in shown) + f"   {count}")

    print(f"\n# the machine against itself: pairs whose measured times in two sweeps are within {pct} of each other")
    for (path_a, a, _), (path_b, b, _) in itertools.combinations(sweeps, 2):
        keys = [k for k in a if k[1] >= args.smallest and k in b and a[k][0] > 0 and b[k][0] > 0]
        agree = sum(abs(a[k][0] / b[k][0] - 1) <= args.within for k in keys)
        print(f"{path_a} / {path_b}: {agree} of {len(keys)}")


if __name__ == "__main__":
    sys.exit(main())
