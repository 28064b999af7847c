#!/usr/bin/env python3
"""strata-flight on made-up flight records (no MPI): each case writes the
files a scenario would leave and checks what the tool says and its exit
status. The real files are checked by tests/mpi/test_flight.cpp.

    check_tool.py STRATA_FLIGHT
"""
import pathlib
import subprocess
import sys
import tempfile

TOOL = sys.argv[1]
failures = []


def record(rank, size, calls, reason="DeadlineExceeded", steady=10**12, realtime=2 * 10**18):
    """A file's text; calls: (seq, count, started_ns, ended_ns, state)."""
    lines = ["# strata flight record", f"process host=h pid={100 + rank} world_rank={rank} world_size={size} "
             f"records=256 calls={len(calls)} steady_ns={steady} realtime_ns={realtime} reason={reason}"]
    for seq, count, started, ended, state in calls:
        lines.append(f"call comm=1 rank={rank} size={size} seq={seq} collective=all_reduce count={count} dtype=f32 "
                     f"op=sum root=-1 form=blocking state={state} started_ns={started} "
                     f"ended_ns={ended} plan=pscpu")
    return "\n".join(lines) + "\n"


def run(files, expect_status, expect_lines):
    with tempfile.TemporaryDirectory() as folder:
        for name, text in files.items():
            (pathlib.Path(folder) / name).write_text(text)
        proc = subprocess.run([sys.executable, TOOL, folder], capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    ok = proc.returncode == expect_status and all(line in out for line in expect_lines)
    print(("ok  " if ok else "FAIL") + f" {expect_lines} (exit {proc.returncode})")
    if not ok:
        print(out)
        failures.append(expect_lines)


S = 10**9
done = (1, 1000, 1 * S, 1 * S + 1000, "completed")
# Rank 2 never made call #2.
run({f"flight-h-{r}-rank{r}.txt": record(r, 3, [done] + ([(2, 1000, 2 * S, 3 * S, "failed")] if r < 2 else []))
     for r in range(3)}, 0, ["behind: rank 2 never made call #2 (its last call is #1); ranks 0-1 made it"])
# Rank 1 started call #2 after rank 0 had given up on it.
run({"flight-h-0-rank0.txt": record(0, 2, [done, (2, 1000, 2 * S, 3 * S, "failed")]),
     "flight-h-1-rank1.txt": record(1, 2, [done, (2, 1000, 4 * S, 5 * S, "failed")])},
    0, ["behind: rank 1 was late to call #2: it started 1.000 s after rank 0 had ended it (failed)"])
# Rank 1 started call #2 half a second after rank 0, both still in it.
run({"flight-h-0-rank0.txt": record(0, 2, [done, (2, 1000, 2 * S, 0, "started")]),
     "flight-h-1-rank1.txt": record(1, 2, [done, (2, 1000, 2 * S + S // 2, 0, "started")])},
    0, ["behind: rank 1 started call #2 last, 0.500 s after rank 0"])
# Another host whose steady clock is elsewhere: its header's pair of readings lines it up.
run({"flight-h-0-rank0.txt": record(0, 2, [done, (2, 1000, 2 * S, 3 * S, "failed")]),
     "flight-h-1-rank1.txt": record(1, 2, [(1, 1000, 101 * S, 101 * S + 1000, "completed"),
                                           (2, 1000, 102 * S, 103 * S, "failed")], steady=10**12 + 100 * S)},
    0, ["in step"])
# Different counts under one number.
run({f"flight-h-{r}-rank{r}.txt": record(r, 3, [(1, 1000 + (r == 2), S, S + 10, "failed")], "Mismatch")
     for r in range(3)}, 0, ["disagree on call #1: count: 1000 on ranks 0-1, 1001 on rank 2",
                             "written on Mismatch by world ranks 0-2"])
# A rank's file missing.
run({"flight-h-0-rank0.txt": record(0, 2, [done])}, 0, ["behind: rank 1 has no call on this communicator"])
# Nothing to read, or not a flight record: exit 1.
run({}, 1, ["no flight-*.txt"])
run({"flight-h-0-rank0.txt": "hello\n"}, 1, ["cannot read"])

if failures:
    print(f"check_tool: {len(failures)} case(s) failed")
    sys.exit(1)
print("check_tool: OK")
