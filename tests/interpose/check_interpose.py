#!/usr/bin/env python3
"""Runs a program under mpirun with libstrata_mpi.so preloaded and checks
its results and the interposer's log (STRATA_DEBUG=INFO).

    check_interpose.py LAUNCH PRELOAD NP MODE [ARGS...]

LAUNCH is the build's strata-launch (scripts/launch.py): PRELOAD reaches the
ranks through its --env, never the launcher itself. STRATA_TEST_MPI names
the build's MPI; STRATA_TEST_MPI4PY_WHY, when set, says why mpi4py cannot
run on it (the mpi4py modes then skip, exit 77).

MODE (the programs are not ours: mpi4py scripts calling comm.Allreduce and
friends, or strata's own apps, which do not know about the interposer):
  mpi4py            collectives.py: every result right, and the log shows
                    which calls went to strata and which to MPI
  spec-mpi          the same with STRATA_SPEC=mpi: strata's `mpi` algorithm
                    calls MPI_Allreduce itself, which must reach MPI
  off               STRATA_INTERPOSE=off: same results, nothing routed
  blockwise         blockwise.py (Reduce_scatter_block, Allgather), run
                    without the interposer (the script's references agree
                    with MPI's) and with it: every result right, and the log
                    shows which calls went to strata and which to MPI
  multiple          mpi4py's default MPI_THREAD_MULTIPLE: nothing routed
  requests PROGRAM [KEY=VALUE ...]
                    requests.cpp (non-blocking and persistent collectives,
                    the MPI_Wait / MPI_Test family on arrays mixing them
                    with point-to-point requests), run without the
                    interposer (its references agree with MPI's), then with
                    it, without and with STRATA_PROGRESS_THREAD=1 (and the
                    KEY=VALUE variables): every result right, and the log
                    shows which calls went to strata and which to MPI
  errors-return     errors.py: a timeout comes back as MPI_ERR_OTHER
  errors-fatal      errors.py under MPI_ERRORS_ARE_FATAL: the job aborts
  errors-mismatch   errors.py: different counts on the ranks come back as
                    MPI_ERR_TRUNCATE on every rank; the communicator works on;
                    the flight recorder (STRATA_FLIGHT_DIR) recorded the
                    routed calls, and strata-flight names the disagreement
  bench BENCH COLLECTIVE [bench args]
                    strata-bench --baseline mpi: its MPI_Allreduce /
                    MPI_Reduce / MPI_Bcast column runs through strata
  hello HELLO       the README example (uses strata directly): strata's own
                    MPI calls must not be routed back into strata
  linked PROGRAM    a program linked with -lstrata_mpi before libmpi, run
                    without LD_PRELOAD: its MPI_Allreduce is routed too
  fortran PROGRAM   fortran_collectives.f90 (the five collectives through
                    mpif.h, `use mpi` and `use mpi_f08`, in place and not),
                    run without the interposer (its references agree with
                    MPI's; not where MPI_IN_PLACE_REDUCE_CRASHES), then with
                    it: every result right, and the log
                    shows every call of each binding's communicator going
                    to strata with its Fortran datatype
  first-started PROGRAM
                    first_started.cpp (each communicator's first collective
                    a non-blocking or persistent one, beside an
                    MPI_Comm_idup that ranks start before or after it, a
                    datatype freed before it completes; preloaded, the
                    communicator too), run without
                    the interposer, with it, and with it where strata cannot
                    start on any communicator (STRATA_SPEC naming no
                    algorithm: the calls go to MPI in the completion call),
                    each bounded to 60 s: every result right, and the log
                    shows each kind of call going to strata, or to MPI with
                    the reason
  quiet PROGRAM     many_comms.cpp (world, a dup, splits, MPI_COMM_SELF,
                    one-rank splits, a dup made three times): at the default
                    log level, without binding, strata prints at most one
                    line in the whole job; at INFO every member names a
                    communicator alike, and a communicator made again is
                    not logged again
Exits 0 when everything holds, 1 with "check_interpose: FAIL: ..." lines
otherwise, 77 when /usr/bin/python3 lacks mpi4py or numpy.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# Debian's mpi4py and numpy belong to Debian's Python, not to whatever
# python3 comes first on PATH.
PYTHON = "/usr/bin/python3"
TIMEOUT_S = 150


def fail(messages):
    for m in messages:
        print(f"check_interpose: FAIL: {m}", file=sys.stderr)
    sys.exit(1)


def run(mpirun, np, env, argv, timeout=TIMEOUT_S):
    command = [mpirun, "-n", str(np)]
    for key, value in env.items():
        command += ["--env", f"{key}={value}"]  # to the ranks only, not to the launcher itself
    command += argv
    print("+", " ".join(command), flush=True)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        print(out)
        fail([f"no result after {timeout} s (hung?)"])
    print(out)
    return proc.returncode, out


def info_lines(out, rank):
    prefix = re.compile(rf"^strata INFO \[[^\]]*:{rank}\] strata-mpi: (.*)$", re.M)
    return prefix.findall(out)


class Checks:
    def __init__(self, out, np):
        self.out, self.np, self.errors = out, np, []

    def require(self, condition, message):
        if not condition:
            self.errors.append(message)

    def every_rank_logs(self, pattern, count=None):
        """Each rank's INFO lines include `pattern` (exactly `count` times)."""
        for r in range(self.np):
            n = sum(1 for line in info_lines(self.out, r) if re.search(pattern, line))
            ok = n == count if count is not None else n > 0
            self.require(ok, f"rank {r}: {n} log lines match '{pattern}'" + (f", expected {count}" if count else ""))

    def no_line(self, pattern):
        lines = [l for l in self.out.splitlines() if re.search(pattern, l)]
        self.require(not lines, f"unexpected output matching '{pattern}': {lines[:3]}")

    def collectives_passed(self, status, script="collectives", at_least=101):
        """The run exited 0 and every rank of `script` reported at least
        `at_least` checks, all passed (the harness's "P of N checks passed")."""
        self.require(status == 0, f"{script} exited {status}")
        # (not anchored at a line's start: a rank's stdout line may land in
        # the middle of another rank's stderr line in the merged output)
        passed = re.findall(rf"(?<!\w){script}: rank (\d+): (\d+) of (\d+) checks passed$", self.out, re.M)
        self.require(sorted(int(r) for r, _, _ in passed) == list(range(self.np)),
                     f"{len(passed)} of {self.np} ranks reported their checks")
        self.require(all(a == b and int(b) >= at_least for _, a, b in passed), f"not every check passed: {passed}")

    def done(self):
        if self.errors:
            fail(self.errors)
        print("check_interpose: OK")


