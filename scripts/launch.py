#!/usr/bin/env python3
"""Start an MPI program on N ranks with whichever launcher the build uses.

  launch.py [--mpiexec PATH] [--kind KIND] -n N [--bind none|core]
            [--hosts H1,H2,... --per-node K]
            [--env NAME[=VALUE]]... [--dry-run] [--] PROGRAM [ARGS...]
  launch.py --identify PATH     prints PATH's kind (meson.build asks this)

Every test and script that starts ranks goes through here (in a build, as
BUILD/strata-launch, which meson.build writes with the launcher it found),
so that no caller spells one launcher's flags. The launchers differ in:

              more ranks than cores   binding none         one variable to the ranks
  openmpi     --oversubscribe         --bind-to none       -x NAME=VALUE
  hydra       (always allowed)        -bind-to none        -genv NAME VALUE
  intel       (always allowed)        -genv I_MPI_PIN 0    -genv NAME VALUE
  srun        --overcommit            --cpu-bind=none      --export=ALL,NAME=VALUE

(openmpi: Open MPI's mpirun/mpiexec, 4.1 and 5; hydra: MPICH's mpiexec, and
MVAPICH's; intel: Intel MPI's mpiexec, hydra too, but its library pins each
rank itself unless I_MPI_PIN=0.) --bind core binds each rank to a core
(openmpi --bind-to core:overload-allowed, hydra -bind-to core, intel I_MPI_PIN_DOMAIN=core,
srun --cpu-bind=cores). Ranks may always outnumber cores: tests run up to 8
on 2. Open MPI's mpirun as root also needs OMPI_ALLOW_RUN_AS_ROOT=1 and
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 in the environment (the tests set them).

--hosts H1,H2,... --per-node K places K ranks on each of those machines,
in that order (openmpi --host H1:K,... --map-by ppr:K:node; hydra and
intel -hosts H1,... -ppn K; srun --nodelist=H1,... --ntasks-per-node=K);
-n must then be K times the host count.

--env NAME=VALUE gives the ranks a variable the launcher itself must not
have (LD_PRELOAD of the interposer: preloaded into mpirun it would run
there too); --env NAME passes the caller's value on. Variables set on the
launcher are inherited by the ranks it starts on this machine under every
kind; --env is needed for those only, or for ranks on other machines.

The launcher: STRATA_MPIEXEC (a path or a name on PATH; its kind is asked
with --version) if set, else --mpiexec and --kind. STRATA_MPIEXEC_ARGS adds
words after the launcher's own flags (e.g. "--mpi=pmix" for srun).
The launcher replaces this process (exec), so signals sent to it reach the
launcher itself. Exit 2 with a message for bad usage or an unknown launcher.
"""
import os
import shlex
import shutil
import subprocess
import sys

KINDS = ("openmpi", "hydra", "intel", "srun")


def identify(mpiexec):
    """The kind of launcher mpiexec is, from its --version, or None."""
    try:
        run = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = run.stdout + run.stderr
    if "Open MPI" in text or "OpenRTE" in text:
        return "openmpi"
    if "Intel(R) MPI" in text:
        return "intel"
    if "HYDRA" in text:
        return "hydra"
    if text.startswith("slurm"):
        return "srun"
    return None


def placement(kind, hosts, per_node):
    """The launcher's words for `per_node` ranks on each of `hosts` (none: [] )."""
    if not hosts:
        return []
    if kind == "openmpi":
        return ["--host", ",".join(f"{h}:{per_node}" for h in hosts), "--map-by", f"ppr:{per_node}:node"]
    if kind in ("hydra", "intel"):
        return ["-hosts", ",".join(hosts), "-ppn", str(per_node)]
    return ["--nodelist=" + ",".join(hosts), f"--ntasks-per-node={per_node}"]


