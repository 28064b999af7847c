#!/usr/bin/env python3
"""The launcher layer's words (scripts/launch.py --dry-run) for each kind of
launcher: binding (cores may be outnumbered), placement over hosts, a
variable to the ranks, and the usage errors.

    check_launch.py LAUNCH_PY

Prints one line per check; exits 1 if any failed."""
import os
import subprocess
import sys

FAILED = []


def dry(launch, *args):
    # The launcher named here, not one the environment picks.
    env = {k: v for k, v in os.environ.items() if k not in ("STRATA_MPIEXEC", "STRATA_MPIEXEC_ARGS")}
    run = subprocess.run([sys.executable, launch, "--mpiexec", "mpx", "--dry-run", *args, "prog"],
                         capture_output=True, text=True, env=env)
    return run.returncode, run.stdout.strip(), run.stderr


def expect(what, got, want):
    ok = got == want
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {got!r}" + ("" if ok else f", want {want!r}"))
    if not ok:
        FAILED.append(what)


def main():
    launch = sys.argv[1]
    words = {
        "openmpi": "mpx -n 4 --host a:2,b:2 --map-by ppr:2:node --oversubscribe "
                   "--bind-to core:overload-allowed -x X=1 prog",
        "hydra": "mpx -n 4 -hosts a,b -ppn 2 -bind-to core -genv X 1 prog",
        "intel": "mpx -n 4 -hosts a,b -ppn 2 -genv I_MPI_PIN 1 -genv I_MPI_PIN_DOMAIN core -genv X 1 prog",
        "srun": "mpx -n 4 --nodelist=a,b --ntasks-per-node=2 --overcommit --cpu-bind=cores --export=ALL,X=1 prog",
    }
    for kind, want in words.items():
        rc, out, _ = dry(launch, "--kind", kind, "-n", "4", "--hosts", "a,b", "--per-node", "2", "--bind", "core",
                         "--env", "X=1")
        expect(f"{kind}: 2 hosts x 2 ranks, bound to cores, X=1", (rc, out), (0, want))
    rc, out, _ = dry(launch, "--kind", "openmpi", "-n", "8", "--bind", "none")
    expect("openmpi: 8 ranks unbound", (rc, out), (0, "mpx -n 8 --oversubscribe --bind-to none prog"))
    rc, _, err = dry(launch, "--kind", "openmpi", "-n", "3", "--hosts", "a,b", "--per-node", "2")
    expect("-n not per-node x hosts is refused", (rc, "is not --per-node 2 x 2 host(s)" in err), (2, True))
    rc, _, err = dry(launch, "--kind", "openmpi", "-n", "2", "--hosts", "a,b")
    expect("--hosts without --per-node is refused", (rc, "go together" in err), (2, True))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
