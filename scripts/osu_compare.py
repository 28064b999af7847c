#!/usr/bin/env python3
"""Side by side: OSU micro-benchmarks, plain MPI against the strata interposer.

  scripts/osu_compare.py build SRC DIR
      Compiles osu_allreduce, osu_reduce, osu_bcast and osu_allgather
      (c/mpi/collective/blocking/) and osu_iallreduce, osu_ibcast and
      osu_iallgather (c/mpi/collective/non_blocking/) from an
      unmodified OSU 7.4 tree SRC, with c/util/, using $MPICC (default mpicc;
      MPICH: MPICC=mpicc.mpich), into DIR. OSU
      is never part of this repository: fetch it yourself (public mirror
      sherrywong1220/osu-micro-benchmarks-7.4, commit bed60f5).

  scripts/osu_compare.py run DIR [options]
      Runs each benchmark plain and with LD_PRELOAD=libstrata_mpi.so,
      alternating, --runs times each, and prints per message size the median
      latency of each and the speedup (plain / preloaded: above 1 strata is
      faster). With --validate every run adds OSU's -c and fails unless every
      size says Pass. Preloaded runs get STRATA_DEBUG=INFO, and where strata
      measured how near a node's two ranks sit and what a cross-memory read
      costs there (docs/ALGORITHMS.md), the verdicts of each preloaded run
      follow the table: on a VM the placement is a draw from one run to the
      next, and both decide where the direct path starts.

  scripts/osu_compare.py run DIR --bench iallreduce [--progress-thread]
      osu_iallreduce (osu_ibcast, osu_iallgather alike): per size, for each
      side, the median of OSU's "Pure Comm." (MPI_Iallreduce then MPI_Wait,
      nothing between: the latency) and of its "Overlap(%)"
      (MPI_Iallreduce, a dummy compute as long as
      that pure communication time, MPI_Wait: how much of the
      communication the compute hid). --progress-thread adds a third side,
      the interposer with STRATA_PROGRESS_THREAD=1, taking part in the
      alternation.

Options of `run`:
  --np N              ranks (default 2)
  --bind none|core    bind each rank to a core (default: core when the
                      ranks fit this machine's CPUs, as Open MPI's mpirun
                      binds by default; none when they do not)
  --mpirun-args ARGS  extra launcher arguments, added after the launcher
                      layer's own (STRATA_MPIEXEC_ARGS)
Ranks start through the launcher layer (scripts/launch.py): mpirun on PATH,
or STRATA_MPIEXEC (e.g. MPICH's mpiexec); the variables reach the ranks in
that launcher's words, and more ranks than cores are always allowed.
  --runs N            alternating runs of each side (default 3)
  --bench LIST        comma-separated: allreduce,reduce,bcast,allgather,
                      iallreduce,ibcast,iallgather
                      (default allreduce,reduce,bcast)
  --max-size BYTES    largest message (default 4194304)
  --datatype float|char
                      all but bcast and ibcast: OSU's -T mpi_float
                      (default) or OSU's own default, MPI_CHAR (no -T)
  --preload PATH      the interposer (default build/lib/interpose/libstrata_mpi.so)
  --validate          add OSU's -c to every run and require Pass
  --progress-thread   iallreduce: also run preloaded with STRATA_PROGRESS_THREAD=1
  --markdown          print the tables as Markdown

The float type (-T mpi_float) is used for every benchmark but bcast and
ibcast unless --datatype char: OSU's default MPI_CHAR sums overflow its own
validation. The interposer reduces MPI_CHAR under Open MPI as Open MPI
does, as a signed 8-bit integer, so --datatype char compares OSU's
defaults. bcast and ibcast move bytes.
Exit status: 0, or 1 when a run failed or a validation did not pass.
"""
import argparse
import os
import pathlib
import re
import shlex
import statistics
import subprocess
import sys

LAUNCH = pathlib.Path(__file__).resolve().parent / "launch.py"  # starts ranks under any launcher

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCHMARKS = ("allreduce", "reduce", "bcast", "allgather", "iallreduce", "ibcast", "iallgather")
DEFAULT_BENCH = "allreduce,reduce,bcast"
NON_BLOCKING = ("iallreduce", "ibcast", "iallgather")  # c/mpi/collective/non_blocking/, with an overlap column
MOVES_BYTES = ("bcast", "ibcast")  # no datatype option: OSU times bytes
UTIL_SOURCES = ("osu_util.c", "osu_util_mpi.c", "osu_util_validation.c", "osu_util_graph.c", "osu_util_papi.c")


