#!/usr/bin/env python3
"""Run a program under mpirun with STRATA_TRACE on, then check its traces.

  run_trace.py [--merged] LAUNCH NP PROGRAM [ARGS...] [-- CHECK_TRACE_OPTIONS...]

LAUNCH is the build's strata-launch (scripts/launch.py).

STRATA_TRACE points into a fresh temporary folder as trace.%r.json (one file
per rank); every trace file (and the .after-failure snapshots trace_calls
leaves) goes to check_trace.py with --ranks NP and the options after `--`.
With --merged it is trace.json (no %r): the job must leave that one merged
file and no per-rank trace.json.<rank>. The environment passes through
(STRATA_RANKS_PER_NODE and the like).
"""
import glob
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent


def main():
    args = sys.argv[1:]
    check_options = []
    if "--" in args:
        at = args.index("--")
        args, check_options = args[:at], args[at + 1:]
    merged = args[:1] == ["--merged"]
    if merged:
        args = args[1:]
    launch, np, program = args[0], args[1], args[2:]
    with tempfile.TemporaryDirectory(prefix="strata-trace-") as folder:
        name = "trace.json" if merged else "trace.%r.json"
        env = dict(os.environ, STRATA_TRACE=os.path.join(folder, name))
        run = subprocess.run([launch, "-n", np, "--env", "STRATA_TRACE"]
                             + program, env=env, timeout=120)
        if run.returncode != 0:
            print(f"run_trace: the program exited {run.returncode}")
            return 1
        if merged:
            per_rank = glob.glob(os.path.join(folder, "trace.json.*"))
            if per_rank or not os.path.exists(os.path.join(folder, "trace.json")):
                print(f"run_trace: expected one merged trace.json, found {sorted(os.listdir(folder))}")
                return 1
            files = [os.path.join(folder, "trace.json")]
        else:
            files = sorted(glob.glob(os.path.join(folder, "trace.*.json")))
            files += sorted(glob.glob(os.path.join(folder, "trace.*.json.after-failure")))
        leftovers = glob.glob(os.path.join(folder, "*.tmp"))
        if leftovers:
            print(f"run_trace: temporary files left behind: {leftovers}")
            return 1
        check = subprocess.run([sys.executable, str(HERE / "check_trace.py"), "--ranks", np] + check_options + files)
        return check.returncode


if __name__ == "__main__":
    sys.exit(main())
