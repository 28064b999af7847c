#!/usr/bin/env python3
"""Proves that the lent-GPU session (scripts/gpu/session.sh, carried in the
GPU bundle) runs from a bundle, as it will on the GPU machine:

    check_session.py --from-build BUILD_DIR [--double DOUBLE_DIR]

Assembles a bundle from the build into a temporary folder
(scripts/gpu-bundle.sh --from-build), then, from an empty environment:
  - without a GPU: session.sh exits 0; every GPU step (parts a-d) is
    skipped with a reason that says there is no GPU; the host steps (part e)
    pass at small sizes with every value checked against MPI_Allreduce and
    each rank's binding recorded, rank counts above this machine's cores
    skipped naming the cores; the
    gpu-check step passes; no target claims a figure; the log, the JSON, the
    text summary and strata-bench's JSON are written under --out;
  - gpu-check's FIGURE_RESERVE_S, which part f turns off, still exists;
  - --list with --assume-gpu: the full sweeps, and the 2-rank GPU commands
    through per_rank_host.sh, NCCL_DEBUG on part a, STRATA_CHECK=off where
    the check is off;
  - with --double: the GPU steps of parts a, b and d run on the CUDA
    runtime + NCCL test double (--assume-gpu --quick; the double's
    libcudart.so.13 put in place of the bundle's, its libnccl.so.2 found
    through STRATA_NCCL_LIBDIR): every strata-bench
    command the session gives a GPU is accepted, runs and checks its
    results; part a runs its 2 ranks with an NCCL_HOSTID each; the
    stream-ordered runs report host and device times (theirs and NCCL's),
    the overlap runs their overlap columns; the devices say they are
    simulated, so no target claims a figure.
Exit status: 0 all checks passed, 1 a check failed, 77 the build has no GPU
backend. Registered with meson as 'gpu-session' (suite bundle).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATH = "/usr/local/bin:/usr/bin:/bin"
GPU_STEPS = ["a-stream-check-on", "a-blocking-check-on", "a-stream-check-off", "a-blocking-check-off",
             "b-blocking-np1", "b-stream-np1", "c-abort-stopped-rank", "d-overlap-np2", "d-overlap-np1"]
HOST_STEPS = ["e-host-np2", "e-host-np4", "e-host-np8", "e-host-np16", "f-gpu-check"]
failures = 0


def ok(text):
    print(f"check_session: ok: {text}", flush=True)


def bad(text):
    global failures
    failures += 1
    print(f"check_session: FAIL: {text}", flush=True)


def session(bundle, *args, env=None):
    """session.sh from an empty environment (plus `env`): (exit status, output)."""
    proc = subprocess.run(["env", "-i", f"PATH={PATH}", *[f"{k}={v}" for k, v in (env or {}).items()], "bash",
                           os.path.join(bundle, "session.sh"), *args],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc.returncode, proc.stdout


def check_without_gpu(out, cores):
    s = json.load(open(os.path.join(out, "session.json")))
    problems = []
    if s["gpu"]["present"]:
        problems.append(f"a GPU was seen: {s['gpu']['why']}")
    names = [r["name"] for r in s["steps"]]
    if names != GPU_STEPS + HOST_STEPS:
        problems.append(f"steps {names}, expected {GPU_STEPS + HOST_STEPS} in that order")
    for r in s["steps"]:
        f = r["figures"]
        if r["part"] in "abcd":
            if not (r["status"] == "skip" and r["reason"].startswith("no GPU")):
                problems.append(f"{r['name']}: {r['status']} ({r['reason']}), expected skipped for want of a GPU")
        elif r["part"] == "e":
            ranks = int(r["name"].rsplit("np", 1)[1])
            if ranks > cores:
                if not (r["status"] == "skip" and re.search(r"needs \d+ cores", r["reason"])):
                    problems.append(f"{r['name']}: {r['status']} ({r['reason']}), expected skipped for want of cores")
            elif r["status"] != "pass" or f.get("wrong_total") != 0 or not f.get("rows"):
                problems.append(f"{r['name']}: {r['status']} ({r['reason']}), wrong {f.get('wrong_total')}")
            elif max(row["bytes"] for row in f["rows"]) > 65536:
                problems.append(f"{r['name']}: sizes up to {max(row['bytes'] for row in f['rows'])} B without a GPU")
            elif not all(row.get("ratio") is not None and "baseline_time_us" in row for row in f["rows"]):
                problems.append(f"{r['name']}: rows without MPI_Allreduce's time or the ratio")
            elif not os.path.exists(os.path.join(out, f["json"])):
                problems.append(f"{r['name']}: its JSON {f['json']} is not under --out")
            elif f.get("bindings", {}).get("ranks") != ranks:
                problems.append(f"{r['name']}: the ranks' bindings not recorded: {f.get('bindings')}")
        elif r["status"] != "pass" or not f.get("counts") or f["counts"].get("fail"):
            problems.append(f"{r['name']}: {r['status']} ({r['reason']}) {f}")
    if [t["value"] for t in s["targets"]] != [None] * 10 or any(t["met"] is not None for t in s["targets"]):
        problems.append(f"targets claim figures without a GPU, or are not the 10 expected: {s['targets']}")
    text = open(os.path.join(out, "session.txt")).read()
    if "no figure" not in text or not re.search(r"\d+ passed, 0 failed, \d+ skipped", text):
        problems.append("session.txt lacks the targets table or the counts")
    if "===== e-host-np2" not in open(os.path.join(out, "session.log")).read():
        problems.append("session.log lacks the host step's output")
    return problems, (f"{sum(r['status'] == 'skip' for r in s['steps'])} steps skipped with their reasons, "
                      f"{sum(r['status'] == 'pass' for r in s['steps'])} passed ({s['seconds']} s)")


def check_listing(listing):
    problems = []
    lines = {line.split()[0]: line for line in listing.splitlines() if line.strip()}
    wrapped = sorted(name for name, line in lines.items() if "per_rank_host.sh" in line)
    want = ["a-blocking-check-off", "a-blocking-check-on", "a-stream-check-off", "a-stream-check-on",
            "c-abort-stopped-rank", "d-overlap-np2"]
    if wrapped != want:
        problems.append(f"per_rank_host.sh wraps {wrapped}, expected {want}")
    a_off = lines.get("a-stream-check-off", "")
    if not ("NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET" in a_off and "STRATA_CHECK=off" in a_off
            and "--stream-ordered" in a_off and "-b 8 -e 64K" in a_off):
        problems.append(f"a-stream-check-off: {a_off}")
    if "STRATA_CHECK" in lines.get("a-stream-check-on", ""):
        problems.append("a-stream-check-on sets STRATA_CHECK")
    if "-b 64K -e 1G" not in lines.get("b-blocking-np1", ""):
        problems.append(f"b-blocking-np1: {lines.get('b-blocking-np1')}")
    if not re.search(r"test_gpu_async --stop-rank 1 --timeout 5\b", lines.get("c-abort-stopped-rank", "")):
        problems.append(f"c-abort-stopped-rank: {lines.get('c-abort-stopped-rank')}")
    if "--stream-ordered --overlap" not in lines.get("d-overlap-np2", ""):
        problems.append(f"d-overlap-np2: {lines.get('d-overlap-np2')}")
    if not re.search(r"--bind core -n 16 \S+report_binding\.sh \S+strata-bench -m host --baseline mpi -b 8 -e 64M",
                     lines.get("e-host-np16", "")):
        problems.append(f"e-host-np16: {lines.get('e-host-np16')}")
    return problems


def check_double(out):
    s = json.load(open(os.path.join(out, "session.json")))
    problems = []
    steps = {r["name"]: r for r in s["steps"]}
    want = [n for n in GPU_STEPS if not n.startswith("c-")]
    if sorted(steps) != sorted(want):
        problems.append(f"steps {sorted(steps)}, expected {sorted(want)}")
    for name, r in steps.items():
        f = r["figures"]
        if r["status"] != "pass" or f.get("wrong_total") != 0 or not f.get("rows"):
            problems.append(f"{name}: {r['status']} ({r['reason']}), wrong {f.get('wrong_total')}")
            continue
        if not f.get("simulated"):
            problems.append(f"{name}: not simulated on the test double")
        stream = "stream" in name or name.startswith("d-")
        if f.get("stream_ordered") != stream:
            problems.append(f"{name}: stream_ordered is {f.get('stream_ordered')}")
        for row in f["rows"]:
            if stream and not all(k in row for k in ("host_us", "device_us", "baseline_host_us", "baseline_device_us")):
                problems.append(f"{name}: row {row['bytes']} lacks host/device times: {sorted(row)}")
            overlap = ("t_comm_us", "t_compute_us", "t_both_us", "overlap_pct")
            if name.startswith("d-") != all(k in row for k in overlap):
                problems.append(f"{name}: row {row['bytes']} has the overlap columns {[k for k in overlap if k in row]}")
        if name.startswith("a-"):
            if r.get("nccl_hostid") != {"ranks_per_host": 1, "hosts": 2}:
                problems.append(f"{name}: not run with an NCCL_HOSTID per rank: {r.get('nccl_hostid')}")
            if r["env"].get("NCCL_DEBUG") != "INFO" or (r["env"].get("STRATA_CHECK") == "off") != name.endswith("-off"):
                problems.append(f"{name}: environment {r['env']}")
            if "transport" not in f:
                problems.append(f"{name}: no transport record")
    for t in s["targets"]:
        if t["value"] is not None or "simulated" not in (t["note"] or ""):
            problems.append(f"target {t['target']!r}: {t['value']} ({t['note']}): a simulated device gives no figure")
    return problems, (f"{len(steps)} GPU steps ran on simulated devices, every value right, no figure claimed "
                      f"({s['seconds']} s)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from-build", required=True)
    parser.add_argument("--double")
    args = parser.parse_args()
    # Part f turns gpu-check's reserve for its (skipped) figures off by name.
    sys.path.insert(0, os.path.join(ROOT, "scripts", "gpu"))
    import check  # noqa: E402
    if not hasattr(check, "FIGURE_RESERVE_S"):
        bad("scripts/gpu/check.py has no FIGURE_RESERVE_S any more: session.py's part f sets it to 0")
    with open(os.path.join(args.from_build, "include", "strata", "version.hpp")) as f:
        if "#define STRATA_HAVE_CUDA 1" not in f.read():
            print(f"check_session: SKIP: {args.from_build} has no GPU backend (configure with -Dcuda=enabled)")
            return 77
    tmp = tempfile.mkdtemp(prefix="strata-session-test.")
    try:
        bundle = os.path.join(tmp, "gpu-bundle")
        subprocess.run([os.path.join(ROOT, "scripts", "gpu-bundle.sh"), "--from-build", args.from_build, bundle],
                       check=True)
        missing = [f for f in ("session.sh", "scripts/session.py", "scripts/session_report.py", "scripts/check.py", "scripts/per_rank_host.sh", "scripts/report_binding.sh",
                               "gpu-check.sh", "bin/strata-bench", "bin/mpirun")
                   if not os.path.exists(os.path.join(bundle, f))]
        manifest = json.load(open(os.path.join(bundle, "manifest.json")))
        if missing or manifest.get("session", {}).get("script") != "session.sh" or "session.sh" not in manifest["sources"]:
            bad(f"the bundle lacks {missing} or its manifest does not record the session")
        else:
            ok("the bundle holds session.sh, what it runs, and its manifest says so")

        out = os.path.join(tmp, "nogpu")
        rc, text = session(bundle, "--out", out, "--budget", "240")
        problems, verdict = check_without_gpu(out, len(os.sched_getaffinity(0))) if os.path.exists(
            os.path.join(out, "session.json")) else (["no session.json"], "")
        if rc != 0 or problems:
            bad(f"session.sh without a GPU (exit {rc}): {'; '.join(problems)}\n{text}")
        else:
            ok(f"env -i session.sh without a GPU: {verdict}")

        rc, listing = session(bundle, "--assume-gpu", "--list")
        problems = check_listing(listing)
        if rc != 0 or problems:
            bad(f"session.sh --assume-gpu --list (exit {rc}): {'; '.join(problems)}\n{listing}")
        else:
            ok("--list: full sweeps; the 2-rank GPU commands through per_rank_host.sh; NCCL_DEBUG and STRATA_CHECK=off "
               "on part a as asked")

        if args.double:
            # The bundle's CUDA runtime becomes the double's, and its NCCL the
            # double's (env.sh links it): LD_LIBRARY_PATH cannot do it, since
            # mpirun started by its full path puts the bundle's lib/ first there.
            shutil.copyfile(os.path.join(args.double, "libcudart.so.13"), os.path.join(bundle, "lib", "libcudart.so.13"))
            out = os.path.join(tmp, "double")
            rc, text = session(bundle, "--assume-gpu", "--quick", "--only", "^[abd]-", "--out", out, "--budget", "400",
                               env={"STRATA_NCCL_LIBDIR": args.double, "STRATA_FAKE_GPUS": "1",
                                    "STRATA_FAKE_HANG_SECONDS": "120"})
            problems, verdict = check_double(out) if os.path.exists(os.path.join(out, "session.json")) else (
                ["no session.json"], "")
            if rc != 0 or problems:
                bad(f"session.sh --assume-gpu --quick on the test double (exit {rc}): {'; '.join(problems)}\n{text}")
            else:
                ok(f"session.sh --assume-gpu --quick on the test double: {verdict}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"check_session: {failures} check(s) failed")
        return 1
    print("check_session: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
