#!/usr/bin/env python3
"""Runs strata-bench under mpirun and checks its exit status and JSON.

    check_bench.py MPIRUN NP BENCH EXPECT [bench args...]

EXPECT is `ok` (exit 0, every row checked, no wrong values), `wrong` (exit
non-zero, the JSON still written and reporting wrong values: used with the
test-only STRATA_BENCH_CORRUPT=1) or `usage` (exit 2, nothing written).
Prefix an argument with `env:` to set an environment variable instead
(`env:STRATA_BENCH_CORRUPT=1`). No timing is asserted: only structure,
arithmetic between columns and correctness.
"""
import json
import math
import os
import subprocess
import sys
import tempfile


def fail(message):
    print(f"check_bench: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def check_rows(doc, expect_wrong):
    rows = doc["rows"]
    if not rows:
        fail("no rows in the JSON")
    n = doc["ranks"]
    factor = 2 * (n - 1) / n if doc["bus_factor"] == "2(n-1)/n" and n > 1 else 1.0
    previous = -1
    for row in rows:
        if row["bytes"] <= previous:
            fail(f"sizes are not increasing: {row['bytes']} after {previous}")
        previous = row["bytes"]
        if not row["algorithm"]:
            fail(f"row {row['bytes']}: empty algorithm")
        if row["time_us"] <= 0 or not math.isfinite(row["time_us"]):
            fail(f"row {row['bytes']}: time {row['time_us']}")
        if row["bytes"] and not math.isclose(row["algbw"], row["bytes"] / row["time_us"] / 1e3, rel_tol=1e-6):
            fail(f"row {row['bytes']}: algbw {row['algbw']} != bytes / time")
        if not math.isclose(row["busbw"], row["algbw"] * factor, rel_tol=1e-6, abs_tol=1e-12):
            fail(f"row {row['bytes']}: busbw {row['busbw']} != algbw x {doc['bus_factor']}")
        if doc["check"] and row["wrong"] is None:
            fail(f"row {row['bytes']}: checking was on but #wrong is missing")
        if doc["baseline"] and ("baseline" not in row or row["baseline"]["time_us"] <= 0):
            fail(f"row {row['bytes']}: baseline requested but missing")
    total = sum(row["wrong"] or 0 for row in rows)
    if total != doc["summary"]["wrong_total"]:
        fail(f"summary wrong_total {doc['summary']['wrong_total']} != sum of rows {total}")
    if expect_wrong and total == 0:
        fail("a corrupted run reported no wrong values")
    if not expect_wrong and total != 0:
        fail(f"{total} wrong values")


def main():
    if len(sys.argv) < 5:
        fail(__doc__)
    mpirun, np, bench, expect = sys.argv[1:5]
    env = dict(os.environ)
    args = []
    for a in sys.argv[5:]:
        if a.startswith("env:"):
            key, _, value = a[4:].partition("=")
            env[key] = value
        else:
            args.append(a)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        command = [mpirun, "-np", np, "--oversubscribe", "--bind-to", "none", bench, "--no-progress", "-J", out, *args]
        print("+", " ".join(command), flush=True)
        proc = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(proc.stdout)
        if expect == "usage":
            if proc.returncode != 2:
                fail(f"expected exit 2 for a bad command line, got {proc.returncode}")
            if os.path.exists(out):
                fail("a refused command line still wrote JSON")
            if "strata-bench:" not in proc.stdout:
                fail("no one-line error message")
            return
        if expect == "ok" and proc.returncode != 0:
            fail(f"exit status {proc.returncode}, expected 0")
        if expect == "wrong" and proc.returncode == 0:
            fail("a corrupted run exited 0")
        if not os.path.exists(out):
            fail("no JSON written")
        with open(out) as f:
            doc = json.load(f)
        if doc["ranks"] != int(np):
            fail(f"JSON says {doc['ranks']} ranks, ran {np}")
        check_rows(doc, expect_wrong=(expect == "wrong"))
        if "model" in doc and doc["model"]["tensors"] != doc["rows"][0]["tensors"]:
            fail("batch row tensor count differs from the model's")
    print("check_bench: OK")


if __name__ == "__main__":
    main()
