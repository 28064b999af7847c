#!/usr/bin/env python3
"""The README's shell commands run as written on this machine.

  check_readme_commands.py SOURCE_ROOT BUILD_DIR PLAIN_MPI_C

Every command in README.md's ```sh blocks (a line ending in a backslash
continues it) runs in order, as written, with bash, in a scratch folder
that looks like the repository (its top-level entries linked, `build`
linking BUILD_DIR) and holds the files the README asks the reader to write:
hello.cpp, hello.c and prog.f90 (the examples in docs/examples/), and
your_program (PLAIN_MPI_C, a plain MPI program, built with mpicc). The
environment starts empty but for PATH and HOME (a scratch folder), so
nothing the tests set (OMPI_MCA_rmaps_base_oversubscribe, root permission
for mpirun) helps; variables the README exports carry on to the commands
after it. Each command is bounded (180 s) and must:
  - exit 0;
  - print, when a `# prints: TEXT` comment follows it (on its line or the
    next), TEXT on every line of its stdout, and at least one line;
  - print at most one line on stderr, strata's INFO lines aside (asked
    for with STRATA_DEBUG=INFO): a warning is one line saying what to do.

What cannot run here is said and not run:
  - scripts/test.sh runs every suite, this test among them (CI's .ci/run
    is that command); scripts/bench.sh, but for --help, benchmarks and
    writes results/ into the source tree (suite bench runs it:
    check_bench_sh.py);
  - srun, sbatch and scripts/slurm-local.sh need Slurm (suite slurm runs
    the local cluster);
  - `meson setup DIR -Dmpi=...` builds strata again against another MPI
    (minutes; scripts/test.sh's MPICH pass builds that route), and the
    `pip install` of an MPI before it downloads from PyPI;
and the two install commands are stood in for, since a test may write
neither /usr/local nor the build's own configuration:
  - `meson install -C build` installs BUILD_DIR into a scratch root and
    puts that root's usr/local on the search paths /usr/local is on
    (PATH, PKG_CONFIG_PATH, PYTHONPATH);
  - `meson configure build -Dprefix=P && meson install -C build` installs
    BUILD_DIR into a scratch root and moves its prefix to P (the result of
    installing under P: the install test install-prefix-relocatable shows
    the tree is relocatable).
Exit 1 with one FAIL line per broken command.
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(sys.argv[1]).resolve()
BUILD = pathlib.Path(sys.argv[2]).resolve()
PLAIN_MPI_C = pathlib.Path(sys.argv[3]).resolve()
TIMEOUT = 180
failures = []

SKIPPED = [
    (r"scripts/test\.sh\b", "runs every suite, this test among them (.ci/run is this command)"),
    (r"(\w+=\S+ )*scripts/bench\.sh\b(?! --help)", "benchmarks and writes results/ into the source tree "
                                      "(suite bench runs bench.sh: tests/bench/check_bench_sh.py)"),
    (r"(srun|sbatch)\b", "needs a Slurm cluster"),
    (r"scripts/slurm-local\.sh\b", "installs and runs Slurm (suite slurm runs the local cluster)"),
    (r"meson setup \S+ -Dmpi=", "builds strata again against another MPI, for minutes (scripts/test.sh's MPICH "
                                 "pass builds -Dmpi=mpich: scripts/mpich_pass.sh)"),
    (r"python3 -m venv \S+ && \S+/pip install ", "installs an MPI from PyPI (a download; docs/MPI.md has the route)"),
]
INSTALL_SYSTEM = re.compile(r"meson install -C build\s*(#.*)?$")
INSTALL_PREFIX = re.compile(r"meson configure build -Dprefix=(\S+) && meson install -C build\s*(#.*)?$")
PRINTS = re.compile(r"#\s*prints:\s*(.*?)\s*$")


def commands(readme):
    """(command, expected stdout line or None) for every ```sh command."""
    found, block, pending = [], None, ""
    for line in readme.splitlines():
        if line.startswith("```"):
            block = line == "```sh" if block is None else None
            continue
        if not block:
            continue
        stripped = line.strip()
        if not pending and stripped.startswith("#"):
            match = PRINTS.match(stripped)
            if match and found and found[-1][1] is None:
                found[-1] = (found[-1][0], match.group(1))
            continue
        if not pending and not stripped:
            continue
        pending += line + "\n"
        if not line.endswith("\\"):
            trailing = PRINTS.search(line)
            found.append((pending.rstrip("\n"), trailing.group(1) if trailing else None))
            pending = ""
    return found


def build_option(name):
    options = json.loads(subprocess.run(["meson", "introspect", "--buildoptions", str(BUILD)],
                                        capture_output=True, text=True, check=True).stdout)
    return next(o["value"] for o in options if o["name"] == name)


