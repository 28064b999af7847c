#!/usr/bin/env python3
"""The lent-GPU session: the measurements of stream-ordered calls, overlap
and node sizes that a lent GPU machine is for, in priority order, each step
bounded and the whole within a budget. Called by session.sh (which sources env.sh first); this file is the
bundle's scripts/session.py. It runs its commands as gpu-check does
(check.py beside it: process groups, timeouts, NCCL_HOSTID per rank);
session_report.py beside it reads the figures and holds them against the
targets.

    session.py [--out DIR] [--budget S] [--only REGEX] [--skip REGEX] [--quick] [--assume-gpu] [--list]

Steps (names start with their part's letter; --only/--skip match names):
  a  2 ranks on virtual nodes of one (NCCL_HOSTID per rank), 8 B - 64 KiB,
     -a nccl --baseline nccl: stream-ordered (a-stream-*) and blocking
     (a-blocking-*) strata calls against ncclAllReduce on the baseline's
     NCCL communicator, call check on and off (STRATA_CHECK=off), with
     NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET (the transport is taken
     from its lines)
  b  1 rank, 64 KiB - 1 GiB against NCCL, blocking (what completion polling
     costs) and stream-ordered
  c  tests/test_gpu_async --stop-rank 1 --timeout 5 at 2 ranks: one rank
     SIGSTOPped mid-run, DeadlineExceeded naming it within 20 s (the
     program prints the "ABORT:" line and exits 0 on that outcome); skipped
     when the bundle lacks it
  d  --stream-ordered --overlap (strata::bench::busy_kernel on another
     stream), 1 MiB - 64 MiB, at 2 ranks then 1
  e  host memory at 2, 4, 8 and 16 ranks (one core each; rank counts above
     the cores this process may use are skipped), 8 B - 64 MiB, against
     MPI_Allreduce (--baseline mpi; Open MPI from the bundle)
  f  gpu-check (check.py, what gpu-check.sh runs) --skip '^figure-' --budget
     <what is left> --out DIR/gpu-check: its regression tests with the time
     left. Its figures (docs/PERFORMANCE.md's, measured before) are left
     out, and so is the 150 s of its budget it keeps for them
     (check.FIGURE_RESERVE_S set to 0), which would leave its tests no time
Without a GPU (nvidia-smi lists none) the GPU steps a-d are skipped with
that reason, (e) runs at 8 B - 64 KiB and (f) runs only gpu-check's
nvidia-smi, libraries and host-topo steps. --quick shrinks every sweep to a
few small sizes (a test of the commands, not a measurement); --assume-gpu
runs the GPU steps without asking nvidia-smi (for the test double, whose
devices then say they are simulated and give no figure).

A step's status: pass (exit 0; test_gpu_async also its ABORT: line), skip
(exit 77, or not run: the reason says why, "out of time" when the budget
left under 10 s), fail (anything else; a timeout is exit 124). The budget
(default 360 s) bounds every step's timeout. Writes, under DIR (--out, else
$OUT, else ./gpu-session-out): session.log (every command and its whole
output), session.json (rewritten after every step), session.txt (the
summary table, also printed) and bench/<step>.json (strata-bench's JSON).
Exit status: 0 when no step failed, 1 otherwise, 2 bad arguments.
"""
import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import check as gpu_check  # noqa: E402  (scripts/gpu/check.py, the bundle's scripts/check.py)
import session_report as report  # noqa: E402  (the figures, the targets and the summary)

BUNDLE = gpu_check.BUNDLE
DEFAULT_BUDGET_S = 360
MIN_STEP_S = 10
NCCL_DEBUG = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}
HOST_RANKS = (2, 4, 8, 16)

# Sweeps: -b -e -f -n -w. "quick": a few small sizes, for a run that tests
# the commands (--quick), and part e's on a machine without a GPU.
SWEEPS = {
    "full": {"a": ("8", "64K", "2", "1000", "100"), "b": ("64K", "1G", "2", "50", "5"),
             "d": ("1M", "64M", "4", "20", "3"), "e": ("8", "64M", "2", "50", "5")},
    "quick": {"a": ("8", "64K", "8", "3", "1"), "b": ("64K", "1M", "4", "2", "1"),
              "d": ("1M", "4M", "4", "2", "1"), "e": ("8", "64K", "8", "3", "1")},
}


class Task(gpu_check.Step):
    """One bounded command of the session."""

    def __init__(self, name, part, title, cmd, timeout, env=None, device=True, kind="bench", skip=None):
        super().__init__(name, part, cmd, timeout, env=env, device=device)
        self.part, self.title, self.kind = part, title, kind
        self.skip_reason = skip  # set: not run, with this reason


