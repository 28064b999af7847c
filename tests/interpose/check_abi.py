#!/usr/bin/env python3
"""One binary on every MPI of the standard ABI: runs abi-collectives (built
once against mpi_abi.h) with and without libstrata_mpi_abi.so (built once)
on MPICH 5 and on Intel MPI, each chosen at start by the libmpi_abi.so.1
the loader finds (LD_LIBRARY_PATH), and checks the results and the
interposer's log.

    check_abi.py LAUNCH_PY INTERPOSER PROGRAM
    check_abi.py --prefix mpich|impi     print the prefix of that MPI,
                                         installing it as below if need be
                                         (scripts/mpich_pass.sh configures
                                         -Dmpi_abi with it); exit 77 saying
                                         why on stderr when it cannot

LAUNCH_PY is scripts/launch.py, given each MPI's own mpiexec (its kind is
asked from --version), so that no launcher's flags are spelled here.

Where each MPI comes from, first found:
  STRATA_ABI_MPICH, STRATA_ABI_IMPI   the prefix of an installed one (a venv
                                      with lib/libmpi_abi.so.1, bin/mpiexec)
  $STRATA_ABI_VENVS/{mpich,impi}      a venv made by an earlier run (default
                                      STRATA_ABI_VENVS: /tmp/strata-abi-venvs,
                                      outside the repository)
  pip install into that venv          from STRATA_ABI_WHEELS (a folder of
                                      wheels, no network) when set, else from
                                      PyPI: `mpich`, and `impi-rt==2021.18.*`
                                      (2021.19 needs a libfabric wheel that
                                      PyPI lacks; 2021.18 carries its own)
An MPI that cannot be had this way skips the test (exit 77) with pip's
reason. Every pip call and every run is bounded (PIP_TIMEOUT_S, RUN_TIMEOUT_S).

Checks, under each MPI: rank 0 names that MPI's library (the same program
file, another MPI); alone, every result right and no strata line; preloaded
(STRATA_DEBUG=INFO), every result right and every rank's log shows each
collective, persistent all-reduce included, going to strata.
Exits 0 when everything holds, 1 with "check_abi: FAIL: ..." lines
otherwise, 77 when an MPI cannot be installed.
"""
import hashlib
import os
import re
import signal
import subprocess
import sys
import venv

PIP_TIMEOUT_S = 600
RUN_TIMEOUT_S = 120
NP = 2

# name: (prefix variable, pip requirement, wheel file prefix, what its
# MPI_Get_library_version says)
MPIS = {
    "mpich": ("STRATA_ABI_MPICH", "mpich", "mpich-", "MPICH Version:"),
    "impi": ("STRATA_ABI_IMPI", "impi-rt==2021.18.*", "impi_rt-2021.18", "Intel(R) MPI Library"),
}

# What every rank logs, preloaded (requests, counts and buffers fixed by
# abi_collectives.cpp).
ROUTED = [
    r"MPI_Allreduce on comm \S+ \(2 ranks\) MPI_DOUBLE MPI_SUM -> strata \(f64 sum, ",
    r"MPI_Allreduce on comm \S+ \(2 ranks\) MPI_INT MPI_MAX -> strata \(i32 max, ",
    r"MPI_Reduce on comm \S+ \(2 ranks\) MPI_DOUBLE MPI_SUM -> strata \(f64 sum, ",
    r"MPI_Bcast on comm \S+ \(2 ranks\) MPI_INT -> strata \(",
    r"MPI_Allgather on comm \S+ \(2 ranks\) MPI_INT -> strata \(",
    r"MPI_Reduce_scatter_block on comm \S+ \(2 ranks\) MPI_DOUBLE MPI_SUM -> strata \(f64 sum, ",
    r"MPI_Allreduce_init on comm \S+ \(2 ranks\) MPI_DOUBLE MPI_SUM -> strata \(f64 sum, ",
]


def skip(reason):
    print(f"check_abi: SKIP: {reason}", flush=True)
    sys.exit(77)


def installed(prefix):
    return os.path.exists(os.path.join(prefix, "lib", "libmpi_abi.so.1")) and os.path.exists(
        os.path.join(prefix, "bin", "mpiexec"))