def command(kind, mpiexec, ranks, bind, env, extra, program, hosts=(), per_node=1):
    """The launcher's command line for these ranks, binding, placement and variables."""
    cmd = [mpiexec, "-n", str(ranks)] + placement(kind, hosts, per_node)
    if kind == "openmpi":
        # overload-allowed: Open MPI refuses to bind more ranks than cores to cores otherwise.
        cmd += ["--oversubscribe", "--bind-to", "core:overload-allowed" if bind == "core" else bind]
        for name, value in env:
            cmd += ["-x", f"{name}={value}"]
    elif kind in ("hydra", "intel"):
        if kind == "hydra":
            cmd += ["-bind-to", bind]
        elif bind == "none":
            cmd += ["-genv", "I_MPI_PIN", "0"]
        else:
            cmd += ["-genv", "I_MPI_PIN", "1", "-genv", "I_MPI_PIN_DOMAIN", "core"]
        for name, value in env:
            cmd += ["-genv", name, value]
    else:  # srun
        cmd += ["--overcommit", "--cpu-bind=" + ("none" if bind == "none" else "cores")]
        if env:
            if any("," in value for _, value in env):
                usage("srun --export cannot pass a value holding a comma")
            cmd.append("--export=ALL," + ",".join(f"{name}={value}" for name, value in env))
    return cmd + extra + program


def usage(message):
    print(f"launch.py: {message}", file=sys.stderr)
    print("usage: launch.py [--mpiexec PATH] [--kind KIND] -n N [--bind none|core] "
          "[--hosts H1,H2,... --per-node K] [--env NAME[=VALUE]]... [--dry-run] [--] PROGRAM [ARGS...]",
          file=sys.stderr)
    sys.exit(2)


def main(argv):
    if len(argv) == 2 and argv[0] == "--identify":
        kind = identify(argv[1])
        if kind is None:
            print(f"launch.py: {argv[1]} --version names none of Open MPI, hydra, Intel MPI and Slurm",
                  file=sys.stderr)
            return 1
        print(kind)
        return 0
    mpiexec, kind, ranks, bind, env, dry_run = None, None, None, "none", [], False
    hosts, per_node = [], None
    i = 0
    while i < len(argv):
        arg = argv[i]
        value = argv[i + 1] if i + 1 < len(argv) else None
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-"):
            break
        if arg == "--dry-run":
            dry_run = True
            i += 1
            continue
        if value is None:
            usage(f"{arg} needs a value")
        if arg == "--mpiexec":
            mpiexec = value
        elif arg == "--kind":
            kind = value
        elif arg in ("-n", "-np"):
            ranks = value
        elif arg == "--bind":
            bind = value
        elif arg == "--hosts":
            hosts = [h for h in value.split(",") if h]
        elif arg == "--per-node":
            per_node = value
        elif arg == "--env":
            name, has_value, given = value.partition("=")
            if not has_value:
                if name not in os.environ:
                    usage(f"--env {name}: {name} is not set here (give --env {name}=VALUE)")
                given = os.environ[name]
            env.append((name, given))
        else:
            usage(f"unknown option {arg}")
        i += 2
    program = argv[i:]
    if not program:
        usage("no program to start")
    if ranks is None or not ranks.isdigit() or int(ranks) < 1:
        usage(f"-n wants a rank count of at least 1, got {ranks!r}")
    if bind not in ("none", "core"):
        usage(f"--bind wants none or core, got {bind!r}")
    if bool(hosts) != (per_node is not None):
        usage("--hosts and --per-node go together")
    if hosts:
        if not per_node.isdigit() or int(per_node) < 1:
            usage(f"--per-node wants a rank count of at least 1, got {per_node!r}")
        if int(ranks) != int(per_node) * len(hosts):
            usage(f"-n {ranks} is not --per-node {per_node} x {len(hosts)} host(s)")
    if os.environ.get("STRATA_MPIEXEC"):
        mpiexec = shutil.which(os.environ["STRATA_MPIEXEC"]) or os.environ["STRATA_MPIEXEC"]
        kind = identify(mpiexec)
        if kind is None:
            usage(f"STRATA_MPIEXEC={os.environ['STRATA_MPIEXEC']}: not a launcher this knows "
                  f"({', '.join(KINDS)}: its --version names none of them)")
    if mpiexec is None:
        usage("no launcher: give --mpiexec and --kind (BUILD/strata-launch does) or set STRATA_MPIEXEC")
    if kind is None:
        kind = identify(mpiexec)
    if kind not in KINDS:
        usage(f"launcher kind {kind!r} of {mpiexec}: expected one of {', '.join(KINDS)}")
    extra = shlex.split(os.environ.get("STRATA_MPIEXEC_ARGS", ""))
    cmd = command(kind, mpiexec, int(ranks), bind, env, extra, program, hosts, int(per_node or 1))
    if dry_run:
        print(shlex.join(cmd))
        return 0
    sys.stdout.flush()
    try:
        os.execvp(cmd[0], cmd)
    except OSError as e:
        print(f"launch.py: cannot start {cmd[0]}: {e}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
