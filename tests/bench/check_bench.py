#!/usr/bin/env python3
"""Runs strata-bench under mpirun and checks its exit status and JSON.

    check_bench.py MPIRUN NP BENCH EXPECT [bench args...]

EXPECT is `ok` (exit 0, every row checked, no wrong values), `wrong` (exit
non-zero, the JSON still written and reporting wrong values: used with the
test-only STRATA_BENCH_CORRUPT=1), `usage` (every rank exits 2, nothing
written, exactly one `strata-bench:` line: rank 0's), `write-error` (an
output that cannot be written, such as `--csv /dev/full`: every rank exits
3, and exactly one `strata-bench: cannot write` line per failed output, from
rank 0) or `ok-or-skip` (for --memory cuda, so that one test fits machines
with and without a GPU: either every rank exits 77, nothing is written and
rank 0 printed exactly one line saying that no CUDA device is usable or that
the bench was built without CUDA; or every rank exits 0 and the JSON passes
the `ok` checks with memory "cuda" and one device per rank). Each rank's own
exit status is read, not just mpirun's.

Prefix an argument with `env:` to set an environment variable instead
(`env:STRATA_BENCH_CORRUPT=1`), or with `msg:` to require that text in the
output (`msg:not CUDA-aware`). No timing is asserted: only structure,
arithmetic between columns and correctness.
"""
import re
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


# Each rank runs under `sh`, which reports the rank's exit status and then
# exits 0: mpirun would otherwise end the job when the first rank exits
# non-zero, before the others could show theirs.
RANK_STATUS = re.compile(r"^check_bench: rank (\S+) exit (\d+)$", re.M)


def per_rank_status(command, bench):
    i = command.index(bench)
    script = '"$@"; echo "check_bench: rank ${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-?}} exit $?"'
    return command[:i] + ["sh", "-c", script, "sh"] + command[i:]


def rank_codes(output, np):
    statuses = RANK_STATUS.findall(output)
    if len(statuses) != np:
        fail(f"{len(statuses)} of {np} ranks reported an exit status")
    return {int(code) for _, code in statuses}


def check_refused(output, np, code, prefix):
    """Every rank exited `code`; rank 0 alone printed lines starting with
    `prefix` (one per failed output for write errors, one for usage)."""
    codes = rank_codes(output, np)
    if codes != {code}:
        fail(f"ranks exited with {sorted(codes)}: expected every rank to exit {code}")
    lines = [line for line in output.splitlines() if line.startswith("strata-bench:")]
    if not lines or any(not line.startswith(prefix) for line in lines):
        fail(f"expected only '{prefix}...' lines from strata-bench, got {lines}")
    return lines


def check_skip(output, np, json_path):
    """True when every rank skipped as it should; False when every rank
    exited 0 (the caller then checks the results); fails otherwise."""
    codes = rank_codes(output, np)
    if codes == {0}:
        return False
    if codes != {77}:
        fail(f"ranks exited with {sorted(codes)}: expected all 77 (no CUDA device) or all 0")
    lines = [line for line in output.splitlines() if line.startswith("strata-bench: --memory cuda: skipped (exit 77): ")]
    if len(lines) != 1:
        fail(f"expected exactly one skip line from rank 0, found {len(lines)}")
    if not re.search(r"has a usable CUDA device|have no usable CUDA device|built without CUDA", lines[0]):
        fail(f"the skip line does not say that no CUDA device is usable: {lines[0]}")
    if os.path.exists(json_path):
        fail("a skipped run still wrote JSON")
    print("check_bench: OK (skipped as expected on this machine: every rank exited 77)")
    return True


def main():
    if len(sys.argv) < 5:
        fail(__doc__)
    mpirun, np, bench, expect = sys.argv[1:5]
    env = dict(os.environ)
    args = []
    messages = []
    for a in sys.argv[5:]:
        if a.startswith("env:"):
            key, _, value = a[4:].partition("=")
            env[key] = value
        elif a.startswith("msg:"):
            messages.append(a[4:])
        else:
            args.append(a)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        command = [mpirun, "-np", np, "--oversubscribe", "--bind-to", "none", bench, "--no-progress", "-J", out, *args]
        if expect in ("ok-or-skip", "usage", "write-error"):
            command = per_rank_status(command, bench)
        print("+", " ".join(command), flush=True)
        proc = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(proc.stdout)
        for text in messages:
            if text not in proc.stdout:
                fail(f"the output does not say '{text}'")
        if expect == "ok-or-skip":
            if check_skip(proc.stdout, int(np), out):
                return
        elif expect == "usage":
            lines = check_refused(proc.stdout, int(np), 2, "strata-bench: ")
            if len(lines) != 1:
                fail(f"expected one line from rank 0, got {len(lines)}")
            if os.path.exists(out):
                fail("a refused command line still wrote JSON")
            print("check_bench: OK (every rank exited 2; one line)")
            return
        elif expect == "write-error":
            check_refused(proc.stdout, int(np), 3, "strata-bench: cannot write ")
            print("check_bench: OK (every rank exited 3; rank 0 named the output)")
            return
        if expect in ("ok", "ok-or-skip") and proc.returncode != 0:
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
        if expect == "ok-or-skip" and (doc["memory"] != "cuda" or len(doc["devices"]) != int(np)):
            fail(f"a --memory cuda run reports memory {doc['memory']} and devices {doc['devices']}")
        if "model" in doc and doc["model"]["tensors"] != doc["rows"][0]["tensors"]:
            fail("batch row tensor count differs from the model's")
    print("check_bench: OK")


if __name__ == "__main__":
    main()
