#!/usr/bin/env python3
"""strata-tune as a user runs it, at 2 ranks on tiny sizes (results, never timings).

    check_tune.py LAUNCH STRATA_TUNE STRATA_BENCH CASE

roundtrip: strata-tune writes a spec file (comments with the evidence, one
  spec line), prints the verification table and verdict and exits 0 or 1
  (met / missed: a timing, not asserted); then STRATA_SPEC_FILE=that file
  strata-bench runs, and its algorithm column at every size is the plan the
  spec selects there (computed here from the spec's text).
sigterm-ranks: SIGTERM to every rank (what mpirun does when it is stopped)
  once the first sizes are in the file: every rank exits 130, rank 0 says
  so in one line, and the file holds the sizes measured, marked INCOMPLETE.
sigint-mpirun: SIGINT to mpirun (Ctrl-C): mpirun kills the ranks a second
  after its SIGTERM, so the status is mpirun's own (non-zero); the file
  left holds whole sizes and is still a spec strata-bench accepts.
calibrate: strata-tune --calibrate writes a .model file with every key once
  (the three scales above 0, every value a finite number >= 0) and a
  comment line per measurement; strata-tune --model reads it back and
  prints a prediction beside each measured time.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time


def fail(message):
    print(f"check_tune: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def spec_of(text):
    """The spec as STRATA_SPEC_FILE reads it: non-comment lines joined."""
    return "".join(l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#"))


def parse_limit(text):
    m = re.fullmatch(r"(\d+)([kKmMgG]?)", text)
    if not m:
        fail(f"limit {text!r} is not a byte count")
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def select(spec, size):
    """The plan the spec gives a message of `size` bytes (first limit >= size)."""
    parts = spec.split(":")
    for i in range(0, len(parts) - 1, 2):
        if size <= parse_limit(parts[i + 1]):
            return parts[i]
    return parts[-1]


def check_file(path, expect_incomplete):
    if not os.path.exists(path):
        fail(f"{path} was not written")
    text = open(path).read()
    for key in ("# machine:", "# topology: 2 ranks", "# date:", "# strata:", "# measured:"):
        if key not in text:
            fail(f"{path} lacks the evidence line {key!r}:\n{text}")
    spec_lines = [l for l in text.splitlines() if l.strip() and not l.startswith("#")]
    if len(spec_lines) != 1:
        fail(f"{path}: expected one spec line, got {spec_lines}")
    if expect_incomplete and "# INCOMPLETE:" not in text:
        fail(f"{path}: an interrupted run's file must say INCOMPLETE:\n{text}")
    if not expect_incomplete and "INCOMPLETE" in text:
        fail(f"{path}: a finished run's file says INCOMPLETE:\n{text}")
    if not re.search(r"^#\s+\d+ B: \S+ [\d.]+ us", text, re.M):
        fail(f"{path}: no per-size times behind the choice:\n{text}")
    return spec_of(text)


def bench_runs(launch, bench, spec_path, spec, sizes_flags, workdir):
    env = dict(os.environ, STRATA_SPEC_FILE=spec_path)
    env.pop("STRATA_SPEC", None)
    out = os.path.join(workdir, "bench.json")
    p = subprocess.run([launch, "-n", "2", bench, *sizes_flags, "-n", "1", "-w", "0", "-J", out],
                       env=env, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail(f"strata-bench with STRATA_SPEC_FILE exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    doc = json.load(open(out))
    if not doc["rows"]:
        fail("strata-bench ran no size")
    for row in doc["rows"]:
        want = select(spec, row["bytes"])
        if row["algorithm"] != want:
            fail(f"at {row['bytes']} B strata-bench ran {row['algorithm']}, the tuned spec {spec!r} says {want}")
        if row["wrong"]:
            fail(f"at {row['bytes']} B {row['wrong']} wrong values")
    print(f"check_tune: strata-bench ran the tuned spec {spec!r} at {len(doc['rows'])} sizes")


MODEL_KEYS = [f"{link}.{part}" for link in ("shm", "intra", "inter")
              for part in ("alpha_us", "beta_ns_per_byte", "beta_memory_ns_per_byte")] + [
    "gamma_ns_per_byte", "gamma_memory_ns_per_byte", "cache_bytes", "mpi_scale", "mpi_scale_memory",
    "shm_direct_scale"]
MODEL_NOTES = ("# gamma: rank 0 alone", "# intra (MPI inside a node): ranks 0,1 alone", "# cache_bytes: ",
               "# mpi (the MPI library's all-reduce): ranks 0,1 alone", "# shm (pscpu inside a node): ranks 0,1 alone",
               "# shm_direct_scale: ranks 0,1 alone: pscpu 256 KiB")


def check_model_file(path):
    if not os.path.exists(path):
        fail(f"{path} was not written")
    text = open(path).read()
    for note in MODEL_NOTES:
        if note not in text:
            fail(f"{path} lacks the note {note!r}:\n{text}")
    values = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        key, _, value = (part.strip() for part in line.partition("="))
        if key in values:
            fail(f"{path}: {key} twice")
        try:
            values[key] = float(value)
        except ValueError:
            fail(f"{path}: {key} = {value!r} is not a number")
    if sorted(values) != sorted(MODEL_KEYS):
        fail(f"{path}: keys {sorted(values)}, expected {sorted(MODEL_KEYS)}")
    for key, value in values.items():
        if not (value >= 0 and value != float("inf")) or (key.endswith("scale") or key.endswith("scale_memory")) and value <= 0:
            fail(f"{path}: {key} = {value}")


def rank_pids(marker):
    """The strata-tune processes (not mpirun) whose command line holds `marker`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"strata-tune") and marker.encode() in argv:
            pids.append(int(entry))
    return pids