def mpi4py_env(preload, **extra):
    env = {"LD_PRELOAD": preload, "STRATA_DEBUG": "INFO", "MPI4PY_RC_THREAD_LEVEL": "serialized"}
    env.update(extra)
    return {k: v for k, v in env.items() if v is not None}


def check_mpi4py(mpirun, preload, np, mode):
    collectives = [PYTHON, os.path.join(HERE, "collectives.py")]
    world = rf"MPI_COMM_WORLD \({np} ranks\)"
    if mode == "mpi4py":
        status, out = run(mpirun, np, mpi4py_env(preload), collectives + ["--strata-semantics"])
        c = Checks(out, np)
        c.collectives_passed(status)
        # Routed lines say the call in MPI's terms, then what strata ran.
        numpy_types = {"f32": "MPI_FLOAT", "f64": "MPI_DOUBLE", "i32": "MPI_INT", "i64": "MPI_LONG"}
        for dtype, mpi_type in numpy_types.items():
            for op in ("sum", "prod", "min", "max"):
                c.every_rank_logs(rf"^MPI_Allreduce on comm {world} {mpi_type} MPI_{op.upper()} -> strata "
                                  rf"\({dtype} {op}, \w+\)$")
        explicit = {"MPI_INT8_T": "i8", "MPI_UINT8_T": "u8", "MPI_INT32_T": "i32", "MPI_UINT32_T": "u32",
                    "MPI_INT64_T": "i64", "MPI_UINT64_T": "u64", "MPI_LONG_LONG_INT": "i64",
                    "MPI_UNSIGNED_LONG_LONG": "u64", "MPI_SIGNED_CHAR": "i8", "MPI_UNSIGNED_CHAR": "u8",
                    "MPI_UNSIGNED": "u32", "MPI_UNSIGNED_LONG": "u64"}
        for mpi_type, dtype in explicit.items():
            c.every_rank_logs(rf"^MPI_Allreduce on comm {world} {mpi_type} MPI_MAX -> strata \({dtype} max, ")
        c.every_rank_logs(rf"^MPI_Allreduce on comm {world} MPI_SIGNED_CHAR MPI_SUM -> strata \(i8 sum, ")
        if os.environ.get("STRATA_TEST_MPI", "").startswith("Open MPI"):
            c.every_rank_logs(rf"^MPI_Allreduce on comm {world} MPI_CHAR MPI_MAX -> strata \(i8 max, ")
        c.every_rank_logs(rf"^MPI_Allreduce on comm {world} MPI_UNSIGNED MPI_SUM -> strata \(u32 sum, ")
        c.every_rank_logs(rf"^MPI_Reduce on comm {world} \S+ \S+ -> strata \((f32 sum|f64 max|i32 min|i64 prod), \w+\)$", 4)
        c.every_rank_logs(rf"^MPI_Bcast on comm {world} (MPI_DOUBLE|MPI_INT|MPI_FLOAT|MPI_UNSIGNED_CHAR) -> strata \(\w+\)$", 4)
        c.every_rank_logs(rf"^MPI_Bcast on comm {world} derived datatype -> strata \(packed, \w+\)$")
        c.every_rank_logs(r"^MPI_(Allreduce|Reduce|Bcast) on comm split-by-parity \([12] ranks?\) .* -> strata ", 3)
        # 3 dups over the same ranks: one label, one line (communicators made
        # again are not logged again).
        c.every_rank_logs(rf"^MPI_Allreduce on comm world ranks 0-{np - 1} \({np} ranks\) MPI_LONG MPI_SUM -> strata "
                          rf"\(i64 sum, ", 1)
        # Once per communicator and kind, not per call (16 calls made this one).
        c.every_rank_logs(rf"^MPI_Allreduce on comm {world} MPI_FLOAT MPI_SUM -> strata ", 1)
        c.every_rank_logs(rf"^MPI_Allreduce on comm {world} MPI_INT MPI_LAND -> PMPI \(MPI_LAND not served\)$")
        c.every_rank_logs(rf"^MPI_Allreduce on comm {world} MPI_2INT MPI_MAXLOC -> PMPI \(MPI_2INT not served\)$")
        c.every_rank_logs(rf"^MPI_Allreduce on comm {world} MPI_SHORT MPI_SUM -> PMPI \(MPI_SHORT not served\)$")
        c.every_rank_logs(rf"^MPI_Allreduce on comm {world} MPI_INT user-defined op -> PMPI ")
        c.every_rank_logs(r"^MPI_Allreduce on comm world ranks? \S+ \(\d ranks?\) MPI_DOUBLE MPI_SUM -> PMPI "
                          r"\(intercommunicators are not served\)$")
        c.no_line(r"strata WARN .*strata-mpi:")
    elif mode == "spec-mpi":
        status, out = run(mpirun, np, mpi4py_env(preload, STRATA_SPEC="mpi"), collectives)
        c = Checks(out, np)
        c.collectives_passed(status)
        c.every_rank_logs(rf"^MPI_Allreduce on comm {world} MPI_FLOAT MPI_SUM -> strata \(f32 sum, mpi\)$")
        c.every_rank_logs(rf"^MPI_Bcast on comm {world} MPI_DOUBLE -> strata \(mpi\)$")
        c.no_line(r"strata WARN .*strata-mpi:")
    elif mode == "off":
        status, out = run(mpirun, np, mpi4py_env(preload, STRATA_INTERPOSE="off"), collectives)
        c = Checks(out, np)
        c.collectives_passed(status)
        c.every_rank_logs(rf"^MPI_Allreduce on comm {world} MPI_FLOAT MPI_SUM -> PMPI \(STRATA_INTERPOSE=off\)$", 1)
        c.every_rank_logs(rf"^MPI_Bcast on comm {world} MPI_DOUBLE -> PMPI \(STRATA_INTERPOSE=off\)$", 1)
        c.no_line(r"-> strata")
        c.no_line(r"all_reduce_spec")  # no strata communicator was even created
    else:  # multiple
        status, out = run(mpirun, np, mpi4py_env(preload, MPI4PY_RC_THREAD_LEVEL=None), collectives)
        c = Checks(out, np)
        c.collectives_passed(status)
        c.every_rank_logs(rf"^MPI_Allreduce on comm {world} MPI_FLOAT MPI_SUM -> PMPI \(MPI_THREAD_MULTIPLE\)$", 1)
        c.no_line(r"-> strata")
    c.done()


