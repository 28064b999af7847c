#!/usr/bin/env python3
"""Runs strata-bench under mpirun and checks its exit status and JSON.

    check_bench.py MPIRUN NP BENCH EXPECT [bench args...]

EXPECT is `ok` (exit 0, every row checked, no wrong values), `wrong` (exit
non-zero, the JSON still written and reporting wrong values: used with the
test-only STRATA_BENCH_CORRUPT=1), `usage` (every rank exits 2, nothing
written, exactly one `strata-bench:` line: rank 0's), `write-error` (an
output that cannot be written, such as `--csv /dev/full`: every rank exits
3, and exactly one `strata-bench: cannot write` line per failed output, from
rank 0), or `ok-or-skip` / `wrong-or-skip` (for --memory cuda, so that one
test fits machines with and without a GPU: either every rank exits 77,
nothing is written and rank 0 printed exactly one line saying that no CUDA
device is usable, or that the bench was built without CUDA, or why its CUDA
module did not load, and this script exits 77 too (meson: SKIP); or every
rank exits 0 (1 for `wrong-or-skip`) and the JSON passes the `ok` (`wrong`)
checks with memory "cuda" and one device per rank). Each rank's own exit
status is read, not just mpirun's.

Every run that happened must say whether its device was simulated (JSON
`simulated`, the test double's devices are): a simulated run must claim no
bandwidth anywhere (null algbw, busbw, ratio, overhead and copy figures in
the JSON, '-' in the table, no "GB/s" figure on stdout, and the table's
"simulated device: no bandwidth" note); a real one must have the bandwidth
columns consistent with the times.

The JSON and the table must report `--form`, `--progress-thread` and
`--overlap` as given; with `--overlap` every row has finite t_pure_us,
t_compute_us and t_total_us and an overlap_pct within [0, 100] that equals
max(0, 100 x (1 - (total - compute) / pure)) clamped at 100 (null on a
simulated device).

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


def check_bandwidths(doc, row, factor):
    """A real device's row: algbw and busbw follow from the time."""
    if row["bytes"] and not math.isclose(row["algbw"], row["bytes"] / row["time_us"] / 1e3, rel_tol=1e-6):
        fail(f"row {row['bytes']}: algbw {row['algbw']} != bytes / time")
    if not math.isclose(row["busbw"], row["algbw"] * factor, rel_tol=1e-6, abs_tol=1e-12):
        fail(f"row {row['bytes']}: busbw {row['busbw']} != algbw x {doc['bus_factor']}")


def check_no_bandwidth(doc, table):
    """A simulated device: no figure that speaks of speed, in the JSON or the table."""
    if not doc.get("simulated_device") or "simulated" not in doc["simulated_device"]:
        fail(f"simulated, but the device is named {doc.get('simulated_device')!r}")
    claims = []
    for row in doc["rows"]:
        claims += [f"row {row['bytes']}: {k}" for k in ("algbw", "busbw", "ratio", "overhead_us")
                   if row.get(k) is not None]
        claims += [f"row {row['bytes']}: baseline {k}" for k in ("algbw", "busbw")
                   if row.get("baseline", {}).get(k) is not None]
    summary = doc["summary"]
    claims += [f"summary {k}" for k in ("avg_busbw", "avg_baseline_busbw") if summary.get(k) is not None]
    claims += [f"summary device_copy {k}" for k in ("d2h_gbps", "h2d_gbps", "largest_algbw_fraction")
               if summary.get("device_copy", {}).get(k) is not None]
    if "memcpy" in summary:
        claims.append("summary memcpy")
    if claims:
        fail(f"a simulated device, yet the JSON has bandwidth figures: {', '.join(claims)}")
    figures = re.findall(r"[0-9.]+\s*GB/s", table)
    if figures:
        fail(f"a simulated device, yet the table claims bandwidth: {figures[:3]}")
    if "simulated device: no bandwidth" not in table:
        fail("a simulated device, and the table does not say 'simulated device: no bandwidth'")


def flag_value(args, flag, default):
    """The last value of `flag` in strata-bench's arguments (the last one wins there too)."""
    value = default
    for i, a in enumerate(args[:-1]):
        if a == flag:
            value = args[i + 1]
    return value