def start_long_run(launch, tune, spec_path):
    # Many sizes (factor 2 up to 64 MiB): the run is still going when stopped.
    cmd = [launch, "-n", "2", tune, "-b", "8", "-e", "64M", "-f", "2", "-n", "3", "-w", "1",
           "--no-verify", "--no-progress", "-o", spec_path]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while not os.path.exists(spec_path):  # the first sizes are written
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            fail(f"no spec file appeared (exit {proc.poll()}): {proc.communicate()}")
        time.sleep(0.05)
    return proc


def main():
    launch, tune, bench, case = sys.argv[1:5]
    with tempfile.TemporaryDirectory() as workdir:
        spec_path = os.path.join(workdir, "out.spec")
        if case == "roundtrip":
            p = subprocess.run([launch, "-n", "2", tune, "-b", "8", "-e", "4k", "-f", "4", "-n", "3", "-w", "1",
                                "--no-progress", "-o", spec_path], capture_output=True, text=True, timeout=60)
            if p.returncode not in (0, 1):
                fail(f"strata-tune exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
            # One verdict, or two when the first missed and a re-check
            # (docs/TUNING.md) timed sizes again: the last one decides.
            verdict = [l for l in p.stdout.splitlines() if l.startswith("verify: ")]
            rechecked = any(l.startswith("# re-check: ") for l in p.stdout.splitlines())
            if len(verdict) != 1 + rechecked or ("target met" in verdict[-1]) != (p.returncode == 0):
                fail(f"expected {1 + rechecked} verdict line(s), the last agreeing with exit {p.returncode}:\n"
                     f"{p.stdout}")
            if rechecked and "target missed" not in verdict[0]:
                fail(f"a re-check after a verification that met its target:\n{p.stdout}")
            if not re.search(r"^\s+4 KiB\s+\S+\s+\S+\s+[\d.]+\s+[\d.]+\s+[\d.]+", p.stdout, re.M):
                fail(f"no verification row at 4 KiB:\n{p.stdout}")
            spec = check_file(spec_path, expect_incomplete=False)
            bench_runs(launch, bench, spec_path, spec, ["-b", "8", "-e", "16k", "-f", "2"], workdir)
        elif case == "sigterm-ranks":
            proc = start_long_run(launch, tune, spec_path)
            pids = rank_pids(spec_path)
            if len(pids) != 2:
                fail(f"expected 2 strata-tune ranks, found {pids}")
            for pid in pids:
                os.kill(pid, signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
            if proc.returncode != 130:
                fail(f"mpirun exited {proc.returncode}, expected the ranks' 130:\n{err}")
            lines = [l for l in err.splitlines() if l.startswith("strata-tune: interrupted (SIGTERM)")]
            if len(lines) != 1 or "holds the sizes measured" not in lines[0]:
                fail(f"expected one 'interrupted (SIGTERM)' line from rank 0:\n{err}")
            text = open(spec_path).read()
            if "interrupted after" not in text:
                fail(f"the file does not say where the run was interrupted:\n{text}")
            check_file(spec_path, expect_incomplete=True)
        elif case == "sigint-mpirun":
            proc = start_long_run(launch, tune, spec_path)
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=60)
            if proc.returncode == 0:
                fail("mpirun exited 0 after SIGINT")
            spec = check_file(spec_path, expect_incomplete=True)
            bench_runs(launch, bench, spec_path, spec, ["-b", "8", "-e", "64", "-f", "2"], workdir)
        elif case == "calibrate":
            model_path = os.path.join(workdir, "np2.model")
            p = subprocess.run([launch, "-n", "2", tune, "--calibrate", "--model-output", model_path],
                               capture_output=True, text=True, timeout=120)
            if p.returncode != 0:
                fail(f"strata-tune --calibrate exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
            check_model_file(model_path)
            p = subprocess.run([launch, "-n", "2", tune, "--model", model_path, "-b", "64k", "-e", "256k", "-f", "4",
                                "-n", "3", "-w", "1", "--no-progress", "--no-verify"],
                               capture_output=True, text=True, timeout=60)
            if p.returncode != 0:
                fail(f"strata-tune --model exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
            rows = re.findall(r"^\s+256 KiB\s+pscpu\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[-+]\d+%", p.stdout, re.M)
            if len(rows) != 1:
                fail(f"no pscpu row with a prediction at 256 KiB:\n{p.stdout}")
        else:
            fail(f"unknown case {case}")
    print(f"check_tune: {case}: ok")


if __name__ == "__main__":
    main()