def check_blockwise(mpirun, preload, np):
    blockwise = [PYTHON, os.path.join(HERE, "blockwise.py")]
    world = rf"MPI_COMM_WORLD \({np} ranks\)"
    # MPI alone first: the script's numpy references must agree with MPI's
    # own results, so that the preloaded run below is judged by MPI's
    # semantics (MPI_IN_PLACE, type signatures), not by the script's reading.
    status, out = run(mpirun, np, {"MPI4PY_RC_THREAD_LEVEL": "serialized"}, blockwise)
    c = Checks(out, np)
    c.collectives_passed(status, "blockwise")
    c.no_line(r"strata-mpi:")
    status, out = run(mpirun, np, mpi4py_env(preload), blockwise)
    c.out = out  # the checks from here on read the preloaded run
    c.collectives_passed(status, "blockwise")
    # Reduce_scatter_block: every numpy dtype x op, and the explicitly named
    # datatypes (MPI_MIN), routed with the element type and op strata ran.
    numpy_types = {"f32": "MPI_FLOAT", "f64": "MPI_DOUBLE", "i32": "MPI_INT", "i64": "MPI_LONG", "u8": "MPI_UNSIGNED_CHAR",
                   "i8": "MPI_SIGNED_CHAR", "u32": "MPI_UNSIGNED", "u64": "MPI_UNSIGNED_LONG"}
    for dtype, mpi_type in numpy_types.items():
        for op in ("sum", "prod", "min", "max"):
            c.every_rank_logs(rf"^MPI_Reduce_scatter_block on comm {world} {mpi_type} MPI_{op.upper()} -> strata "
                              rf"\({dtype} {op}, [\w#/]+\)$")
    explicit = {"MPI_INT8_T": "i8", "MPI_UINT8_T": "u8", "MPI_INT32_T": "i32", "MPI_UINT32_T": "u32",
                "MPI_INT64_T": "i64", "MPI_UINT64_T": "u64", "MPI_LONG_LONG_INT": "i64", "MPI_UNSIGNED_LONG_LONG": "u64"}
    for mpi_type, dtype in explicit.items():
        c.every_rank_logs(rf"^MPI_Reduce_scatter_block on comm {world} {mpi_type} MPI_MIN -> strata \({dtype} min, ")
    # Allgather: every datatype moves as bytes, MPI_SHORT and complex too;
    # send and receive datatypes that differ, as plain bytes or packed.
    for mpi_type in ("MPI_FLOAT", "MPI_DOUBLE", "MPI_INT", "MPI_LONG", "MPI_UNSIGNED_CHAR", "MPI_SHORT",
                     "MPI_C_DOUBLE_COMPLEX"):
        c.every_rank_logs(rf"^MPI_Allgather on comm {world} {mpi_type} -> strata \([\w#/]+\)$")
    c.every_rank_logs(rf"^MPI_Allgather on comm {world} MPI_INT to MPI_BYTE -> strata \([\w#/]+\)$", 1)
    for r in range(np):  # even ranks send a contiguous type, odd ranks receive one
        sent = "derived datatype to MPI_INT" if r % 2 == 0 else "MPI_INT to derived datatype"
        c.require(any(re.search(rf"^MPI_Allgather on comm {world} {sent} -> strata \(packed, [\w#/]+\)$", line)
                      for line in info_lines(out, r)), f"rank {r}: no packed MPI_Allgather line for {sent}")
    # The strided receive type (Open MPI names a resized type), in place too.
    derived = r"derived datatype( '[^']*')?"
    c.every_rank_logs(rf"^MPI_Allgather on comm {world} MPI_INT to {derived} -> strata \(packed, [\w#/]+\)$")
    c.every_rank_logs(rf"^MPI_Allgather on comm {world} {derived} -> strata \(packed, [\w#/]+\)$", 1)
    # The split without rank 0, and rank 0 alone.
    c.every_rank_logs(r"^MPI_(Reduce_scatter_block|Allgather) on comm world ranks? \S+ \(\d ranks?\) .* -> strata ", 2)
    # Once per communicator and kind, not per call (7 calls made this one).
    c.every_rank_logs(rf"^MPI_Reduce_scatter_block on comm {world} MPI_FLOAT MPI_SUM -> strata ", 1)
    # What falls through, with its reason.
    c.every_rank_logs(rf"^MPI_Reduce_scatter_block on comm {world} MPI_INT MPI_LAND -> PMPI \(MPI_LAND not served\)$")
    c.every_rank_logs(rf"^MPI_Reduce_scatter_block on comm {world} MPI_SHORT MPI_SUM -> PMPI \(MPI_SHORT not served\)$")
    c.every_rank_logs(rf"^MPI_Reduce_scatter_block on comm {world} MPI_INT user-defined op -> PMPI "
                      r"\(user-defined op not served\)$")
    c.every_rank_logs(rf"^MPI_Reduce_scatter_block on comm {world} MPI_FLOAT MPI_SUM -> PMPI \(0 bytes: nothing to move\)$")
    c.every_rank_logs(rf"^MPI_Allgather on comm {world} MPI_DOUBLE -> PMPI \(0 bytes: nothing to move\)$")
    c.every_rank_logs(r"^MPI_Allgather on comm world ranks? \S+ \(\d ranks?\) MPI_DOUBLE -> PMPI "
                      r"\(intercommunicators are not served\)$")
    if np % 2 == 0:
        c.every_rank_logs(r"^MPI_Reduce_scatter_block on comm world ranks? \S+ \(\d ranks?\) MPI_LONG MPI_SUM -> PMPI "
                          r"\(intercommunicators are not served\)$")
    c.no_line(r"MPI_Reduce_scatter on")  # not intercepted: MPI runs it
    c.no_line(r"strata WARN .*strata-mpi:")
    c.done()


