#!/usr/bin/env bash
# Install test: `meson install` into a scratch DESTDIR, build hello.cpp
# against that copy only (pkg-config from the DESTDIR, no source or build
# include paths), run it under mpirun with 2 ranks and check its output.
#   check_install.sh BUILD_DIR HELLO_CPP [README_EXAMPLE_CPP README_MD]
# With the README's example (docs/examples/hello_allreduce.cpp) it also
# checks that README.md shows that file verbatim, and builds and runs it the
# way README.md says, so the README's example cannot stop compiling.
# Exit 77 (skipped) when pkg-config or mpicxx is missing. The build's MPI:
# its C++ wrapper STRATA_MPICXX and launcher STRATA_LAUNCH (set by meson).
set -euo pipefail
mpicxx=${STRATA_MPICXX:-mpicxx}
launch=${STRATA_LAUNCH:?install test: STRATA_LAUNCH (the build\'s strata-launch) is not set: run it through meson test}

build=$1
hello=$2
example=${3:-}
readme=${4:-}
for tool in pkg-config "$mpicxx" "$launch" python3; do
  command -v "$tool" >/dev/null || { echo "install test: $tool not found, skipping"; exit 77; }
done

# shellcheck source-path=SCRIPTDIR source=scratch_install.sh
source "$(dirname "$0")/scratch_install.sh"
scratch_install "$build"
pcdir=$installed_lib/pkgconfig
[ -f "$pcdir/strata.pc" ] || { echo "install test: no strata.pc in $pcdir" >&2; ls -R "$dest" >&2; exit 1; }
[ -f "$dest$prefix/include/strata/strata.hpp" ] || { echo "install test: strata.hpp not installed" >&2; exit 1; }

# The .pc file names prefix-relative paths; point prefix into the DESTDIR.
flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --define-variable=prefix="$dest$prefix" --cflags --libs strata)
case $flags in *"$dest"*) ;; *) echo "install test: pkg-config flags do not point into the DESTDIR: $flags" >&2; exit 1 ;; esac

# shellcheck disable=SC2086
"$mpicxx" -std=c++20 -o "$work/hello" "$hello" $flags

# The binary must resolve libstrata from the DESTDIR, not from elsewhere.
resolved=$(LD_LIBRARY_PATH=$installed_lib ldd "$work/hello" | awk '/libstrata/ {print $3}')
case $resolved in "$installed_lib"/*) ;; *) echo "install test: libstrata resolves to '$resolved'" >&2; exit 1 ;; esac

output=$(LD_LIBRARY_PATH=$installed_lib "$launch" -n 2 "$work/hello")
echo "$output"
[ "$(grep -c ': all_reduce ok$' <<<"$output")" -eq 2 ] || { echo "install test: unexpected output" >&2; exit 1; }

if [ -n "$example" ]; then
  # README.md must contain the example file's lines verbatim (in a code block).
  python3 - "$example" "$readme" <<'PY'
import sys
example, readme = (open(p).read() for p in sys.argv[1:3])
body = "\n".join(l for l in example.splitlines() if not l.startswith("// The README"))
if body.strip() not in readme:
    sys.exit("install test: README.md does not show docs/examples/hello_allreduce.cpp verbatim")
PY
  # shellcheck disable=SC2046,SC2086
  "$mpicxx" -std=c++20 "$example" $flags -o "$work/readme_example"
  out=$(LD_LIBRARY_PATH=$installed_lib "$launch" -n 4 "$work/readme_example")
  echo "$out"
  # mean of ranks 0..3 = 1.5
  [ "$out" = "mean of ranks = 1.5" ] || { echo "install test: README example printed '$out'" >&2; exit 1; }
fi
