#!/usr/bin/env python3
"""Runs strata-bench under mpirun and checks its exit status and JSON.

    check_bench.py LAUNCH NP BENCH EXPECT [bench args...]

LAUNCH is the build's strata-launch (scripts/launch.py: `-n NP PROGRAM`).

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

The JSON and the table must report `--form`, `--progress-thread`,
`--stream-ordered` and `--overlap` as given; with `--overlap` every row has
finite t_pure_us, t_compute_us and t_total_us and an overlap_pct within
[0, 100] that equals max(0, 100 x (1 - (total - compute) / pure)) clamped
at 100, or with `--stream-ordered` t_comm_us, t_compute_us and t_both_us and
an overlap_pct equal to 100 x (comm + compute - both) / min(comm, compute)
clamped to [0, 100] (null on a simulated device). With `--stream-ordered`
every row has host and device times (finite; the host time, the call until
it returns, never above the row's time, which includes it), and so has a
`--baseline nccl`'s, with host_overhead_us and device_overhead_us the
differences (null on a simulated device); without it no row has them.

Prefix an argument with `env:` to set an environment variable instead
(`env:STRATA_BENCH_CORRUPT=1`), or with `msg:` to require that text in the
output (`msg:not CUDA-aware`). `--each-rank-through PROGRAM` (two
arguments) starts every rank through PROGRAM, placed between mpirun and
strata-bench: scripts/gpu/per_rank_host.sh gives each rank an NCCL_HOSTID
of its own, so that NCCL runs with the ranks sharing a machine's one GPU
(the GPU bundle carries the script, and gpu-check runs these tests so). No timing is asserted: only structure,
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
        claims += [f"row {row['bytes']}: {k}"
                   for k in ("algbw", "busbw", "ratio", "overhead_us", "host_overhead_us", "device_overhead_us")
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


def finite(value, positive=True):
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and (value > 0 if positive else value >= 0))


def check_timing(where, timing, positive=True):
    """A {median_us, min_us, max_us} object: finite, min <= median <= max."""
    if not isinstance(timing, dict) or not all(finite(timing.get(k), positive) for k in ("median_us", "min_us", "max_us")):
        fail(f"{where}: {timing!r} is not a finite timing")
    if not timing["min_us"] <= timing["median_us"] <= timing["max_us"]:
        fail(f"{where}: min {timing['min_us']}, median {timing['median_us']}, max {timing['max_us']} out of order")


def check_stream_ordered(doc, args, table):
    """--stream-ordered: host and device times on every row (and on an NCCL
    baseline's), the host time within the row's time; none without it."""
    stream_ordered = "--stream-ordered" in args
    keys = ("host_time", "host_us", "device_time", "device_us")
    nccl = doc["baseline"] is not None and flag_value(args, "--baseline", "") == "nccl"
    for row in doc["rows"]:
        where = f"row {row['bytes']}"
        present = [k for k in keys + ("host_overhead_us", "device_overhead_us") if k in row]
        present += [f"baseline {k}" for k in keys if k in row.get("baseline", {})]
        if not stream_ordered:
            if present:
                fail(f"{where}: {present} without --stream-ordered")
            continue
        check_timing(f"{where} host_time", row.get("host_time"))
        # The device's events may be closer together than their resolution.
        check_timing(f"{where} device_time", row.get("device_time"), positive=False)
        if row["host_us"] != row["host_time"]["median_us"] or row["device_us"] != row["device_time"]["median_us"]:
            fail(f"{where}: host_us / device_us are not their timings' medians")
        # Each iteration's time runs from before the call to after the
        # stream drained, so it holds the call's host time: per rank, then
        # per iteration's slowest rank, then in the median.
        if row["host_us"] > row["time_us"] * (1 + 1e-9):
            fail(f"{where}: host time {row['host_us']} us above the call's whole time {row['time_us']} us")
        if nccl:
            base = row["baseline"]
            check_timing(f"{where} baseline host_time", base.get("host_time"))
            check_timing(f"{where} baseline device_time", base.get("device_time"), positive=False)
            if base["host_us"] > base["time_us"] * (1 + 1e-9):
                fail(f"{where}: the baseline's host time {base['host_us']} us above its whole time {base['time_us']} us")
            for key, mine, theirs in (("host_overhead_us", "host_us", "host_us"),
                                      ("device_overhead_us", "device_us", "device_us")):
                if key not in row:
                    fail(f"{where}: --stream-ordered --baseline nccl, but no {key}")
                if doc["simulated"]:
                    continue  # check_no_bandwidth wants it null
                if not math.isclose(row[key], row[mine] - base[theirs], rel_tol=1e-9, abs_tol=1e-9):
                    fail(f"{where}: {key} {row[key]} != {row[mine]} - {base[theirs]}")
    if stream_ordered:
        if not re.search(r"^#.*\btime\s+algbw\s+busbw\s+#wrong\s+host\s+device\b", table, re.M):
            fail("--stream-ordered, but the table has no 'host device' columns after #wrong")
        if not re.search(r"^# stream-ordered: time = ", table, re.M):
            fail("--stream-ordered, but the table's header does not say how the calls are timed")
        if nccl and not re.search(r"\bnccl host\s+nccl dev\b", table):
            fail("--stream-ordered --baseline nccl, but the table has no 'nccl host nccl dev' columns")
        smallest = doc["rows"][0]
        said = "# host cost per call  :" in table
        if said == doc["simulated"]:
            fail(f"the table {'claims' if said else 'lacks'} a host cost per call on a "
                 f"{'simulated' if doc['simulated'] else 'real'} device")
        if said and f"at {smallest['bytes']} B" not in table:
            fail("the host cost line does not name the smallest size")


def check_form(doc, args, env, table):
    """The form, progress thread, stream-ordered and overlap flags are
    reported as given, in the JSON and the table's header; with --overlap
    every row has the four overlap columns, finite, and the overlap follows
    from the three times by the method's formula (clamped to [0, 100]). No
    timing is judged."""
    form = flag_value(args, "--form", "blocking")
    progress_thread = "--progress-thread" in args or env.get("STRATA_PROGRESS_THREAD") == "1"
    stream_ordered = "--stream-ordered" in args
    overlap = "--overlap" in args
    overlap_compute = (("busy_kernel" if stream_ordered else flag_value(args, "--overlap-compute", "spin"))
                       if overlap else None)
    for key, want in (("form", form), ("progress_thread", progress_thread), ("stream_ordered", stream_ordered),
                      ("overlap", overlap), ("overlap_compute", overlap_compute)):
        if doc.get(key) != want:
            fail(f"the JSON's {key!r} is {doc.get(key)!r}, the command line asked for {want!r}")
    header = f"# form {form}: "
    if not any(line.startswith(header) and line.endswith(f"progress thread {'on' if progress_thread else 'off'}")
               for line in table.splitlines()):
        fail(f"the table's header has no '{header}...; progress thread {'on' if progress_thread else 'off'}' line")
    check_stream_ordered(doc, args, table)
    host_keys = ("t_pure_us", "t_compute_us", "t_total_us", "overlap_pct")
    stream_keys = ("t_comm_us", "t_compute_us", "t_both_us", "overlap_pct")
    keys = stream_keys if stream_ordered else host_keys
    for row in doc["rows"]:
        present = [k for k in set(host_keys + stream_keys) if k in row]
        if not overlap:
            if present:
                fail(f"row {row['bytes']}: {present} without --overlap")
            continue
        if sorted(present) != sorted(keys):
            fail(f"row {row['bytes']}: --overlap{' --stream-ordered' if stream_ordered else ''} wants {keys}, "
                 f"the row has {present}")
        for k in keys[:3]:
            if not finite(row[k]):
                fail(f"row {row['bytes']}: {k} = {row[k]!r}, not a finite positive time")
        if doc["simulated"]:
            if row["overlap_pct"] is not None:
                fail(f"row {row['bytes']}: a simulated device, yet overlap_pct = {row['overlap_pct']}")
            continue
        pct = row["overlap_pct"]
        if not finite(pct, positive=False) or not 0 <= pct <= 100:
            fail(f"row {row['bytes']}: overlap_pct = {pct!r}, not within [0, 100]")
        if stream_ordered:
            comm, compute, both = row["t_comm_us"], row["t_compute_us"], row["t_both_us"]
            want = min(100.0, max(0.0, 100 * (comm + compute - both) / min(comm, compute)))
            formula = "100 x (comm + compute - both) / min(comm, compute)"
        else:
            want = min(100.0, max(0.0, 100 * (1 - (row["t_total_us"] - row["t_compute_us"]) / row["t_pure_us"])))
            formula = "max(0, 100 x (1 - (total - compute) / pure))"
        if not math.isclose(pct, want, rel_tol=1e-9, abs_tol=1e-9):
            fail(f"row {row['bytes']}: overlap_pct {pct} != {formula} = {want}")
    columns = r"\bcomm\s+compute\s+both\s+overlap\s*$" if stream_ordered else r"\bpure\s+compute\s+total\s+overlap\s*$"
    if overlap and not re.search(r"^#.*" + columns, table, re.M):
        fail(f"--overlap, but the table has no '{' '.join(keys[:3])} overlap' columns")


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
    script = '"$@"; echo "check_bench: rank ${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-?}}}} exit $?"'
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
    launch, np, bench, expect = sys.argv[1:5]
    env = dict(os.environ)
    args = []
    messages = []
    wrapper = []
    rest = iter(sys.argv[5:])
    for a in rest:
        if a == "--each-rank-through":
            wrapper = [next(rest, None) or fail("--each-rank-through needs a program")]
        elif a.startswith("env:"):
            key, _, value = a[4:].partition("=")
            env[key] = value
        elif a.startswith("msg:"):
            messages.append(a[4:])
        else:
            args.append(a)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        command = [launch, "-n", np, *wrapper, bench, "--no-progress", "-J", out,
                   *args]
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