def check_requests(mpirun, preload, np, program, extra_env):
    world = rf"MPI_COMM_WORLD \({np} ranks\)"
    algo = r"[\w#/]+"
    # MPI alone first: the program's references must agree with MPI's own
    # results, so that the preloaded runs are judged by MPI's semantics.
    status, out = run(mpirun, np, {}, [program])
    c = Checks(out, np)
    c.collectives_passed(status, "requests")
    c.no_line(r"strata-mpi:")
    found = re.search(r"^requests: persistent all-reduce: (\S+)$", out, re.M)
    init = found.group(1) if found else "none"
    for progress_thread in (False, True):
        env = {"LD_PRELOAD": preload, "STRATA_DEBUG": "INFO", **extra_env}
        argv = [program, "--strata"]
        if progress_thread:
            env["STRATA_PROGRESS_THREAD"] = "1"
            # Across (virtual) nodes the thread takes no request
            # (docs/INTERPOSER.md): nothing completes without an MPI call.
            if "STRATA_RANKS_PER_NODE" not in extra_env:
                argv.append("--progress-thread")
        status, out = run(mpirun, np, env, argv)
        c.out = out
        c.collectives_passed(status, "requests")
        # Each kind of call routed, named as the program called it, then what
        # strata runs.
        for call, args, runs in (("MPI_Iallreduce", "MPI_DOUBLE MPI_SUM", "f64 sum"),
                                 ("MPI_Iallreduce", "MPI_FLOAT MPI_MAX", "f32 max"),
                                 ("MPI_Iallreduce", "MPI_INT MPI_SUM", "i32 sum"),
                                 ("MPI_Ireduce", "MPI_DOUBLE MPI_SUM", "f64 sum"),
                                 ("MPI_Ireduce_scatter_block", r"MPI_LONG_LONG\w* MPI_SUM", "i64 sum")):
            c.every_rank_logs(rf"^{call} on comm {world} {args} -> strata \({runs}, {algo}\)$")
        c.every_rank_logs(rf"^MPI_Ibcast on comm {world} MPI_INT -> strata \({algo}\)$")
        c.every_rank_logs(rf"^MPI_Iallgather on comm {world} MPI_INT -> strata \({algo}\)$")
        for r in range(1, np, 2):  # odd ranks pack and unpack derived datatypes
            for pattern in (rf"^MPI_Ibcast on comm {world} derived datatype -> strata \(packed, {algo}\)$",
                            rf"^MPI_Iallgather on comm {world} MPI_INT to derived datatype -> strata "
                            rf"\(packed, {algo}\)$"):
                c.require(any(re.search(pattern, line) for line in info_lines(out, r)),
                          f"rank {r}: no line matches '{pattern}'")
        c.every_rank_logs(rf"^MPI_Iallreduce on comm world ranks 0-{np - 1} \({np} ranks\) MPI_DOUBLE MPI_SUM -> "
                          rf"strata \(f64 sum, ")
        if init != "none":
            c.every_rank_logs(rf"^{init} on comm {world} MPI_DOUBLE MPI_SUM -> strata \(f64 sum, {algo}\)$")
            c.every_rank_logs(rf"^{init} on comm {world} MPI_INT MPI_MAX -> strata \(i32 max, {algo}\)$")
            c.every_rank_logs(rf"^{init} on comm {world} MPI_INT MPI_LAND -> PMPI \(MPI_LAND not served\)$")
        # What MPI runs, with the reason.
        c.every_rank_logs(rf"^MPI_Iallreduce on comm {world} MPI_INT MPI_LAND -> PMPI \(MPI_LAND not served\)$")
        c.every_rank_logs(rf"^MPI_Iallreduce on comm {world} MPI_SHORT MPI_SUM -> PMPI \(MPI_SHORT not served\)$")
        c.every_rank_logs(rf"^MPI_Ibcast on comm {world} MPI_INT -> PMPI \(0 bytes: nothing to move\)$")
        c.every_rank_logs(rf"^MPI_Request_free of an active MPI_Iallreduce request on comm {world}: completes it "
                          r"first \(strata cannot cancel a collective\)$")
        # The erroneous calls of errors(), and nothing else, warn: the
        # mismatch (twice: MPI_Waitall, MPI_Wait) and MPI_Start on an active
        # request. (The library's own binding advice is not the interposer's.)
        for r in range(np):
            warned = re.findall(rf"^strata WARN \[[^\]]*:{r}\] (strata-mpi: .*)$", out, re.M)
            mismatch = [w for w in warned if re.search(r"^strata-mpi: MPI_Iallreduce on comm world ranks .* failed in "
                                                       r"strata: .* \(reported to MPI as MPI_ERR_TRUNCATE", w)]
            c.require(len(mismatch) == 2, f"rank {r}: {len(mismatch)} MPI_ERR_TRUNCATE warnings, expected 2")
            start = [w for w in warned if re.search(r"^strata-mpi: MPI_Start on comm world ranks .*: the request is "
                                                    r"still active.* \(reported to MPI as MPI_ERR_REQUEST", w)]
            c.require(len(start) == (init != "none"), f"rank {r}: {len(start)} MPI_ERR_REQUEST warnings")
            other = [w for w in warned if w not in mismatch + start]
            c.require(not other, f"rank {r}: unexpected warnings {other[:3]}")
    c.done()


