#!/usr/bin/env python3
"""The peer yardstick's tables (scripts/peers/report.py) on canned rows.

  check_peers_report.py SOURCE_ROOT

No MPI and no wheels: report.py is run on a CSV written here, as
scripts/peers.sh writes it, whose medians, best peers and ratios are known;
its exact tables and last line are checked, then a CSV with another header
(one line, exit 1).
"""
import pathlib
import subprocess
import sys
import tempfile

REPORT = pathlib.Path(sys.argv[1]) / "scripts" / "peers" / "report.py"
HEADER = "round,config,collective,size,median_us,placement_before_ns,placement_after_ns,placement"
failures = []


def report(text, *args):
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write(text)
    done = subprocess.run([sys.executable, str(REPORT), f.name, *args], capture_output=True, text=True)
    pathlib.Path(f.name).unlink()
    return done


def rows(round_, config, collective, times, before, after):
    """One run's rows: times is {size: µs}; its placement from the probes, as peers.sh decides."""
    where = "near" if before < 250 and after < 250 else "far" if before >= 250 and after >= 250 else "mixed"
    return [f"{round_},{config},{collective},{size},{us},{before},{after},{where}" for size, us in times.items()]


def expect(name, done, status, lines):
    got = done.stdout.splitlines() if status == 0 else (done.stdout + done.stderr).splitlines()
    if done.returncode != status or got != lines:
        print(f"FAIL {name}: exit {done.returncode} (want {status}); got:\n  " + "\n  ".join(got)
              + "\nwanted:\n  " + "\n  ".join(lines))
        failures.append(name)
    else:
        print(f"ok   {name}")


csv = [HEADER]
# Near, allreduce, three rounds. strata's medians: 8 B 1.0, 64 KiB 10.0.
for r, (s8, s64k) in enumerate([(1.0, 10.0), (0.8, 12.0), (1.4, 9.0)], 1):
    csv += rows(r, "strata", "allreduce", {8: s8, 65536: s64k}, 110, 120)
    # Open MPI 4.1: medians 2.0 and 20.0.
    csv += rows(r, "ompi41", "allreduce", {8: 2.0 + (r - 2) * 0.5, 65536: 20.0}, 105, 130)
    # Open MPI 5: default best at 8 B (0.5), han best at 64 KiB (8.0).
    csv += rows(r, "ompi5", "allreduce", {8: 0.5, 65536: 16.0}, 100, 100)
    csv += rows(r, "ompi5-sm", "allreduce", {8: 0.6, 65536: 11.0}, 100, 100)
    csv += rows(r, "ompi5-han", "allreduce", {8: 0.7, 65536: 8.0}, 100, 100)
    # MPICH 5, two near runs only: the third is mixed and left out.
    # With it, its 8 B median would be 0.3, not 0.4.
    csv += rows(r, "mpich5", "allreduce", {8: [0.3, 0.5, 0.01][r - 1], 65536: 50.0}, 100, 400 if r == 3 else 100)
# Far, bcast, one round, strata and MPICH 5 only (Open MPI 4.1 and 5 have
# columns, from their near runs, but no times here).
csv += rows(1, "strata", "bcast", {8: 3.0}, 460, 440)
csv += rows(1, "mpich5", "bcast", {8: 2.0}, 450, 450)
# Mixed the other way: near before, far after; left out.
csv += rows(2, "strata", "bcast", {8: 99.0}, 200, 500)
text = "\n".join(csv) + "\n"

intro = ["Median µs over runs (runs); strata / best below 1: strata is faster.", ""]
expect("tables", report(text, "--skipped", "Intel MPI: pip install impi-rt failed: no network",
                        "--failed", "round 3 ompi41 bcast: timed out after 120 s"), 0, [
    "", "### near: MPI_Allreduce (f32 sum, out of place)", "", *intro,
    "| size | strata | Open MPI 4.1 | Open MPI 5 | MPICH 5 | best peer | strata / best |",
    "|---|---|---|---|---|---|---|",
    "| 8 B | 1.00 (3) | 2.00 (3) | 0.50 (default, 3) | 0.40 (2) | MPICH 5 | 2.50 |",
    "| 64 KiB | 10.00 (3) | 20.00 (3) | 8.00 (han, 3) | 50.00 (2) | Open MPI 5 (han) | 1.25 |",
    "", "### far: MPI_Bcast (root 0)", "", *intro,
    "| size | strata | Open MPI 4.1 | Open MPI 5 | MPICH 5 | best peer | strata / best |",
    "|---|---|---|---|---|---|---|",
    "| 8 B | 3.00 (1) | – | – | 2.00 (1) | MPICH 5 | 1.50 |",
    "",
    "21 runs: 17 near, 2 far, 2 mixed (left out); 1 failed: round 3 ompi41 bcast: timed out after 120 s; "
    "skipped: Intel MPI: pip install impi-rt failed: no network.",
])

bad = report("round,config\n1,strata\n")
lines = (bad.stdout + bad.stderr).splitlines()
if bad.returncode != 1 or len(lines) != 1 or not lines[0].startswith("report.py: ") \
        or "header ['round', 'config'], expected ['round'," not in lines[0]:
    print(f"FAIL bad header: exit {bad.returncode} (want 1), output {lines}")
    failures.append("bad header")
else:
    print(f"ok   bad header: {lines[0]}")

sys.exit(1 if failures else 0)