def sweep_args(sweep):
    b, e, f, n, w = sweep
    return ["-b", b, "-e", e, "-f", f, "-n", n, "-w", w]


def usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def gpu_present(assume):
    """(present, why): nvidia-smi -L lists a GPU, or --assume-gpu."""
    if assume:
        return True, "assumed (--assume-gpu)"
    if not shutil.which("nvidia-smi"):
        return False, "no GPU: nvidia-smi not found"
    try:
        out = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=30).stdout
    except subprocess.TimeoutExpired:
        return False, "no GPU: nvidia-smi -L did not answer within 30 s"
    gpus = [line for line in out.splitlines() if line.startswith("GPU ")]
    return (True, "; ".join(gpus)) if gpus else (False, f"no GPU: nvidia-smi -L lists none ({out.strip()[:200]})")


def async_program(manifest):
    """The bundle's test_gpu_async and the environment its registered tests
    run with (STRATA_* settings the build gave it), or (None, {})."""
    path = os.path.join(BUNDLE, "tests", "test_gpu_async")
    if not os.access(path, os.X_OK):
        return None, {}
    env = {}
    for test in manifest.get("tests", []):
        if any(os.path.basename(c) == "test_gpu_async" for c in test["cmd"]):
            env = {k: v for k, v in test.get("env", {}).items() if k.startswith("STRATA_")}
            break
    return path, env


def build_tasks(args, gpu, gpu_why, manifest, out_dir):
    B = BUNDLE
    bench = f"{B}/bin/strata-bench"
    launch = [f"{B}/bin/strata-launch"]  # the launcher layer over the bundle's Open MPI, unbound
    sweeps = SWEEPS["quick" if args.quick else "full"]
    no_gpu = None if gpu else gpu_why
    tasks = []

    # (a) the small calls at 2 ranks: the host cost and the overhead over NCCL.
    for form, check in (("stream", "on"), ("blocking", "on"), ("stream", "off"), ("blocking", "off")):
        env = dict(NCCL_DEBUG, STRATA_RANKS_PER_NODE="1")
        if check == "off":
            env["STRATA_CHECK"] = "off"
        cmd = launch + ["-n", "2", bench, "-m", "cuda", "-a", "nccl", "--baseline", "nccl"]
        cmd += (["--stream-ordered"] if form == "stream" else []) + sweep_args(sweeps["a"]) + ["--no-progress"]
        title = (f"2 ranks, {'stream-ordered' if form == 'stream' else 'blocking'} calls vs ncclAllReduce, "
                 f"call check {check}")
        tasks.append(Task(f"a-{form}-check-{check}", "a", title, cmd, 90, env=env, skip=no_gpu))

    # (b) one rank up to 1 GiB: completion polling against NCCL.
    for form in ("blocking", "stream"):
        cmd = launch + ["-n", "1", bench, "-m", "cuda", "-a", "nccl", "--baseline", "nccl"]
        cmd += ["--stream-ordered"] if form == "stream" else []
        cmd += sweep_args(sweeps["b"]) + ["--no-progress"]
        tasks.append(Task(f"b-{form}-np1", "b", f"1 rank, {form} calls vs ncclAllReduce up to "
                          f"{sweeps['b'][1]}", cmd, 120, skip=no_gpu))

    # (c) the first real abort.
    program, env = async_program(manifest)
    skip = no_gpu or (None if program else "the bundle has no tests/test_gpu_async (this build did not make it)")
    env = dict(env, STRATA_RANKS_PER_NODE="1")
    cmd = launch + ["-n", "2", program or f"{B}/tests/test_gpu_async", "--stop-rank", "1", "--timeout", "5"]
    tasks.append(Task("c-abort-stopped-rank", "c", "2 ranks, rank 1 SIGSTOPped mid-run, 5 s timeout: "
                      "DeadlineExceeded naming it within 20 s", cmd, 60, env=env, kind="abort", skip=skip))

    # (d) overlap with a GPU kernel on another stream.
    for ranks in (2, 1):
        cmd = launch + ["-n", str(ranks), bench, "-m", "cuda", "-a", "nccl", "--stream-ordered", "--overlap",
                        "--baseline", "nccl"] + sweep_args(sweeps["d"]) + ["--no-progress"]
        tasks.append(Task(f"d-overlap-np{ranks}", "d", f"{ranks} rank{'s' if ranks > 1 else ''}, stream-ordered "
                          "calls beside strata::bench::busy_kernel", cmd, 120,
                          env={"STRATA_RANKS_PER_NODE": "1"} if ranks > 1 else {}, skip=no_gpu))

    # (e) host collectives: node sizes beyond 2 cores.
    cores = usable_cores()
    sweep = sweeps["e"] if gpu and not args.quick else SWEEPS["quick"]["e"]
    for ranks in HOST_RANKS:
        # A core each (the launcher layer's --bind core); where the launcher
        # finds fewer cores (hardware threads counted as CPUs), ranks share
        # one rather than the launch failing, and each rank's line from
        # report_binding.sh says so: session_report.py reads them.
        cmd = launch + ["--bind", "core", "-n", str(ranks), f"{B}/scripts/report_binding.sh", bench, "-m", "host",
                        "--baseline", "mpi"]
        cmd += sweep_args(sweep) + ["--no-progress"]
        skip = None if ranks <= cores else f"needs {ranks} cores: this process may use {cores}"
        tasks.append(Task(f"e-host-np{ranks}", "e", f"{ranks} ranks on host memory vs MPI_Allreduce, one core "
                          "each", cmd, 90, device=False, skip=skip))

    # (f) gpu-check's regression tests with what is left; without a GPU
    # only its host preflight. check.py's main, as gpu-check.sh runs it
    # (env.sh is sourced already), without the reserve for the figures it
    # is told to skip.
    code = (f"import sys; sys.path.insert(0, {os.path.join(B, 'scripts')!r}); import check; "
            "check.FIGURE_RESERVE_S = 0; sys.exit(check.main())")
    cmd = ["python3", "-c", code, "--out", os.path.join(out_dir, "gpu-check")]
    cmd += ["--skip", "^figure-"] if gpu else ["--only", "^(nvidia-smi|libraries|host-topo)$"]
    tasks.append(Task("f-gpu-check", "f", "gpu-check's tests with the budget left" if gpu else
                      "gpu-check's preflight only (no GPU)", cmd, 100000, device=False, kind="gpu-check"))

    for t in tasks:
        gpu_check.per_rank_host(t)  # NCCL_HOSTID per rank where 2 ranks share the GPU
        if t.kind == "bench":
            t.json_out = os.path.join(out_dir, "bench", t.name + ".json")
            t.cmd = t.cmd + ["-J", t.json_out]
    return tasks