def check_errors(mpirun, preload, np, mode):
    scenario = "mismatch" if mode == "errors-mismatch" else "timeout"
    flight_dir = tempfile.mkdtemp(prefix="strata-flight-interpose-") if scenario == "mismatch" else None
    env = mpi4py_env(preload, STRATA_INTERPOSE_TIMEOUT="1" if scenario == "timeout" else None,
                     STRATA_FLIGHT_DIR=flight_dir)
    if mode == "errors-fatal":
        env["MPI4PY_RC_ERRORS"] = "fatal"
    status, out = run(mpirun, np, env, [PYTHON, os.path.join(HERE, "errors.py"), scenario], timeout=90)
    c = Checks(out, np)
    if scenario == "mismatch":
        # The routed calls are recorded like any strata call: every rank
        # wrote its file on the Mismatch, and the tool names the counts
        # (errors.py passes 10 + rank elements).
        tool = os.path.join(HERE, "..", "..", "apps", "strata-flight", "strata-flight")
        flight = subprocess.run([sys.executable, tool, flight_dir], capture_output=True, text=True)
        print(flight.stdout + flight.stderr)
        c.require(flight.returncode == 0, f"strata-flight exited {flight.returncode}")
        counts = ", ".join(f"{10 + r} on rank {r}" for r in range(np))
        c.require(re.search(rf"disagree on call #\d+: count: {counts}", flight.stdout),
                  f"strata-flight did not name the disagreement 'count: {counts}'")
        shutil.rmtree(flight_dir, ignore_errors=True)
        c.require(status == 0, f"mpirun exited {status}")
        for r in range(np):
            c.require(re.search(rf"strata WARN \[[^\]]*:{r}\] strata-mpi: MPI_Allreduce on comm MPI_COMM_WORLD .* "
                                rf"failed in strata: .* \(reported to MPI as MPI_ERR_TRUNCATE", out),
                      f"rank {r} did not report strata's Mismatch as MPI_ERR_TRUNCATE")
            c.require(f"errors: rank {r}: raised MPI_ERR_TRUNCATE" in out, f"rank {r}'s call did not raise MPI_ERR_TRUNCATE")
            c.require(f"errors: rank {r}: the communicator still works" in out, f"rank {r}: the communicator broke")
        c.done()
        return
    c.require(re.search(r"strata WARN \[[^\]]*:0\] strata-mpi: MPI_Allreduce on comm MPI_COMM_WORLD .* failed in "
                        r"strata: .*exceeded its timeout of 1 s.* \(reported to MPI as MPI_ERR_OTHER", out),
              "rank 0 did not report strata's DeadlineExceeded as MPI_ERR_OTHER")
    if mode == "errors-return":
        c.require(status == 0, f"mpirun exited {status}")
        c.require("errors: rank 0: raised MPI_ERR_OTHER" in out, "rank 0's MPI_Allreduce did not raise MPI_ERR_OTHER")
    else:
        c.require(status != 0, "the job survived MPI_ERRORS_ARE_FATAL")
        c.require("errors: rank 0: returned" not in out and "errors: rank 0: raised" not in out,
                  "rank 0's MPI_Allreduce returned under MPI_ERRORS_ARE_FATAL")
        # (Open MPI's own "MPI_ERRORS_ARE_FATAL" banner is not asserted: under
        # load its delivery through mpirun sometimes fails, "ORTE_ERROR_LOG:
        # Data unpack would read past end of buffer ... show_help.c".)
    c.done()