def install(stage):
    """meson install of BUILD into `stage`; returns (prefix, libdir) as configured."""
    subprocess.run(["meson", "install", "-C", str(BUILD), "--destdir", str(stage), "--no-rebuild", "--quiet"],
                   check=True, capture_output=True)
    return build_option("prefix"), build_option("libdir")


def move_pc_prefix(tree, libdir):
    """strata.pc names the prefix it was configured with: point it at `tree`."""
    pc = tree / libdir / "pkgconfig" / "strata.pc"
    pc.write_text(re.sub(r"^prefix=.*$", f"prefix={tree}", pc.read_text(), flags=re.M))


def install_system(work, env):
    prefix, libdir = install(work / "sysroot")
    tree = work / "sysroot" / prefix.lstrip("/")
    move_pc_prefix(tree, libdir)
    installed = json.loads(subprocess.run(["meson", "introspect", "--installed", str(BUILD)],
                                          capture_output=True, text=True, check=True).stdout).values()
    ext = next((p for p in installed if "/strata/_strata." in p), None)
    env["PATH"] = f"{tree}/bin:{env['PATH']}"
    env["PKG_CONFIG_PATH"] = str(tree / libdir / "pkgconfig")
    if ext:
        env["PYTHONPATH"] = str(work / "sysroot" / os.path.dirname(os.path.dirname(ext)).lstrip("/"))


def install_prefix(work, env, target):
    target = pathlib.Path(subprocess.run(["bash", "-c", f"echo {target}"], env=env, capture_output=True,
                                         text=True, check=True).stdout.strip())
    stage = work / "stage"
    prefix, libdir = install(stage)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(stage / prefix.lstrip("/")), str(target))
    shutil.rmtree(stage)
    move_pc_prefix(target, libdir)


def scratch_repository(work):
    """A folder that looks like the repository, plus the reader's own files."""
    for entry in ROOT.iterdir():
        if entry.name not in ("build", ".git"):
            (work / entry.name).symlink_to(entry)
    (work / "build").symlink_to(BUILD)
    for name, example in (("hello.cpp", "hello_allreduce.cpp"), ("hello.c", "hello_allreduce.c"),
                          ("prog.f90", "hello_allreduce.f90")):
        shutil.copy(ROOT / "docs" / "examples" / example, work / name)
    subprocess.run(["mpicc", str(PLAIN_MPI_C), "-o", str(work / "your_program")], check=True)


def run(command, expected, work, env):
    """Runs one command in bash; returns the environment it leaves."""
    env_file = work / ".env"
    script = f"{command}\nstatus=$?\nenv -0 > {env_file}\nexit $status\n"
    shown = " ".join(command.split())
    try:
        done = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        fail(shown, f"did not finish within {TIMEOUT} s")
        return env
    out, err = done.stdout.splitlines(), done.stderr.splitlines()
    problems = []
    if done.returncode != 0:
        problems.append(f"exit status {done.returncode}")
    if expected is not None and (not out or any(line != expected for line in out)):
        problems.append(f"printed {out!r}, not '{expected}' on every line")
    noise = [line for line in err if not line.startswith("strata INFO ")]
    if len(noise) > 1:
        problems.append(f"{len(noise)} lines on stderr (at most one: a warning is one line)")
    if problems:
        fail(shown, "; ".join(problems) + "\n  stdout: " + "\n  ".join(out[-10:]) +
             "\n  stderr: " + "\n  ".join(err[-20:]))
    else:
        print(f"ok   {shown}" + (f"  (printed: {expected})" if expected is not None else ""))
    if env_file.exists():
        env = dict(item.split("=", 1) for item in env_file.read_text().split("\0") if "=" in item)
        env_file.unlink()
    return env


def fail(command, why):
    print(f"FAIL {command}: {why}")
    failures.append(command)


def main():
    with tempfile.TemporaryDirectory() as scratch:
        work = pathlib.Path(scratch) / "strata"
        work.mkdir()
        home = pathlib.Path(scratch) / "home"
        home.mkdir()
        scratch_repository(work)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
        for command, expected in commands((ROOT / "README.md").read_text()):
            first = command.strip()
            shown = " ".join(first.split())
            reason = next((why for pattern, why in SKIPPED if re.match(pattern, first)), None)
            if reason:
                print(f"skip {shown}: {reason}")
            elif INSTALL_SYSTEM.match(first):
                install_system(work, env)
                print(f"ok   {shown}  (stood in for: installed into a scratch root on the search paths)")
            elif match := INSTALL_PREFIX.match(first):
                install_prefix(work, env, match.group(1))
                print(f"ok   {shown}  (stood in for: installed into a scratch root, moved to {match.group(1)})")
            else:
                env = run(command, expected, work, env)
    print(f"check_readme_commands: {len(failures)} command(s) failed")
    sys.exit(1 if failures else 0)


main()
