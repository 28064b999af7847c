#!/usr/bin/env python3
"""Runs strata's GPU checks from a bundle, one bounded step after another,
and writes a log and a JSON summary. Called by gpu-check.sh (which sources
env.sh first); this file is the bundle's scripts/check.py.

    check.py [--out DIR] [--budget S] [--only REGEX] [--skip REGEX] [--list]

Steps, in the order that finds bugs fastest (each is skipped with the reason
when it cannot run, and the run keeps going after a failure):
  preflight  nvidia-smi; the bundle's libraries (ldd: nothing missing, all
             inside the bundle except glibc, the C++ runtime, the CUDA
             driver and NCCL; NCCL's soname and version); Open MPI from the
             bundle on host memory (strata-topo, strata-bench -c 1)
  tests      the GPU tests the build registers with meson (manifest.json),
             kernels first, then collectives at 1 rank, at 2 ranks on
             virtual nodes of one (STRATA_RANKS_PER_NODE=1), batches, the
             strata-bench -m cuda checks
  figures    the three GPU figures of docs/PERFORMANCE.md, and the staged
             figure's host-memory reference (the same xring, no GPU)
  more       the GPU tests' other layouts (4 and 3 ranks), if time is left
A step's status: pass (exit 0), skip (exit 77, or check_bench's "skipped as
expected"), fail (anything else, a timeout included: exit 124).

Multi-rank GPU steps run every rank through scripts/per_rank_host.sh
(between the launcher and the program), which sets NCCL_HOSTID per rank, or per
virtual node of STRATA_RANKS_PER_NODE ranks: NCCL and strata then take
those groups for separate hosts, so ranks sharing the machine's one GPU
still run NCCL (through its network transport) instead of being refused as
duplicates. The JSON says which steps ran so (`nccl_hostid` per step,
`per_rank_host_steps`).

The whole run stays within --budget seconds (default 480): every step has
its own timeout, cut to what the budget leaves; the tests leave 150 s of it
to the figures; a step with under 10 s left is skipped ("out of time").
Writes DIR/gpu-check.log (every command and its whole output) and
DIR/gpu-check.json; DIR is --out, else $OUT, else ./gpu-check-out.
Exit status: 0 when no step failed, 1 otherwise.
"""
import argparse
import ctypes
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

BUNDLE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
PER_RANK_HOST = os.path.join(BUNDLE, "scripts", "per_rank_host.sh")  # from scripts/gpu/per_rank_host.sh
FIGURE_RESERVE_S = 150
MIN_STEP_S = 10
# Outside the bundle on purpose: glibc, the C++ runtime, the CUDA driver,
# NCCL (found at run time, see env.sh).
SYSTEM_LIBS = re.compile(
    r"^(linux-vdso\.so|ld-linux-x86-64\.so|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|"
    r"libutil\.so|libresolv\.so|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so|libnccl\.so)")

# Test order: (phase, pattern) by first match; a test that matches none (a
# new one) runs in 'more'. The GPU tests' names come from the build.
TEST_ORDER = [
    ("tests", r"^test_gpu_unavailable"),
    ("tests", r"^test_gpu_kernels"),
    ("tests", r"^strata-gpu-kernels$"),
    ("tests", r"^test_gpu_collectives-np1\b"),
    ("tests", r"^test_gpu_stream-np1\b"),
    ("tests", r"^test_gpu_collectives-np2-rpn1-"),
    ("tests", r"^test_gpu_batch-np1\b"),
    ("tests", r"^test_gpu_batch-np2-rpn1-"),
    ("tests", r"cuda"),
    ("more", r"^test_gpu_collectives-"),  # flat NCCL at 3 and 4 ranks (rpn1), hierarchical (rpn2)
    ("more", r"."),
]
TEST_CAP_S = {"tests": 120, "more": 150}


class Step:
    def __init__(self, name, phase, cmd, timeout, env=None, device=True, parse=None, func=None):
        self.name, self.phase, self.cmd, self.timeout = name, phase, cmd, timeout
        self.env, self.device, self.parse, self.func = env or {}, device, parse, func
        self.json_out = None  # where a strata-bench step writes its JSON
        self.raw = None  # that JSON, kept in the summary
        self.nccl_hostid = None  # set by per_rank_host(): {"ranks_per_host", "hosts"}

    def command_text(self):
        if self.func:
            return self.cmd
        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items() if k.startswith("STRATA_"))
        return (prefix + " " if prefix else "") + " ".join(shlex.quote(c) for c in self.cmd)