def check_bench(mpirun, preload, np, bench, collective, args):
    call = {"all_reduce": "MPI_Allreduce", "reduce": "MPI_Reduce", "broadcast": "MPI_Bcast"}[collective]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.json")
        status, out = run(mpirun, np, {"LD_PRELOAD": preload, "STRATA_DEBUG": "INFO"},
                          [bench, "--no-progress", "--collective", collective, "--baseline", "mpi", "-J", path] + args)
        c = Checks(out, np)
        c.require(status == 0, f"strata-bench exited {status}")
        if os.path.exists(path):
            with open(path) as f:
                doc = json.load(f)
            c.require(doc["summary"]["wrong_total"] == 0, f"{doc['summary']['wrong_total']} wrong values")
            c.require(doc["rows"] and all(row["wrong"] == 0 for row in doc["rows"]), "a row has wrong values")
            c.require(all(row.get("baseline", {}).get("time_us", 0) > 0 for row in doc["rows"]),
                      "a row lacks its baseline time")
        else:
            c.require(False, "no JSON written")
    # The baseline's calls (on strata-bench's own duplicate of MPI_COMM_WORLD)
    # and the bench's result check (a u64 sum on MPI_COMM_WORLD) were routed.
    c.every_rank_logs(rf"^{call} on comm world ranks 0-{np - 1} \({np} ranks\) .* -> strata \(")
    c.every_rank_logs(rf"^MPI_Allreduce on comm MPI_COMM_WORLD \({np} ranks\) \S+ MPI_SUM -> strata \(u64 sum, ")
    c.no_line(r"strata WARN .*strata-mpi:")
    c.done()


