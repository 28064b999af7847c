# Sourced inside a strata GPU bundle (made by scripts/gpu-bundle.sh; this
# file is the bundle's env.sh): points Open MPI, PMIx and hwloc at the
# bundle's own copies, puts the bundle's bin/ first on PATH, and links the
# machine's NCCL into the bundle's nccl/ (NCCL is too large to carry).
#   source gpu-bundle/env.sh       (run.sh and gpu-check.sh do this)
# NCCL is looked for, first hit wins: $STRATA_NCCL_LIBDIR; the lib/ folder
# of Python's nvidia-nccl package (`python3 -c 'import nvidia.nccl'`; the
# GPU machine's only NCCL); ldconfig's cache; the path the bundle was built
# against. STRATA_BUNDLE_NCCL is left holding the library used, or empty
# with a warning on stderr.
# The caller's PATH comes after the bundle's bin/; the caller's
# LD_LIBRARY_PATH is kept (the CUDA driver, libcuda, may be found only
# through it).

STRATA_BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export STRATA_BUNDLE
B=$STRATA_BUNDLE

export PATH="$B/bin:${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}"
# The bundle's ELF files find its libraries through their RUNPATHs
# ($ORIGIN/../lib). LD_LIBRARY_PATH is left alone: the bundle's lib/ there
# would also reach the machine's own programs (python3, nvidia-smi) with
# Debian's libz and friends. gpu-check.sh's first step reports any library
# that resolves outside the bundle anyway.

# Debian's Open MPI finds its components, help files and configuration
# through compiled-in /usr paths unless these say otherwise.
export OPAL_PREFIX=$B OPAL_EXEC_PREFIX=$B OPAL_BINDIR=$B/bin OPAL_LIBDIR=$B/lib \
  OPAL_PKGLIBDIR=$B/lib/openmpi OPAL_DATAROOTDIR=$B/share OPAL_DATADIR=$B/share \
  OPAL_PKGDATADIR=$B/share/openmpi OPAL_SYSCONFDIR=$B/etc/openmpi
# Same for PMIx (Debian's prefix: /usr/lib/x86_64-linux-gnu/pmix2).
export PMIX_PREFIX=$B/pmix PMIX_LIBDIR=$B/pmix/lib PMIX_PKGLIBDIR=$B/pmix/lib/pmix \
  PMIX_DATADIR=$B/pmix/share PMIX_PKGDATADIR=$B/pmix/share/pmix PMIX_SYSCONFDIR=$B/pmix/share
# hwloc finds PCI devices (GPUs) through sysfs without plugins; a folder
# with none keeps it from loading another hwloc's.
export HWLOC_PLUGINS_PATH=$B/lib/hwloc
# GPU machines run commands as root; one machine, any number of ranks. A
# step whose rank exits non-zero (77: skipped) ends at once rather than
# after Open MPI's 1 s wait before it kills the other ranks (no step is
# interrupted on purpose, which would need that second to say so).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_odls_base_sigkill_timeout=0
# One host only: the 'isolated' launcher starts ranks here without ssh.
# Open MPI 4.1's default (rsh) aborts mpirun when neither ssh nor rsh is
# installed, as on the GPU machine, instead of stepping aside.
export OMPI_MCA_plm=isolated

# Prints the path of the first libnccl.so.2 found, or nothing. Always
# succeeds: env.sh is sourced under `set -e` (gpu-check.sh, run.sh), where
# a failed lookup must end in the warning below, not in a silent exit.
strata_bundle_find_nccl() {
  local dir
  if [ -n "${STRATA_NCCL_LIBDIR:-}" ]; then
    echo "$STRATA_NCCL_LIBDIR/libnccl.so.2"
    return
  fi
  if command -v python3 >/dev/null 2>&1; then
    # nvidia.nccl is a namespace package: no __file__, one entry in __path__.
    dir=$(python3 -c 'import nvidia.nccl as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null) &&
      [ -e "$dir/libnccl.so.2" ] && { echo "$dir/libnccl.so.2"; return; }
  fi
  dir=$(ldconfig -p 2>/dev/null | awk '$1 == "libnccl.so.2" && /x86-64/ {print $NF; exit}')
  [ -n "$dir" ] && [ -e "$dir" ] && { echo "$dir"; return; }
  dir=$(sed -n 's/^ *"nccl_at_build": "\(.*\)",*$/\1/p' "$B/manifest.json" 2>/dev/null)
  if [ -n "$dir" ] && [ -e "$dir" ]; then echo "$dir"; fi
  return 0
}

STRATA_BUNDLE_NCCL=$(strata_bundle_find_nccl) || STRATA_BUNDLE_NCCL=
export STRATA_BUNDLE_NCCL
if [ -z "$STRATA_BUNDLE_NCCL" ] || [ ! -e "$STRATA_BUNDLE_NCCL" ]; then
  echo "strata bundle: no NCCL found (libnccl.so.2: set STRATA_NCCL_LIBDIR, or install Python's nvidia-nccl-cu13);" \
    "nothing that links strata will start (gpu-check's libraries step reports it)" >&2
  STRATA_BUNDLE_NCCL=
elif [ "$(readlink "$B/nccl/libnccl.so.2" 2>/dev/null)" != "$STRATA_BUNDLE_NCCL" ]; then
  # A link inside the bundle, which the RUNPATHs name; if the bundle is
  # read-only, LD_LIBRARY_PATH carries NCCL's own folder instead.
  if ! { mkdir -p "$B/nccl" && ln -sfn "$STRATA_BUNDLE_NCCL" "$B/nccl/libnccl.so.2"; } 2>/dev/null; then
    export LD_LIBRARY_PATH="$(dirname "$STRATA_BUNDLE_NCCL")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
fi

# The CUDA driver is the machine's own. Where the loader cannot find it
# (some containers keep it out of ldconfig's cache and expect
# LD_LIBRARY_PATH), add the usual driver folders that hold it.
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  strata_bundle_path=${LD_LIBRARY_PATH:-}
  for dir in ${strata_bundle_path//:/ } /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
    if [ -e "$dir/libcuda.so.1" ]; then
      case ":${LD_LIBRARY_PATH:-}:" in *":$dir:"*) ;; *) export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$dir" ;; esac
      break
    fi
  done
fi
unset B dir strata_bundle_path