def check_form(doc, args, env, table):
    """The form, progress thread and overlap flags are reported as given, in
    the JSON and the table's header; with --overlap every row has the four
    overlap columns, finite, and the overlap follows from the three times
    (clamped to [0, 100]). No timing is judged."""
    form = flag_value(args, "--form", "blocking")
    progress_thread = "--progress-thread" in args or env.get("STRATA_PROGRESS_THREAD") == "1"
    overlap = "--overlap" in args
    overlap_compute = flag_value(args, "--overlap-compute", "spin") if overlap else None
    for key, want in (("form", form), ("progress_thread", progress_thread), ("overlap", overlap),
                      ("overlap_compute", overlap_compute)):
        if doc.get(key) != want:
            fail(f"the JSON's {key!r} is {doc.get(key)!r}, the command line asked for {want!r}")
    header = f"# form {form}: "
    if not any(line.startswith(header) and line.endswith(f"progress thread {'on' if progress_thread else 'off'}")
               for line in table.splitlines()):
        fail(f"the table's header has no '{header}...; progress thread {'on' if progress_thread else 'off'}' line")
    keys = ("t_pure_us", "t_compute_us", "t_total_us", "overlap_pct")
    for row in doc["rows"]:
        present = [k for k in keys if k in row]
        if not overlap:
            if present:
                fail(f"row {row['bytes']}: {present} without --overlap")
            continue
        if len(present) != len(keys):
            fail(f"row {row['bytes']}: --overlap, but the row has only {present}")
        for k in keys[:3]:
            if not isinstance(row[k], (int, float)) or not math.isfinite(row[k]) or row[k] <= 0:
                fail(f"row {row['bytes']}: {k} = {row[k]!r}, not a finite positive time")
        if doc["simulated"]:
            if row["overlap_pct"] is not None:
                fail(f"row {row['bytes']}: a simulated device, yet overlap_pct = {row['overlap_pct']}")
            continue
        pct = row["overlap_pct"]
        if not isinstance(pct, (int, float)) or not math.isfinite(pct) or not 0 <= pct <= 100:
            fail(f"row {row['bytes']}: overlap_pct = {pct!r}, not within [0, 100]")
        want = min(100.0, max(0.0, 100 * (1 - (row["t_total_us"] - row["t_compute_us"]) / row["t_pure_us"])))
        if not math.isclose(pct, want, rel_tol=1e-9, abs_tol=1e-9):
            fail(f"row {row['bytes']}: overlap_pct {pct} != max(0, 100 x (1 - (total - compute) / pure)) = {want}")
    if overlap and not re.search(r"^#.*\bpure\s+compute\s+total\s+overlap\s*$", table, re.M):
        fail("--overlap, but the table has no 'pure compute total overlap' columns")


def check_rows(doc, expect_wrong):
    rows = doc["rows"]
    if not rows:
        fail("no rows in the JSON")
    if not isinstance(doc.get("simulated"), bool):
        fail(f"the JSON's 'simulated' is {doc.get('simulated')!r}, not true or false")
    n = doc["ranks"]
    factors = {"2(n-1)/n": 2 * (n - 1) / n if n > 1 else 1.0, "(n-1)/n": (n - 1) / n if n > 1 else 1.0, "1": 1.0}
    if doc["bus_factor"] not in factors:
        fail(f"unknown bus factor {doc['bus_factor']!r}")
    factor = factors[doc["bus_factor"]]
    previous = -1
    for row in rows:
        if row["bytes"] <= previous:
            fail(f"sizes are not increasing: {row['bytes']} after {previous}")
        previous = row["bytes"]
        if not row["algorithm"]:
            fail(f"row {row['bytes']}: empty algorithm")
        if row["time_us"] <= 0 or not math.isfinite(row["time_us"]):
            fail(f"row {row['bytes']}: time {row['time_us']}")
        if not doc["simulated"]:
            check_bandwidths(doc, row, factor)
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


def check_skip(output, np, json_path, ran_code):
    """True when every rank skipped as it should; False when every rank
    exited `ran_code` (the caller then checks the results); fails otherwise."""
    codes = rank_codes(output, np)
    if codes == {ran_code}:
        return False
    if codes != {77}:
        fail(f"ranks exited with {sorted(codes)}: expected all 77 (no CUDA device) or all {ran_code}")
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
        if expect in ("ok-or-skip", "wrong-or-skip", "usage", "write-error"):
            command = per_rank_status(command, bench)
        print("+", " ".join(command), flush=True)
        proc = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(proc.stdout)
        for text in messages:
            if text not in proc.stdout:
                fail(f"the output does not say '{text}'")
        if expect in ("ok-or-skip", "wrong-or-skip"):
            if check_skip(proc.stdout, int(np), out, 0 if expect == "ok-or-skip" else 1):
                sys.exit(77)  # meson's SKIP: nothing was measured here
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
        # wrong-or-skip: every rank's 1 was checked above (mpirun itself exits 0 under sh)
        if not os.path.exists(out):
            fail("no JSON written")
        with open(out) as f:
            doc = json.load(f)
        if doc["ranks"] != int(np):
            fail(f"JSON says {doc['ranks']} ranks, ran {np}")
        check_rows(doc, expect_wrong=expect in ("wrong", "wrong-or-skip"))
        check_form(doc, args, env, proc.stdout)
        if doc["simulated"]:
            check_no_bandwidth(doc, proc.stdout)
        elif "simulated device" in proc.stdout or doc.get("simulated_device") is not None:
            fail("not simulated, yet the output speaks of a simulated device")
        if expect.endswith("-or-skip") and (doc["memory"] != "cuda" or len(doc["devices"]) != int(np)):
            fail(f"a --memory cuda run reports memory {doc['memory']} and devices {doc['devices']}")
        if "model" in doc and doc["model"]["tensors"] != doc["rows"][0]["tensors"]:
            fail("batch row tensor count differs from the model's")
    print(f"check_bench: OK{' (on a simulated device: no bandwidth claimed)' if doc['simulated'] else ''}")


if __name__ == "__main__":
    main()