def check_hello(mpirun, preload, np, hello):
    status, out = run(mpirun, np, {"LD_PRELOAD": preload, "STRATA_DEBUG": "INFO"}, [hello])
    c = Checks(out, np)
    c.require(status == 0, f"hello exited {status}")
    c.require(f"mean of ranks = {(np - 1) / 2:g}" in out, "hello did not print the right mean")
    c.no_line(r"strata-mpi:")  # strata's own MPI calls went to MPI, not back into strata
    c.done()


def check_linked(mpirun, np, program):
    status, out = run(mpirun, np, {"STRATA_DEBUG": "INFO"}, [program])  # no LD_PRELOAD
    c = Checks(out, np)
    c.collectives_passed(status, "linked", at_least=2)
    c.every_rank_logs(rf"^MPI_Allreduce on comm MPI_COMM_WORLD \({np} ranks\) MPI_FLOAT MPI_SUM -> strata \(f32 sum, ")
    c.every_rank_logs(rf"^MPI_Allreduce on comm MPI_COMM_WORLD \({np} ranks\) MPI_DOUBLE MPI_MAX -> strata \(f64 max, ")
    c.done()


# What each binding's communicator must log on every rank, preloaded.
FORTRAN_ROUTED = [
    r"MPI_Allreduce on comm {comm} \({np} ranks\) MPI_DOUBLE_PRECISION MPI_SUM -> strata \(f64 sum, ",
    r"MPI_Allreduce on comm {comm} \({np} ranks\) MPI_INTEGER MPI_MAX -> strata \(i32 max, ",
    r"MPI_Reduce on comm {comm} \({np} ranks\) MPI_DOUBLE_PRECISION MPI_SUM -> strata \(f64 sum, ",
    r"MPI_Bcast on comm {comm} \({np} ranks\) MPI_INTEGER -> strata \(",
    r"MPI_Allgather on comm {comm} \({np} ranks\) MPI_INTEGER -> strata \(",
    r"MPI_Reduce_scatter_block on comm {comm} \({np} ranks\) MPI_REAL MPI_SUM -> strata \(f32 sum, ",
]


# MPICH 4.0 (Debian 12's 4.0.2) crashes in its own MPI_Reduce with
# MPI_IN_PLACE at the root from 512 doubles up (a C program too, without
# strata): the Fortran program cannot run on it alone. Preloaded, every call
# goes to strata (the run asserts it), so that run still shows MPICH's
# Fortran bindings reaching the interposer.
MPI_IN_PLACE_REDUCE_CRASHES = re.compile(r"MPICH 4\.0\.\d+$")


def check_fortran(mpirun, preload, np, program):
    bindings = {"mpif.h": "fortran-mpif-h", "use mpi": "fortran-use-mpi", "use mpi_f08": "fortran-use-mpi-f08"}
    runs = [{}, {"LD_PRELOAD": preload, "STRATA_DEBUG": "INFO"}]
    mpi = os.environ.get("STRATA_TEST_MPI", "")
    if MPI_IN_PLACE_REDUCE_CRASHES.match(mpi):
        print(f"check_interpose: not run without the interposer: {mpi}'s own in-place MPI_Reduce crashes", flush=True)
        runs = runs[1:]
    for env in runs:
        status, out = run(mpirun, np, env, [program])
        c = Checks(out, np)
        c.require(status == 0, f"the Fortran program exited {status} ({'preloaded' if env else 'plain'})")
        reports = re.findall(r"(?<!\w)fortran: rank (\d+): (.+), (\d+) elements: (\d+) of (\d+) checks passed$", out, re.M)
        c.require(len(reports) == np * len(bindings) * 3, f"{len(reports)} reports, expected {np * len(bindings) * 3}")
        c.require(all(a == b and int(b) == 9 for *_, a, b in reports), f"not every check passed: {reports}")
        if env:
            for comm in bindings.values():
                for pattern in FORTRAN_ROUTED:
                    c.every_rank_logs("^" + pattern.format(comm=comm, np=np))
            c.no_line(r"-> PMPI")
        else:
            c.no_line(r"^strata ")
        c.done()


def check_first_started(mpirun, preload, np, program):
    world = rf"MPI_COMM_WORLD \({np} ranks\)"
    dup = rf"world ranks 0-{np - 1} \({np} ranks\)"
    kinds = ("MPI_Iallreduce", "MPI_Ibcast", "MPI_Iallgather", "MPI_Ireduce", "MPI_Ireduce_scatter_block")
    strata_env = {"LD_PRELOAD": preload, "STRATA_DEBUG": "INFO"}
    for env in ({}, strata_env, {**strata_env, "STRATA_SPEC": "no-such-algorithm"}):
        # A first call that makes strata's side where a peer's MPI_Comm_idup
        # waits for this rank hangs: 60 s is far beyond a passing run.
        status, out = run(mpirun, np, env, [program] + (["--strata"] if env else []), timeout=60)
        c = Checks(out, np)
        c.collectives_passed(status, "first_started", at_least=20)
        found = re.search(r"^first_started: persistent all-reduce: (\S+)$", out, re.M)
        init = found.group(1) if found else "none"
        kinds = kinds[:5] + ((init,) if init != "none" else ())
        if not env:
            c.no_line(r"strata-mpi:")
        elif "STRATA_SPEC" not in env:
            c.every_rank_logs(rf"^MPI_Iallreduce on comm {world} MPI_INT MPI_SUM -> strata \(i32 sum, ")
            for call in kinds:
                c.every_rank_logs(rf"^{call} on comm {dup} .* -> strata \(")
        else:
            for call in kinds:
                c.every_rank_logs(rf"^{call} on comm {dup} .* -> PMPI \(strata could not start on this communicator: ")
            c.no_line(r"-> strata")
        c.done()


