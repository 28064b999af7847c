#!/usr/bin/env python3
"""The compile and link flags of an MPI compiler wrapper, for meson.build.

  mpi_wrapper.py WRAPPER

WRAPPER is an MPI C++ compiler wrapper (a path or a name on PATH: mpicxx,
mpicxx.mpich, /opt/venv/bin/mpicxx, mpiicpc). meson.build asks it when
neither Meson's own MPI detection nor pkg-config knows the MPI (MPICH and
Intel MPI ship no file Meson reads; the MPI wheels on PyPI ship no .pc).
Each wrapper family answers a different question, so this asks in turn:
  Open MPI       --showme:compile / --showme:link (the flags alone)
  Intel MPI      -compile_info / -link_info (the whole command line)
  MPICH, MVAPICH -show (the whole command line)
and keeps the first answer that is a command line rather than an error.

Prints one line per item, the item's name, then its values, tab-separated:
  wrapper   the wrapper's absolute path
  family    openmpi (answered --showme) or mpich (answered -show or -*_info)
  compile   the compile flags (-I, -D, -pthread, ...)
  link      the link flags (-L, -l, -Wl,..., -Xlinker X, -pthread, ...)
  fortran   the Fortran wrapper beside it, or nothing
  cc        the C wrapper beside it, or nothing
  mpiexec   the launcher beside it, or nothing
  note      something meson.build should print (zero or more lines)
Exits 1 with a message naming the wrapper and what it answered when none of
the questions gets flags.
"""
import os
import shlex
import shutil
import subprocess
import sys

# Whole-command-line answers start with the compiler, which is not a flag.
# The rest splits into compile and link flags; a flag taking the next word
# as its value keeps it.
COMPILE_PREFIXES = ("-I", "-D", "-U", "-isystem", "-include")
LINK_PREFIXES = ("-L", "-l", "-Wl,", "-Xlinker", "-rdynamic", "-static", "-shared")
TAKES_VALUE = ("-Xlinker", "-isystem", "-include")
BOTH = ("-pthread",)
# Intel MPI's wheels ship wrappers whose install folder was never filled in;
# they honour I_MPI_ROOT instead.
INTEL_PLACEHOLDER = "I_MPI_SUBSTITUTE_INSTALLDIR"


def ask(wrapper, args, env):
    """The wrapper's stdout for args, or None when it fails or prints nothing."""
    try:
        run = subprocess.run([wrapper, *args], capture_output=True, text=True, timeout=60, env=env,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = run.stdout.strip()
    return out if run.returncode == 0 and out else None


def split_command_line(line):
    """(compile flags, link flags) of a whole compiler command line."""
    words = shlex.split(line)[1:]  # the first word is the compiler
    compile_args, link_args = [], []
    i = 0
    while i < len(words):
        word = words[i]
        group = [word]
        if word in TAKES_VALUE and i + 1 < len(words):
            group.append(words[i + 1])
            i += 1
        i += 1
        if word in BOTH:
            compile_args += group
            link_args += group
        elif word.startswith(LINK_PREFIXES) or word.endswith((".so", ".a")) or ".so." in word:
            link_args += group
        elif word.startswith(COMPILE_PREFIXES):
            compile_args += group
        # Anything else (-O2, -fstack-protector-strong, Debian's
        # -ffile-prefix-map) is how the MPI itself was built, not what a
        # program needs to use it.
    return compile_args, link_args


def sibling(wrapper, names):
    """The first of names in the wrapper's folder, with the wrapper's suffix
    (mpicxx.mpich -> mpiexec.mpich), or ''."""
    folder, base = os.path.split(wrapper)
    suffix = base[base.index("."):] if "." in base else ""
    for name in names:
        for candidate in (name + suffix, name) if suffix else (name,):
            path = os.path.join(folder, candidate)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return ""


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: mpi_wrapper.py WRAPPER")
    given = sys.argv[1]
    wrapper = shutil.which(given)
    if wrapper is None:
        sys.exit(f"mpi_wrapper.py: {given}: no such program (give a path or a name on PATH)")
    wrapper = os.path.abspath(wrapper)
    env = dict(os.environ)
    notes = []

    def answer(args):
        out = ask(wrapper, args, env)
        if out and INTEL_PLACEHOLDER in out and "I_MPI_ROOT" not in os.environ:
            # The wrapper lives in <root>/bin.
            env["I_MPI_ROOT"] = os.path.dirname(os.path.dirname(os.path.realpath(wrapper)))
            notes.append(f"{wrapper} names no install folder: asked it with I_MPI_ROOT={env['I_MPI_ROOT']}")
            out = ask(wrapper, args, env)
        return out

    family = ""
    compile_args = link_args = None
    showme_compile, showme_link = answer(["--showme:compile"]), answer(["--showme:link"])
    if showme_compile is not None and showme_link is not None:
        family = "openmpi"
        compile_args, link_args = shlex.split(showme_compile), shlex.split(showme_link)
    else:
        for args in (["-compile_info"], ["-show"]):
            line = answer(args)
            if line is not None:
                compile_args, link_args = split_command_line(line)
                if compile_args or link_args:
                    family = "mpich"
                    break
    if not family:
        run = subprocess.run([wrapper, "-show"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        sys.exit(f"mpi_wrapper.py: {wrapper} answers none of --showme:compile, -compile_info and -show "
                 f"with flags (-show: exit {run.returncode}: {(run.stdout + run.stderr).strip()[:300]}): "
                 "is it an MPI compiler wrapper?")
    print("\t".join(["wrapper", wrapper]))
    print("\t".join(["family", family]))
    print("\t".join(["compile"] + compile_args))
    print("\t".join(["link"] + link_args))
    print("\t".join(["fortran", sibling(wrapper, ["mpifort", "mpif90"])]))
    print("\t".join(["cc", sibling(wrapper, ["mpicc"])]))
    # Open MPI's own name first (its mpiexec is the same program).
    launchers = ["mpirun", "mpiexec"] if family == "openmpi" else ["mpiexec", "mpirun"]
    print("\t".join(["mpiexec", sibling(wrapper, launchers)]))
    for note in notes:
        print("\t".join(["note", note]))


if __name__ == "__main__":
    main()
