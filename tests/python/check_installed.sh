#!/usr/bin/env bash
# Python install test: `meson install` into a scratch DESTDIR, then run the
# README's Python example (python/examples/hello_allreduce.py) under mpirun
# with 2 ranks against that copy only, checking that `strata` is imported
# from the DESTDIR and that README.md shows the example verbatim.
#   check_installed.sh BUILD_DIR PYTHON EXAMPLE_PY README_MD
set -euo pipefail

build=$1
python=$2
example=$3
readme=$4

# shellcheck source-path=SCRIPTDIR source=../install/scratch_install.sh
source "$(dirname "$0")/../install/scratch_install.sh"
scratch_install "$build"

# Where meson installs the extension and the library (absolute paths).
read -r ext_path lib_path < <(meson introspect --installed "$build" | "$python" -c '
import json, sys
installed = json.load(sys.stdin).values()
ext = next(p for p in installed if "/strata/_strata." in p)
lib = next(p for p in installed if "/libstrata.so" in p)
print(ext, lib)')
site=$dest$(dirname "$(dirname "$ext_path")")
libdir=$dest$(dirname "$lib_path")
for f in __init__.py errors.py "$(basename "$ext_path")"; do
  [ -f "$site/strata/$f" ] || { echo "python install test: $site/strata/$f not installed" >&2; ls -R "$dest" >&2; exit 1; }
done

# Imported from the DESTDIR, not from the build tree or the sources.
where=$(cd "$work" && PYTHONPATH=$site LD_LIBRARY_PATH=$libdir "$python" -c 'import strata; print(strata.__file__)')
case $where in "$site"/*) ;; *) echo "python install test: strata imported from $where, not $site" >&2; exit 1 ;; esac

output=$(cd "$work" && PYTHONPATH=$site LD_LIBRARY_PATH=$libdir \
  "${STRATA_LAUNCH:?python install test: STRATA_LAUNCH (strata-launch of the build) is not set}" -n 2 "$python" "$example")
echo "$output"
[ "$output" = "mean of ranks = 0.5" ] || { echo "python install test: expected 'mean of ranks = 0.5'" >&2; exit 1; }

# README.md must show the example verbatim (in its Python section).
"$python" - "$example" "$readme" <<'PY'
import sys
example, readme = (open(p).read() for p in sys.argv[1:3])
if example.strip() not in readme:
    sys.exit("python install test: README.md does not show python/examples/hello_allreduce.py verbatim")
PY
echo "python install test: ok"