def check_quiet(mpirun, preload, np, program):
    status, out = run(mpirun, np, {"LD_PRELOAD": preload}, [program])  # default STRATA_DEBUG
    c = Checks(out, np)
    c.collectives_passed(status, "many_comms", at_least=10)
    said = [line for line in out.splitlines() if line.startswith("strata ")]
    c.require(len(said) <= 1, f"strata printed {len(said)} lines at the default log level, at most 1 expected: {said}")
    c.no_line(r"^strata .* 1 of 1 ranks")

    status, out = run(mpirun, np, {"LD_PRELOAD": preload, "STRATA_DEBUG": "INFO"}, [program])
    c.require(status == 0, f"many_comms at INFO exited {status}")
    # Which world ranks hold the communicator each (datatype, op) ran on, by rank.
    holds = {}
    for rank, call, members in re.findall(r"(?<!\w)many_comms: rank (\d+): comm (\S+ \S+) holds (\S+)$", out, re.M):
        holds.setdefault(call, {})[int(rank)] = members
    labels = {}  # (datatype op) -> rank -> the labels its log lines gave
    for r in range(np):
        for label, call in re.findall(r"^MPI_Allreduce on comm (.+) (MPI_\w+ MPI_\w+) -> strata ",
                                      "\n".join(info_lines(out, r)), re.M):
            labels.setdefault(call, {}).setdefault(r, []).append(label)
    c.require(len(holds) == 7, f"expected 7 communicators' reports, got {sorted(holds)}")
    for call, by_rank in holds.items():
        for r in by_rank:
            got = labels.get(call, {}).get(r, [])
            c.require(len(got) == 1, f"rank {r}: {len(got)} INFO lines for the communicator of {call}, expected 1 "
                                     f"(once per process, also when it is made again): {got}")
        for r in by_rank:
            for s in by_rank:
                if r < s and by_rank[r] == by_rank[s] and labels.get(call, {}).get(r) != labels.get(call, {}).get(s):
                    c.require(False, f"ranks {r} and {s} share the communicator of {call} (world ranks "
                                     f"{by_rank[r]}) but name it {labels[call].get(r)} and {labels[call].get(s)}")
    c.done()


def main():
    if len(sys.argv) < 5:
        fail([__doc__])
    mpirun, preload, np, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    rest = sys.argv[5:]
    if mode in ("mpi4py", "spec-mpi", "off", "multiple", "blockwise", "errors-return", "errors-fatal", "errors-mismatch"):
        probe = subprocess.run([PYTHON, "-c", "import mpi4py, numpy"], capture_output=True, text=True)
        if probe.returncode != 0:
            print(f"check_interpose: skipped: {PYTHON} cannot import mpi4py and numpy "
                  "(Debian packages python3-mpi4py python3-numpy; scripts/setup.sh installs them)")
            sys.exit(77)
        if os.environ.get("STRATA_TEST_MPI4PY_WHY"):
            print(f"check_interpose: skipped: {os.environ['STRATA_TEST_MPI4PY_WHY']}")
            sys.exit(77)
    if mode in ("mpi4py", "spec-mpi", "off", "multiple"):
        check_mpi4py(mpirun, preload, np, mode)
    elif mode == "blockwise":
        check_blockwise(mpirun, preload, np)
    elif mode == "requests":
        check_requests(mpirun, preload, np, rest[0], dict(a.split("=", 1) for a in rest[1:]))
    elif mode in ("errors-return", "errors-fatal", "errors-mismatch"):
        check_errors(mpirun, preload, np, mode)
    elif mode == "bench":
        check_bench(mpirun, preload, np, rest[0], rest[1], rest[2:])
    elif mode == "hello":
        check_hello(mpirun, preload, np, rest[0])
    elif mode == "linked":
        check_linked(mpirun, np, rest[0])
    elif mode == "quiet":
        check_quiet(mpirun, preload, np, rest[0])
    elif mode == "first-started":
        check_first_started(mpirun, preload, np, rest[0])
    elif mode == "fortran":
        check_fortran(mpirun, preload, np, rest[0])
    else:
        fail([f"unknown mode {mode}"])


if __name__ == "__main__":
    main()