def build(src: pathlib.Path, into: pathlib.Path) -> int:
    collective = src / "c" / "mpi" / "collective"
    util = src / "c" / "util"
    if not (collective / "blocking" / "osu_allreduce.c").is_file() or not (util / "osu_util.c").is_file():
        print(f"osu_compare: {src} is not an OSU 7.4 source tree (no c/mpi/collective/blocking/osu_allreduce.c)",
              file=sys.stderr)
        return 1
    into.mkdir(parents=True, exist_ok=True)
    for name in BENCHMARKS:
        kind = "non_blocking" if name in NON_BLOCKING else "blocking"
        command = [os.environ.get("MPICC", "mpicc"), "-O2", "-I", str(util), "-DFIELD_WIDTH=18", "-DFLOAT_PRECISION=2",
                   str(collective / kind / f"osu_{name}.c"), *[str(util / u) for u in UTIL_SOURCES], "-lm",
                   "-o", str(into / f"osu_{name}")]
        done = subprocess.run(command, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            print(f"osu_compare: building osu_{name} failed: {shlex.join(command)}", file=sys.stderr)
            return 1
        print(f"built {into / f'osu_{name}'}")
    return 0


def parse(output: str, validate: bool) -> dict[int, list[float]]:
    """Size -> the numbers of OSU's row: the average latency (us), and for
    osu_iallreduce then compute, pure communication (us) and overlap (%);
    raises on a failed validation (OSU's last column)."""
    rows = {}
    for line in output.splitlines():
        fields = line.split()
        if len(fields) < 2 or not fields[0].isdigit():
            continue
        if validate and fields[-1] != "Pass":
            raise RuntimeError(f"validation did not pass: {line.strip()}")
        numbers = []
        for field in fields[1:]:
            try:
                numbers.append(float(field))
            except ValueError:
                break
        rows[int(fields[0])] = numbers
    if not rows:
        raise RuntimeError("no latency table in the output")
    return rows


# strata's INFO lines on where a node's two ranks sit (host/shm_placement.cpp)
# and on what a cross-memory read costs there (host/shm_direct_sizes.cpp),
# each printed once per process by each rank.
PLACEMENT = re.compile(r"local ranks sit (near|far) ")
READS = re.compile(r"cross-memory reads are (cheap|dear) here")


def placements(output: str) -> list[str]:
    """The verdicts strata logged in one run, "far" or "far, reads cheap"
    (rank 0's lines only: every rank logs the same verdicts)."""
    rank0 = [line for line in output.splitlines() if "[" in line and ":0] " in line]
    where = [m.group(1) for line in rank0 for m in [PLACEMENT.search(line)] if m]
    reads = [m.group(1) for line in rank0 for m in [READS.search(line)] if m]
    if not where:
        return []
    return [where[0] + (f", reads {reads[0]}" if reads else "")]


def run_once(binary: pathlib.Path, args: argparse.Namespace, preload: str | None,
             progress_thread: bool = False, verdicts: list | None = None) -> dict[int, list[float]]:
    name = binary.name.removeprefix("osu_")
    osu_args = ["-m", f"1:{args.max_size}"]
    if name not in MOVES_BYTES and args.datatype == "float":
        osu_args += ["-T", "mpi_float"]
    if args.validate:
        osu_args += ["-c"]
    variables = []
    if preload:
        variables.append(f"LD_PRELOAD={preload}")
    if progress_thread:
        variables.append("STRATA_PROGRESS_THREAD=1")
    if preload:  # for the placement verdict; the log lines come once, before the timed calls
        variables.append("STRATA_DEBUG=INFO")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    command = [sys.executable, str(LAUNCH), "--mpiexec", "mpirun", "-n", str(args.np), "--bind", bind_of(args)]
    for variable in variables:
        command += ["--env", variable]
    env["STRATA_MPIEXEC_ARGS"] = args.mpirun_args
    command += [str(binary), *osu_args]
    env.pop("LD_PRELOAD", None)
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"`{shlex.join(command)}` exited with {done.returncode}:\n{done.stdout[-2000:]}")
    if verdicts is not None:
        verdicts.extend(placements(done.stdout))
    return parse(done.stdout, args.validate)


