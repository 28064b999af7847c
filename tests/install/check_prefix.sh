#!/usr/bin/env bash
# Install test for a prefix of one's own ($HOME/opt/strata, a module tree):
# `meson install` into a scratch DESTDIR, the installed prefix moved to
# another folder (so nothing can be found where it was configured), then
# everything installed runs from there in a clean environment (env -i with
# PATH alone: no LD_LIBRARY_PATH, no PYTHONPATH but the one the README
# says to set):
# - every installed ELF file that needs libstrata has a run path relative
#   to $ORIGIN, and none names a build folder;
# - strata-topo, singly and under mpirun at 2 ranks; in a GPU build,
#   libstrata loads its plugin libstrata_gpu.so.0 from beside itself;
# - strata-bench, one tiny size at 2 ranks; in a GPU build, -m cuda loads
#   strata-bench-cuda.so from <libdir>/strata;
# - strata-config prints the prefix's pkg-config folder and Python path;
# - the README's C++ example built with `pkg-config --cflags --libs strata`
#   (PKG_CONFIG_PATH = that pkg-config folder), at 2 ranks;
# - `import strata` and the README's Python example at 2 ranks, with
#   PYTHONPATH = that Python path;
# - a plain MPI program (plain_allreduce.c, mpicc only) with the installed
#   libstrata_mpi.so preloaded, its MPI_Allreduce routed to strata.
# Every check runs and says FAIL or ok; the test fails if any failed.
#   check_prefix.sh BUILD_DIR README_EXAMPLE_CPP EXAMPLE_PY PLAIN_MPI_C PYTHON
# Exit 77 (skipped) when a tool is missing, or when libdir or bindir lies
# outside the prefix (such a tree cannot be moved as one folder).
# The build's MPI: its wrappers STRATA_MPICXX and STRATA_MPICC and its
# launcher STRATA_LAUNCH (set by meson), by absolute path in the clean
# environment below.
set -euo pipefail
mpicxx=$(command -v "${STRATA_MPICXX:-mpicxx}" || true)
mpicc=$(command -v "${STRATA_MPICC:-mpicc}" || true)
launch=${STRATA_LAUNCH:?prefix install test: STRATA_LAUNCH (the build\'s strata-launch) is not set: run it through meson test}

build=$(realpath "$1")
example_cpp=$(realpath "$2")
example_py=$(realpath "$3")
plain_c=$(realpath "$4")
python=$5
for tool in pkg-config "$mpicxx" "$mpicc" "$launch" readelf python3 "$python"; do
  command -v "$tool" >/dev/null || { echo "prefix install test: $tool not found, skipping"; exit 77; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# --no-rebuild: the test runs what was built; others may be editing sources.
meson install -C "$build" --destdir "$work/dest" --no-rebuild --quiet
read -r prefix libdir bindir < <(meson introspect --buildoptions "$build" | python3 -c '
import json, sys
opts = {o["name"]: o["value"] for o in json.load(sys.stdin)}
print(opts["prefix"], opts["libdir"], opts["bindir"])')
case $libdir$bindir in /*) echo "prefix install test: libdir or bindir is absolute, skipping"; exit 77 ;; esac

# The prefix moves to a folder of its own, as `--prefix=$HOME/opt/strata`
# would have put it; strata.pc's prefix says where it is now, as it would.
root=$work/opt/strata
mkdir -p "$work/opt"
mv "$work/dest$prefix" "$root"
rm -rf "$work/dest"
sed -i "s|^prefix=.*|prefix=$root|" "$root/$libdir/pkgconfig/strata.pc"

# Run paths: relative to $ORIGIN wherever libstrata is needed.
while IFS= read -r elf; do
  dynamic=$(readelf -d "$elf" 2>/dev/null) || continue
  grep -q 'NEEDED.*\[libstrata\.so' <<<"$dynamic" || continue
  runpath=$(sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p' <<<"$dynamic")
  where=${elf#"$root"/}
  if [[ $runpath != "\$ORIGIN"* ]]; then
    fail "$where needs libstrata but its run path is '${runpath:-none}' (not relative to \$ORIGIN)"
  elif [[ $runpath == *"$build"* ]]; then
    fail "$where: run path '$runpath' names the build folder"
  else
    ok "$where: run path $runpath"
  fi
done < <(find "$root" -type f \( -name '*.so*' -o -path "$root/$bindir/*" \))

# A clean environment: the prefix's bin first, the system's after it.
clean=(env -i "PATH=$root/$bindir:/usr/bin:/bin" "HOME=$work" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
# stdout is the answer; stderr (strata's one-line warnings) is kept for
# the failure message.
run() { (cd "$work" && timeout 120 "${clean[@]}" "$@") 2>"$work/stderr"; }
stderr() { head -c 2000 "$work/stderr"; }
mpi2=("$launch" -n 2)

if out=$(run strata-topo) && grep -q "^strata-topo" <<<"$out"; then ok "strata-topo runs from the prefix"
else fail "strata-topo: $out $(stderr)"; fi
# A GPU build: libstrata loads its plugin from its own folder (dladdr), as
# the loader's log of that run shows.
if [ -e "$root/$libdir/libstrata_gpu.so.0" ]; then
  run env LD_DEBUG=files strata-topo >/dev/null || true
  if grep -q "file=$root/[^ ]*libstrata_gpu\.so\.0 .*dynamically loaded by" "$work/stderr"; then
    ok "the GPU plugin is loaded from beside the installed libstrata"
  else
    fail "the GPU plugin was not loaded from $root/$libdir: $(grep -m3 'strata_gpu\|cannot open' "$work/stderr")"
  fi
fi
# A GPU build: strata-bench loads strata-bench-cuda.so from <libdir>/strata,
# found from its own folder, for --memory cuda (which then skips here
# without a device, or runs with one).
if [ -e "$root/$libdir/strata/strata-bench-cuda.so" ]; then
  run env LD_DEBUG=files strata-bench -m cuda -b 8 -e 8 -n 1 -w 0 --no-progress >/dev/null || true
  if grep -q "file=$root/[^ ]*strata/strata-bench-cuda\.so .*dynamically loaded by" "$work/stderr"; then
    ok "strata-bench -m cuda loads strata-bench-cuda.so from the prefix"
  else
    fail "strata-bench -m cuda did not load $root/$libdir/strata/strata-bench-cuda.so: $(grep -m3 'bench-cuda\|skipped' "$work/stderr")"
  fi
fi
if out=$(run "${mpi2[@]}" strata-topo) && grep -q "^2 ranks on 1 node" <<<"$out"; then ok "strata-topo under mpirun at 2 ranks"
else fail "strata-topo under mpirun: $out $(stderr)"; fi
if out=$(run "${mpi2[@]}" strata-bench -b 8 -e 8 -n 1 -w 0 --no-progress); then ok "strata-bench under mpirun at 2 ranks"
else fail "strata-bench under mpirun: $out $(stderr)"; fi

# strata-config says where the parts are, for any prefix; the checks after
# these use the true places, so that each failure is reported on its own.
pcdir=$root/$libdir/pkgconfig
site=$(meson introspect --installed "$build" | python3 -c '
import json, os, sys
ext = next(p for p in json.load(sys.stdin).values() if "/strata/_strata." in p)
print(os.path.dirname(os.path.dirname(ext)))')
site=$root${site#"$prefix"}
if said=$(run strata-config --pkgconfigdir) && [ "$said" = "$pcdir" ]; then ok "strata-config --pkgconfigdir: $said"
else fail "strata-config --pkgconfigdir printed '$said', not $pcdir $(stderr)"; fi
if said=$(run strata-config --pythonpath) && [ "$said" = "$site" ]; then ok "strata-config --pythonpath: $said"
else fail "strata-config --pythonpath printed '$said', not $site $(stderr)"; fi
if said=$(run strata-config --datadir) && [ -f "$said/plot_projection.py" ] && [ -f "$said/model_error.py" ]; then
  ok "strata-config --datadir: $said holds plot_projection.py and model_error.py"
else fail "strata-config --datadir printed '$said', without plot_projection.py or model_error.py $(stderr)"; fi

# The README's C++ example, built the README's way.
# shellcheck disable=SC2086 # the flags are a list
if flags=$(run env PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs strata) &&
   (cd "$work" && "${clean[@]}" "$mpicxx" -std=c++20 "$example_cpp" $flags -o hello) 2>&1; then
  if out=$(run "${mpi2[@]}" ./hello) && [ "$out" = "mean of ranks = 0.5" ]; then
    ok "README C++ example built with pkg-config runs at 2 ranks"
  else
    fail "README C++ example: $out $(stderr)"
  fi
else
  fail "README C++ example did not build against the prefix: $flags $(stderr)"
fi

# The Python module, with PYTHONPATH where strata-config says.
if out=$(run env PYTHONPATH="$site" "$python" -c 'import strata; print(strata.__file__)') && [[ $out == "$site"/* ]]; then
  ok "import strata from $site"
else
  fail "import strata: $out $(stderr)"
fi
if out=$(run env PYTHONPATH="$site" "${mpi2[@]}" "$python" "$example_py") && [ "$out" = "mean of ranks = 0.5" ]; then
  ok "README Python example at 2 ranks"
else
  fail "README Python example: $out $(stderr)"
fi

# A plain MPI program with the installed interposer preloaded.
if (cd "$work" && "${clean[@]}" "$mpicc" "$plain_c" -o plain) 2>&1; then
  preload=$(run env PKG_CONFIG_PATH="$pcdir" pkg-config --variable=libdir strata)/libstrata_mpi.so || true
  out=$(run "${mpi2[@]}" --env LD_PRELOAD="$preload" --env STRATA_DEBUG=INFO ./plain) || true
  if [ "$(grep -c '^plain: rank [01]: sum 3$' <<<"$out")" = 2 ] && grep -q 'MPI_Allreduce.*-> strata' "$work/stderr"; then
    ok "plain MPI program with $preload preloaded: routed to strata"
  else
    fail "plain MPI program with libstrata_mpi.so preloaded: $out $(stderr)"
  fi
else
  fail "plain_allreduce.c did not build with mpicc"
fi

[ "$failures" -eq 0 ] || { echo "prefix install test: $failures check(s) failed"; exit 1; }
echo "prefix install test: passed"