def obtain(name):
    """The prefix of MPI `name`, installed into a venv when need be."""
    variable, requirement, wheel_prefix, _ = MPIS[name]
    if os.environ.get(variable):
        prefix = os.environ[variable]
        if not installed(prefix):
            skip(f"{variable}={prefix} has no lib/libmpi_abi.so.1 and bin/mpiexec")
        return prefix
    prefix = os.path.join(os.environ.get("STRATA_ABI_VENVS", "/tmp/strata-abi-venvs"), name)
    if installed(prefix):
        return prefix
    print(f"check_abi: installing {requirement} into {prefix}", flush=True)
    venv.create(prefix, with_pip=True, clear=True)
    pip = [os.path.join(prefix, "bin", "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    wheels = os.environ.get("STRATA_ABI_WHEELS")
    if wheels:
        files = sorted(f for f in os.listdir(wheels) if f.startswith(wheel_prefix) and f.endswith(".whl"))
        if not files:
            skip(f"STRATA_ABI_WHEELS={wheels} has no {wheel_prefix}*.whl")
        pip += ["--no-index", os.path.join(wheels, files[-1])]
    else:
        pip += ["--timeout", "20", "--retries", "1", requirement]
    try:
        done = subprocess.run(pip, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        skip(f"`pip install {requirement}` took more than {PIP_TIMEOUT_S} s")
    if done.returncode != 0 or not installed(prefix):
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        skip(f"`pip install {requirement}` into {prefix} failed: {last}")
    return prefix


def run(launch_py, prefix, env, program):
    command = [sys.executable, launch_py, "--mpiexec", os.path.join(prefix, "bin", "mpiexec"), "-n", str(NP)]
    # The ranks' libmpi_abi.so.1 is this MPI's (LD_LIBRARY_PATH comes before
    # the program's and the interposer's RUNPATH).
    ranks_env = {"LD_LIBRARY_PATH": os.path.join(prefix, "lib"), **env}
    for key, value in ranks_env.items():
        command += ["--env", f"{key}={value}"]
    command.append(program)
    print("+", " ".join(command), flush=True)
    launcher_env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(prefix, "lib"))
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env=launcher_env)
    try:
        out, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        out += f"\n(killed after {RUN_TIMEOUT_S} s)\n"
    print(out, flush=True)
    return proc.returncode, out


def print_prefix(name):
    """--prefix: the prefix alone on stdout, everything else on stderr."""
    if name not in MPIS:
        print(f"check_abi: --prefix takes one of {', '.join(MPIS)}, not {name!r}", file=sys.stderr)
        return 2
    stdout, sys.stdout = sys.stdout, sys.stderr
    prefix = obtain(name)
    sys.stdout = stdout
    print(prefix)
    return 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--prefix":
        return print_prefix(sys.argv[2])
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    launch_py, interposer, program = sys.argv[1:]
    for path in (interposer, program):
        with open(path, "rb") as f:
            print(f"check_abi: {path}: sha256 {hashlib.sha256(f.read()).hexdigest()}", flush=True)
    prefixes = {name: obtain(name) for name in MPIS}
    failures = []
    for name, prefix in prefixes.items():
        library = MPIS[name][3]
        for env in ({}, {"LD_PRELOAD": interposer, "STRATA_DEBUG": "INFO"}):
            how = f"{name} ({prefix}), {'preloaded' if env else 'alone'}"
            status, out = run(launch_py, prefix, env, program)
            if status != 0:
                failures.append(f"{how}: exit status {status}")
            found = re.search(r"^abi: library: (.*)$", out, re.M)
            if not found or library not in found.group(1):
                failures.append(f"{how}: rank 0 names {found.group(1) if found else 'no library'}, not {library}")
            reports = re.findall(r"(?<!\w)abi: rank (\d+): (\d+) of (\d+) checks passed$", out, re.M)
            if sorted(int(r) for r, _, _ in reports) != list(range(NP)) or any(p != c for _, p, c in reports):
                failures.append(f"{how}: reports {reports}, expected every check passed on ranks 0-{NP - 1}")
            if not env:
                if re.search(r"^strata ", out, re.M):
                    failures.append(f"{how}: strata logged without the interposer")
                continue
            for pattern in ROUTED:
                for rank in range(NP):
                    if not re.search(rf"^strata INFO \[[^\]]*:{rank}\] strata-mpi: {pattern}", out, re.M):
                        failures.append(f"{how}: rank {rank} did not log {pattern!r}")
    for failure in failures:
        print(f"check_abi: FAIL: {failure}", flush=True)
    if not failures:
        print(f"check_abi: the same interposer and program routed and right under {', '.join(MPIS)}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