# --- the library check (an in-process step) ---------------------------------

def elf_soname(path):
    """DT_SONAME of a 64-bit little-endian ELF file, read with the standard
    library alone (the GPU machine may have no readelf)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for sh in sections:
        if sh[1] != 6:  # SHT_DYNAMIC
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], 16):
            tag, val = struct.unpack_from("<qQ", data, off)
            if tag == 0:
                break
            if tag == 14:  # DT_SONAME
                start = strtab[4] + val
                return data[start:data.index(b"\0", start)].decode()
    return None


def version_key(text):
    return tuple(int(x) for x in re.findall(r"\d+", text))


def bundle_elves():
    for top in ("bin", "tests", "lib", "pmix"):
        for root, _, files in os.walk(os.path.join(BUNDLE, top)):
            for name in sorted(files):
                path = os.path.join(root, name)
                with open(path, "rb") as f:
                    if f.read(4) == b"\x7fELF":
                        yield path


def check_libraries(log):
    """Every bundled ELF file's libraries resolve, and inside the bundle;
    NCCL's soname and version; the CUDA driver."""
    figures, problems = {}, []
    with open(os.path.join(BUNDLE, "manifest.json")) as f:
        manifest = json.load(f)
    needs = manifest.get("needs", {})
    built_nccl = manifest.get("versions", {}).get("NCCL", "")
    glibc = platform.libc_ver()[1]
    figures["glibc"] = glibc
    if needs.get("GLIBC") and glibc and version_key(glibc) < version_key(needs["GLIBC"]):
        problems.append(f"this machine's glibc is {glibc}; the bundle (built on Debian 12) needs {needs['GLIBC']}")
    nccl = os.environ.get("STRATA_BUNDLE_NCCL", "")
    if not nccl or not os.path.exists(nccl):
        # env.sh warned and went on; the run records it here.
        problems.append("no NCCL: env.sh found no libnccl.so.2 (it looks at $STRATA_NCCL_LIBDIR, Python's "
                        f"nvidia.nccl package, ldconfig's cache, then {manifest.get('nccl_at_build') or 'nothing'} "
                        "from the build); set STRATA_NCCL_LIBDIR or install nvidia-nccl-cu13: nothing that links "
                        "strata can start")
        nccl = None
    else:
        figures["nccl"] = os.path.realpath(nccl)
        figures["nccl_soname"] = elf_soname(os.path.realpath(nccl))
        if figures["nccl_soname"] != "libnccl.so.2":
            problems.append(f"{nccl}: soname {figures['nccl_soname']}, strata needs libnccl.so.2")
        try:
            version = ctypes.c_int()
            ctypes.CDLL(nccl).ncclGetVersion(ctypes.byref(version))
            v = version.value
            figures["nccl_version"] = f"{v // 10000}.{v // 100 % 100}.{v % 100}"
            # NCCL runs programs built against an older NCCL, not a newer one.
            if built_nccl and version_key(figures["nccl_version"])[:2] < version_key(built_nccl)[:2]:
                problems.append(f"NCCL here is {figures['nccl_version']}, older than the {built_nccl} strata was built with")
        except (OSError, AttributeError) as e:
            problems.append(f"{nccl}: cannot load it to ask its version: {e}")
    try:
        ctypes.CDLL("libcuda.so.1")
        figures["libcuda"] = "loadable"
    except OSError as e:
        figures["libcuda"] = f"not loadable: {e}"
        if shutil.which("nvidia-smi"):
            problems.append(f"nvidia-smi is here but the CUDA driver library is not loadable: {e}")
    if not shutil.which("ldd"):
        problems.append("ldd not found: cannot check the bundle's libraries")
    else:
        outside, missing, count, need_nccl = set(), set(), 0, 0
        for path in bundle_elves():
            count += 1
            text = subprocess.run(["ldd", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
            for line in text.splitlines():
                m = re.match(r"\s*(\S+) => (.*?)( \(0x[0-9a-f]+\))?$", line)
                if not m:
                    if "not found" in line:
                        missing.add(f"{os.path.relpath(path, BUNDLE)}: {line.strip()}")
                    continue
                name, where = m.group(1), m.group(2)
                if where == "not found" and name == "libnccl.so.2" and nccl is None:
                    need_nccl += 1  # reported once above
                elif where == "not found":
                    missing.add(f"{os.path.relpath(path, BUNDLE)} needs {name}: not found")
                elif not SYSTEM_LIBS.match(name) and not os.path.realpath(where).startswith(BUNDLE + os.sep):
                    outside.add(f"{name} => {where}")
        figures["elf_files"] = count
        if need_nccl:
            figures["elf_files_needing_nccl"] = need_nccl
        if missing:
            problems += sorted(missing)
        if outside:
            problems += [f"resolved outside the bundle: {o}" for o in sorted(outside)]
    for k, v in figures.items():
        log.write(f"{k}: {v}\n")
    for p in problems:
        log.write(f"PROBLEM: {p}\n")
    return (1 if problems else 0), figures, problems


# --- parsers for the figures -------------------------------------------------

def parse_bench_json(step, output):
    if not step.json_out or not os.path.exists(step.json_out):
        return {}
    with open(step.json_out) as f:
        doc = json.load(f)
    rows = doc.get("rows", [])
    figures = {"wrong_total": doc.get("summary", {}).get("wrong_total"), "rows": len(rows),
               "devices": doc.get("devices"), "algorithm": doc.get("algorithm")}
    figures["time_us"] = {str(r["bytes"]): r["time_us"] for r in rows}
    figures["algbw_gbps"] = {str(r["bytes"]): r["algbw"] for r in rows}
    if any("overhead_us" in r for r in rows):
        figures["overhead_us"] = {str(r["bytes"]): r.get("overhead_us") for r in rows}
        figures["baseline_time_us"] = {str(r["bytes"]): r["baseline"]["time_us"] for r in rows if "baseline" in r}
        figures["overhead_us_at_smallest"] = rows[0].get("overhead_us")
        figures["overhead_us_max"] = max(r.get("overhead_us") or 0 for r in rows)
    copy = doc.get("summary", {}).get("device_copy")
    if copy:
        figures["device_copy"] = copy
        if copy.get("largest_algbw_fraction") is not None:
            figures["staged_pct_of_slower_copy"] = round(100 * copy["largest_algbw_fraction"], 1)
    step.raw = doc
    return figures


def parse_kernels(step, output):
    rows, verdict = [], None
    for line in output.splitlines():
        m = re.match(r"^(\S.*?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%$", line.strip())
        if m and not line.startswith("#"):
            rows.append({"kernel": m.group(1), "time_ms": float(m.group(2)), "gbps": float(m.group(3)),
                         "pct_of_copy": float(m.group(4))})
        if line.startswith("# verdict:"):
            verdict = line[len("# verdict:"):].strip()
    figures = {"kernels": rows, "verdict": verdict}
    others = [r["pct_of_copy"] for r in rows if not r["kernel"].startswith("cudaMemcpy")]
    if others:
        figures["min_pct_of_copy"] = min(others)
    return figures


def status_of(step, rc, output):
    if rc == 77:
        return "skip", "exit 77: " + (last_line_with(output, "SKIP") or last_line_with(output, "skip") or "skipped")
    if rc == 0 and "check_bench: OK (skipped" in output:
        return "skip", last_line_with(output, "check_bench: OK (skipped")
    if rc == 0:
        return "pass", ""
    if rc == 124:
        return "fail", f"timed out after {step.timeout:.0f} s"
    return "fail", f"exit {rc}: " + (last_line_with(output, "FAIL") or last_line_with(output, "rror") or "")


def last_line_with(output, text):
    for line in reversed(output.splitlines()):
        if text in line:
            return line.strip()[:300]
    return None


# --- running -----------------------------------------------------------------

def run_command(step, log):
    env = dict(os.environ)
    env.update(step.env)
    with tempfile.TemporaryFile(mode="w+") as capture:
        proc = subprocess.Popen(step.cmd, stdout=capture, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True, cwd=BUNDLE)
        try:
            rc = proc.wait(timeout=step.timeout)
        except subprocess.TimeoutExpired:
            # mpirun and its ranks are one process group: end them all.
            for sig, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
            rc = 124
        capture.seek(0)
        output = capture.read()
    log.write(output)
    return rc, output


def rank_count_at(cmd):
    """(rank count, index of its flag) of an `mpirun -np N ...` command or
    of the launcher layer's `strata-launch -n N ...` (a test's command as
    assemble.py rewrites it); (0, -1) for any other."""
    if not cmd or os.path.basename(cmd[0]) not in ("mpirun", "strata-launch"):
        return 0, -1
    for at, (flag, value) in enumerate(zip(cmd, cmd[1:])):
        if flag in ("-np", "-n", "--np") and value.isdigit():
            return int(value), at
    return 0, -1


def per_rank_host(step):
    """Puts per_rank_host.sh between the launcher and the program of a GPU
    step with two ranks or more (the program: the first bundle path after
    the rank count), so that each rank, or each virtual node of
    STRATA_RANKS_PER_NODE ranks, gets its own NCCL_HOSTID. Other steps are
    left alone: host-only steps need no NCCL, and check_bench's steps start
    mpirun themselves (their multi-rank runs use psgpu and host-staged
    algorithms, which need no NCCL)."""
    ranks, flag = rank_count_at(step.cmd)
    if not step.device or ranks < 2:
        return
    already = any(os.path.basename(c) == "per_rank_host.sh" for c in step.cmd)  # the test's own command has it
    at = next((i for i, c in enumerate(step.cmd) if i > flag and c.startswith(BUNDLE + os.sep)), None)
    if at is None:
        return
    group = step.env.get("STRATA_RANKS_PER_NODE") or "1"
    group = int(group) if group.isdigit() and int(group) > 0 else 1  # strata itself refuses a bad value
    if not already:
        step.cmd = step.cmd[:at] + [PER_RANK_HOST] + step.cmd[at:]
    step.nccl_hostid = {"ranks_per_host": group, "hosts": -(-ranks // group)}


def build_steps(manifest, tmp):
    B = BUNDLE
    launch = [f"{B}/bin/strata-launch"]  # the launcher layer over the bundle's Open MPI, unbound
    steps = [
        Step("nvidia-smi", "preflight", ["nvidia-smi"], 30),
        Step("libraries", "preflight", "in-process: ldd over every ELF file in the bundle; NCCL's soname and version",
             60, device=False, func=check_libraries),
        Step("host-topo", "preflight", launch + ["-n", "2", f"{B}/bin/strata-topo"], 60, device=False),
    ]
    host_bench = Step("host-bench", "preflight",
                      launch + ["-n", "2", f"{B}/bin/strata-bench", "-b", "8", "-e", "64k", "-c", "1",
                                "--no-progress"], 90, device=False, parse=parse_bench_json)
    steps.append(host_bench)

    def order(test):
        for i, (phase, pattern) in enumerate(TEST_ORDER):
            if re.search(pattern, test["name"]):
                return i, phase
        return len(TEST_ORDER), "more"

    for test in sorted(manifest["tests"], key=lambda t: (order(t)[0], t["name"])):
        phase = order(test)[1]
        cmd = [c.replace("{B}", B) for c in test["cmd"]]
        steps.append(Step(test["name"], phase, cmd, min(test["timeout"], TEST_CAP_S[phase]), env=test["env"],
                          device="unit" not in test["suites"]))

    bench = f"{B}/bin/strata-bench"
    steps += [
        Step("figure-kernels", "figures", [f"{B}/bin/strata-gpu-kernels", "--bytes", "1G", "--iters", "50"], 90,
             parse=parse_kernels),
        Step("figure-nccl-overhead", "figures",
             launch + ["-n", "1", bench, "-m", "cuda", "-a", "nccl", "--baseline", "nccl", "-b", "8", "-e", "64K",
                       "-f", "2", "-n", "2000", "-w", "100", "--no-progress"], 90, parse=parse_bench_json),
        Step("figure-staged-pipeline", "figures",
             launch + ["-n", "2", bench, "-m", "cuda", "-a", "nccl/xring", "-b", "64M", "-e", "256M", "-f", "2",
                       "--memcpy-reference", "--no-progress"], 150, env={"STRATA_RANKS_PER_NODE": "1"},
             parse=parse_bench_json),
        # The staged figure's other bound: the same xring between the same
        # two virtual nodes on host memory, no GPU in the path.
        Step("figure-staged-host-reference", "figures",
             launch + ["-n", "2", bench, "-m", "host", "-a", "xring", "-b", "64M", "-e", "256M", "-f", "2",
                       "--no-progress"], 90, env={"STRATA_RANKS_PER_NODE": "1"}, device=False,
             parse=parse_bench_json),
    ]
    for step in steps:
        per_rank_host(step)
        if step.parse is parse_bench_json:
            step.json_out = os.path.join(tmp, step.name + ".json")
            step.cmd = step.cmd + ["-J", step.json_out]
    # Figures before the extra layouts: they are the numbers the GPU issue
    # asks for, the layouts repeat what np1/np2 already covered.
    rank = {"preflight": 0, "tests": 1, "figures": 2, "more": 3}
    return sorted(steps, key=lambda s: rank[s.phase])


def host_group_text(hostid):
    group = hostid["ranks_per_host"]
    what = "rank" if group == 1 else f"virtual node of {group} ranks"
    return f"{what}: {hostid['hosts']} pretend hosts"


def machine_info():
    info = {"hostname": platform.node(), "kernel": platform.release(), "glibc": "-".join(platform.libc_ver()),
            "python": platform.python_version()}
    info["gpus"] = []
    if shutil.which("nvidia-smi"):
        try:
            q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,pci.bus_id,compute_cap",
                                "--format=csv,noheader"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=30)
            info["gpus"] = [line.strip() for line in q.stdout.splitlines() if line.strip()]
        except subprocess.TimeoutExpired:
            info["gpus"] = ["nvidia-smi did not answer within 30 s"]
    return info


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.environ.get("OUT") or os.path.join(os.getcwd(), "gpu-check-out"))
    parser.add_argument("--budget", type=float, default=480)
    parser.add_argument("--only", help="run only the steps whose name matches this regular expression")
    parser.add_argument("--skip", help="leave out the steps whose name matches this regular expression")
    parser.add_argument("--list", action="store_true", help="print the steps and their commands, run nothing")
    args = parser.parse_args()

    with open(os.path.join(BUNDLE, "manifest.json")) as f:
        manifest = json.load(f)
    tmp = tempfile.mkdtemp(prefix="strata-gpu-check-")
    steps = build_steps(manifest, tmp)
    if args.only:
        steps = [s for s in steps if re.search(args.only, s.name)]
    if args.skip:
        steps = [s for s in steps if not re.search(args.skip, s.name)]
    if args.list:
        for s in steps:
            hosts = f" [NCCL_HOSTID per {host_group_text(s.nccl_hostid)}]" if s.nccl_hostid else ""
            print(f"{s.phase:9} {s.timeout:4.0f}s {s.name}: {s.command_text()}{hosts}")
        shutil.rmtree(tmp, ignore_errors=True)
        return 0

    os.makedirs(args.out, exist_ok=True)
    log_path = os.path.join(args.out, "gpu-check.log")
    json_path = os.path.join(args.out, "gpu-check.json")
    start = time.monotonic()
    deadline = start + args.budget
    summary = {"tool": "strata gpu-check", "started": datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds"), "bundle": {k: manifest.get(k) for k in ("made", "commit", "dirty", "versions")},
        "machine": machine_info(), "budget_s": args.budget,
        "per_rank_host_steps": [s.name for s in steps if s.nccl_hostid], "steps": []}
    print(f"gpu-check: {len(steps)} steps, budget {args.budget:.0f} s; log {log_path}", flush=True)
    with open(log_path, "w") as log:
        log.write(f"# strata gpu-check, bundle {BUNDLE}\n# {json.dumps(summary['bundle'])}\n"
                  f"# {json.dumps(summary['machine'])}\n")
        for step in steps:
            phase_end = deadline - (FIGURE_RESERVE_S if step.phase in ("preflight", "tests") else 0)
            left = phase_end - time.monotonic()
            record = {"name": step.name, "phase": step.phase, "command": step.command_text(),
                      "device": step.device}
            if step.nccl_hostid:
                record["nccl_hostid"] = step.nccl_hostid
            t0 = time.monotonic()
            log.write(f"\n===== {step.name} ({step.phase}) =====\n$ {step.command_text()}\n")
            if step.nccl_hostid:
                log.write(f"# NCCL_HOSTID per {host_group_text(step.nccl_hostid)} (per_rank_host.sh)\n")
            log.flush()
            figures, output = {}, ""
            if left < MIN_STEP_S:
                rc, status, reason = None, "skip", f"out of time: {max(left, 0):.0f} s of the budget left"
            elif not step.func and not shutil.which(step.cmd[0]):
                rc, status, reason = None, "skip", f"{step.cmd[0]} not found"
            else:
                step.timeout = min(step.timeout, left)
                if step.func:
                    rc, figures, problems = step.func(log)
                    status, reason = ("fail", "; ".join(problems)[:500]) if rc else ("pass", "")
                else:
                    rc, output = run_command(step, log)
                    status, reason = status_of(step, rc, output)
                    if step.parse and rc == 0:
                        try:
                            figures = step.parse(step, output)
                        except (ValueError, KeyError, TypeError) as e:
                            figures = {"parse_error": str(e)}
                    if step.name == "host-bench" and status == "pass" and figures.get("wrong_total") != 0:
                        status, reason = "fail", f"wrong values: {figures.get('wrong_total')}"
            record.update(rc=rc, seconds=round(time.monotonic() - t0, 1), status=status, reason=reason,
                          figures=figures, tail=output.splitlines()[-8:])
            if step.raw is not None:
                record["json"] = step.raw
            log.write(f"----- {step.name}: {status.upper()} rc={rc} {record['seconds']} s {reason}\n")
            log.flush()
            summary["steps"].append(record)
            print(f"  {status:4} {record['seconds']:6.1f}s  {step.name}" + (f"  ({reason})" if reason else ""),
                  flush=True)
            with open(json_path, "w") as f:  # rewritten after every step: a cut-off run still leaves one
                json.dump(summary, f, indent=1)

    counts = {s: sum(1 for r in summary["steps"] if r["status"] == s) for s in ("pass", "fail", "skip")}
    summary.update(seconds=round(time.monotonic() - start, 1), counts=counts)
    with open(json_path, "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    shutil.rmtree(tmp, ignore_errors=True)
    print_summary(summary, json_path)
    return 1 if counts["fail"] else 0


def print_summary(summary, json_path):
    print(f"\ngpu-check summary ({summary['seconds']} s; machine: "
          f"{'; '.join(summary['machine']['gpus']) or 'no GPU seen by nvidia-smi'})")
    for r in summary["steps"]:
        f = r["figures"]
        key = ""
        if "min_pct_of_copy" in f:
            key = f"kernels >= {f['min_pct_of_copy']:.1f}% of D2D copy; {f.get('verdict')}"
        elif "overhead_us_at_smallest" in f:
            key = f"overhead vs NCCL {f['overhead_us_at_smallest']:+.2f} us at 8 B (max {f['overhead_us_max']:+.2f})"
        elif "staged_pct_of_slower_copy" in f:
            c = f["device_copy"]
            key = (f"staged {f['staged_pct_of_slower_copy']}% of slower copy "
                   f"(D2H {c['d2h_gbps']:.1f}, H2D {c['h2d_gbps']:.1f} GB/s)")
        elif r["name"] == "figure-staged-host-reference" and f.get("algbw_gbps"):
            size, bw = max(f["algbw_gbps"].items(), key=lambda kv: int(kv[0]))
            key = f"host-memory xring alone: {bw:.2f} GB/s algbw at {int(size) >> 20} MiB"
            staged = next((s["figures"].get("algbw_gbps", {}).get(size) for s in summary["steps"]
                           if s["name"] == "figure-staged-pipeline"), None)
            if staged and bw:
                key += f"; staged at {100 * staged / bw:.0f}% of it"
        elif "nccl_version" in f:
            key = f"NCCL {f['nccl_version']} at {f['nccl']}; libcuda {f['libcuda']}"
        elif r["reason"]:
            key = r["reason"][:110]
        print(f"  {r['status']:4} {r['seconds'] if r['seconds'] is not None else 0:6.1f}s  {r['name']:42} {key}")
    c = summary["counts"]
    print(f"{c['pass']} passed, {c['fail']} failed, {c['skip']} skipped; summary {json_path}")


if __name__ == "__main__":
    sys.exit(main())