def size_label(size: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def print_table(header: tuple, rows: list, markdown: bool, widths: tuple) -> None:
    """One table: Markdown, or columns right-aligned to `widths`."""
    if markdown:
        print(f"\n| {' | '.join(header)} |\n|{'---|' * len(header)}")
        for row in rows:
            print(f"| {' | '.join(row)} |")
        return
    print()
    for row in (header, *rows):
        print(" ".join(f"{v:>{w}}" for v, w in zip(row, widths)))


def bind_of(args: argparse.Namespace) -> str:
    """--bind as given, else core when the ranks fit the CPUs (Open MPI's default binding)."""
    return args.bind or ("core" if args.np <= (os.cpu_count() or 1) else "none")


def run(args: argparse.Namespace) -> int:
    directory = pathlib.Path(args.dir)
    preload = str(pathlib.Path(args.preload).resolve())
    if not pathlib.Path(preload).is_file():
        print(f"osu_compare: no interposer at {preload}: build strata first (scripts/test.sh or meson compile)",
              file=sys.stderr)
        return 1
    status = 0
    launcher = (f"scripts/launch.py -n {args.np} --bind {bind_of(args)} with "
                f"{os.environ.get('STRATA_MPIEXEC') or 'mpirun'}")
    print(f"# {launcher} {args.mpirun_args}; median of {args.runs} alternating runs; "
          f"speedup = plain / strata{'; validated (-c)' if args.validate else ''}")
    for name in args.bench.split(","):
        binary = directory / f"osu_{name}"
        if not binary.is_file():
            print(f"osu_compare: {binary} not found (scripts/osu_compare.py build SRC {directory})", file=sys.stderr)
            return 1
        # The sides, run in turn each round: plain, preloaded, and for the
        # non-blocking benchmark preloaded with strata's progress thread.
        sides = [("plain", None, False), ("strata", preload, False)]
        if name in NON_BLOCKING and args.progress_thread:
            sides.append(("strata+thread", preload, True))
        results = {label: [] for label, _, _ in sides}
        verdicts = []
        try:
            for _ in range(args.runs):
                for label, library, thread in sides:
                    results[label].append(run_once(binary, args, library, thread, verdicts))
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"osu_{name}: {e}", file=sys.stderr)
            status = 1
            continue
        everything = [r for runs in results.values() for r in runs]
        sizes = sorted(set.intersection(*(set(r) for r in everything)))

        def median(label, size, column):
            return statistics.median(r[size][column] for r in results[label])

        rows = []
        if name in NON_BLOCKING:
            labels = [label for label, _, _ in sides]
            for size in sizes:
                rows.append((size_label(size), *(f"{median(l, size, 2):.2f}" for l in labels),
                             *(f"{median(l, size, 3):.1f}" for l in labels)))
            header = (f"osu_{name}", *(f"{l} comm (us)" for l in labels), *(f"{l} overlap %" for l in labels))
            widths = (14, *(max(12, len(h)) for h in header[1:]))
        else:
            for size in sizes:
                p, s = median("plain", size, 0), median("strata", size, 0)
                rows.append((size_label(size), f"{p:.2f}", f"{s:.2f}", f"{p / s:.2f}" if s > 0 else "-"))
            header = (f"osu_{name}", "plain (us)", "strata (us)", "speedup")
            widths = (14, 12, 12, 8)
        print_table(header, rows, args.markdown, widths)
        if verdicts:
            print(f"\nstrata's verdicts, preloaded runs in order: {'; '.join(verdicts)}")
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="compile the seven benchmarks from an OSU 7.4 tree")
    b.add_argument("src")
    b.add_argument("dir")
    r = sub.add_parser("run", help="plain against preloaded, side by side")
    r.add_argument("dir")
    r.add_argument("--np", type=int, default=2)
    r.add_argument("--mpirun-args", default="")
    r.add_argument("--bind", choices=("none", "core"), default=None)
    r.add_argument("--runs", type=int, default=3)
    r.add_argument("--bench", default=DEFAULT_BENCH)
    r.add_argument("--max-size", type=int, default=4 << 20)
    r.add_argument("--datatype", choices=("float", "char"), default="float")
    r.add_argument("--preload", default=str(ROOT / "build" / "lib" / "interpose" / "libstrata_mpi.so"))
    r.add_argument("--validate", action="store_true")
    r.add_argument("--progress-thread", action="store_true")
    r.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if args.command == "build":
        return build(pathlib.Path(args.src), pathlib.Path(args.dir))
    for name in args.bench.split(","):
        if name not in BENCHMARKS:
            parser.error(f"--bench: '{name}' is not one of {', '.join(BENCHMARKS)}")
    if args.np < 1 or args.runs < 1:
        parser.error("--np and --runs must be at least 1")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