# --- running -----------------------------------------------------------------

def status_of(task, rc, output):
    if rc == 77:
        return "skip", "exit 77: " + (gpu_check.last_line_with(output, "skipped") or "skipped")
    if rc == 124:
        return "fail", f"timed out after {task.timeout:.0f} s"
    if task.kind == "abort":
        line = gpu_check.last_line_with(output, "ABORT:")
        if rc == 0 and line:
            return "pass", ""
        return "fail", f"exit {rc}" + (f": {line}" if line else ": no ABORT: line")
    if rc == 0:
        return "pass", ""
    return "fail", f"exit {rc}: " + (gpu_check.last_line_with(output, "strata-bench:") or
                                     gpu_check.last_line_with(output, "FAIL") or
                                     gpu_check.last_line_with(output, "rror") or "")


def figures_of(task, rc, output, out_dir):
    if task.kind == "bench" and rc in (0, 1) and task.json_out and os.path.exists(task.json_out):
        fig = report.bench_figures(task.json_out)
        fig["json"] = os.path.relpath(task.json_out, out_dir)
        if task.part == "a":
            fig["transport"] = report.nccl_transport(output)
        if task.part == "e":
            fig["bindings"] = report.bindings(output)
        return fig
    if task.kind == "abort":
        return {"abort": gpu_check.last_line_with(output, "ABORT:")}
    if task.kind == "gpu-check":
        path = os.path.join(out_dir, "gpu-check", "gpu-check.json")
        if os.path.exists(path):
            with open(path) as f:
                doc = json.load(f)
            steps = doc.get("steps", [])
            # A run cut short has no counts of its own yet.
            counts = doc.get("counts") or {k: sum(1 for s in steps if s["status"] == k) for k in ("pass", "fail", "skip")}
            return {"counts": counts, "json": os.path.relpath(path, out_dir), "complete": "counts" in doc,
                    "failed": [s["name"] for s in steps if s["status"] == "fail"]}
    return {}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.environ.get("OUT") or os.path.join(os.getcwd(), "gpu-session-out"))
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S)
    parser.add_argument("--only", help="run only the steps whose name matches this regular expression")
    parser.add_argument("--skip", help="leave out the steps whose name matches this regular expression")
    parser.add_argument("--quick", action="store_true", help="a few small sizes everywhere: tests the commands")
    parser.add_argument("--assume-gpu", action="store_true",
                        help="run the GPU steps without asking nvidia-smi (the test double)")
    parser.add_argument("--list", action="store_true", help="print the steps and their commands, run nothing")
    args = parser.parse_args()
    if args.budget <= 0:
        parser.error("--budget must be positive")

    with open(os.path.join(BUNDLE, "manifest.json")) as f:
        manifest = json.load(f)
    out_dir = os.path.abspath(args.out)
    gpu, gpu_why = gpu_present(args.assume_gpu)
    tasks = build_tasks(args, gpu, gpu_why, manifest, out_dir)
    if args.only:
        tasks = [t for t in tasks if re.search(args.only, t.name)]
    if args.skip:
        tasks = [t for t in tasks if not re.search(args.skip, t.name)]
    if args.list:
        for t in tasks:
            extra = " ".join(f"{k}={shlex.quote(v)}" for k, v in t.env.items() if not k.startswith("STRATA_"))
            state = f"  [skipped: {t.skip_reason}]" if t.skip_reason else ""
            print(f"{t.name:22} {t.timeout if t.timeout < 100000 else 0:4.0f}s "
                  f"{(extra + ' ') if extra else ''}{t.command_text()}{state}")
        return 0

    os.makedirs(os.path.join(out_dir, "bench"), exist_ok=True)
    log_path, json_path, text_path = (os.path.join(out_dir, n) for n in ("session.log", "session.json", "session.txt"))
    start = time.monotonic()
    deadline = start + args.budget
    summary = {"tool": "strata gpu session", "started": datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds"), "bundle": {k: manifest.get(k) for k in ("made", "commit", "dirty", "versions")},
        "machine": gpu_check.machine_info(), "gpu": {"present": gpu, "why": gpu_why}, "quick": args.quick,
        "budget_s": args.budget, "cores": usable_cores(), "steps": []}
    print(f"session: {len(tasks)} steps, budget {args.budget:.0f} s; GPU: {gpu_why}; log {log_path}", flush=True)
    with open(log_path, "w") as log:
        log.write(f"# strata GPU session, bundle {BUNDLE}\n# {json.dumps(summary['bundle'])}\n"
                  f"# {json.dumps(summary['machine'])}\n")
        for task in tasks:
            left = deadline - time.monotonic()
            record = {"name": task.name, "part": task.part, "title": task.title, "command": task.command_text(),
                      "env": {k: v for k, v in task.env.items() if k.startswith(("STRATA_", "NCCL_"))},
                      "device": task.device}
            if task.nccl_hostid:
                record["nccl_hostid"] = task.nccl_hostid
            log.write(f"\n===== {task.name}: {task.title} =====\n$ {task.command_text()}\n")
            log.flush()
            t0 = time.monotonic()
            rc, output, figures = None, "", {}
            if task.skip_reason:
                status, reason = "skip", task.skip_reason
            elif left < MIN_STEP_S:
                status, reason = "skip", f"out of time: {max(left, 0):.0f} s of the budget left"
            else:
                task.timeout = min(task.timeout, left)
                if task.kind == "gpu-check":
                    # It bounds its own steps; a few seconds stay for its summary.
                    budget = max(MIN_STEP_S, int(left) - 15)
                    task.cmd = task.cmd + ["--budget", str(budget)]
                    record["command"] = task.command_text()
                    log.write(f"$ ... --budget {budget}\n")
                rc, output = gpu_check.run_command(task, log)
                status, reason = status_of(task, rc, output)
                try:
                    figures = figures_of(task, rc, output, out_dir)
                except (OSError, ValueError, KeyError, TypeError) as e:
                    figures = {"parse_error": str(e)}
                if task.kind == "bench" and status == "pass" and figures.get("wrong_total") not in (0, None):
                    status, reason = "fail", f"wrong values: {figures.get('wrong_total')}"
                if task.kind == "bench" and status == "pass" and "rows" not in figures:
                    status, reason = "fail", "exit 0 but no JSON from strata-bench"
            record.update(rc=rc, seconds=round(time.monotonic() - t0, 1), status=status, reason=reason,
                          figures=figures, tail=output.splitlines()[-6:])
            log.write(f"----- {task.name}: {status.upper()} rc={rc} {record['seconds']} s {reason}\n")
            log.flush()
            summary["steps"].append(record)
            print(f"  {status:4} {record['seconds']:6.1f}s  {task.name}" + (f"  ({reason})" if reason else ""),
                  flush=True)
            summary["targets"] = report.targets(summary["steps"])
            with open(json_path, "w") as f:  # a cut-off run still leaves one
                json.dump(summary, f, indent=1)

    summary["counts"] = {s: sum(1 for r in summary["steps"] if r["status"] == s) for s in ("pass", "fail", "skip")}
    summary["seconds"] = round(time.monotonic() - start, 1)
    summary["targets"] = report.targets(summary["steps"])
    with open(json_path, "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    text = report.text_summary(summary)
    with open(text_path, "w") as f:
        f.write(text)
    print("\n" + text + f"summary: {json_path}, {text_path}")
    return 1 if summary["counts"]["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
