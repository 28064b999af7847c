#!/usr/bin/env bash
# Proves that a strata GPU bundle (scripts/gpu-bundle.sh) runs on its own,
# on this machine without a GPU:
#   tests/bundle/check_bundle.sh --from-build BUILD_DIR   assemble one from a GPU build into a temporary folder, check it, remove it
#   tests/bundle/check_bundle.sh BUNDLE_DIR               check an existing bundle
# Checks, in a private mount namespace where every system file the bundle
# was copied from is hidden (files bound over with /dev/null, folders of
# components and help files with empty tmpfs), and ssh too, as on the GPU
# machine, and from an empty environment (env -i):
#   - the bundle is under 60 MiB;
#   - strata-topo runs; strata-launch -n 2 strata-bench on host memory passes its
#     result check; Open MPI takes its components from the bundle;
#   - libstrata loads the GPU plugin from the bundle (test_gpu_unavailable's
#     reason is the CUDA runtime's, not the plugin's loading);
#   - ldd resolves every ELF file's libraries inside the bundle, except
#     glibc's, the C++ runtime's, the CUDA driver's and NCCL;
#   - gpu-check.sh passes its host steps (but the host figure, a measurement) and reports every GPU step
#     skipped (exit 77 without a device), none failed; its --list shows
#     per_rank_host.sh between mpirun and the program in exactly the
#     multi-rank GPU steps;
#   - with NCCL hidden too, gpu-check.sh still writes its log and JSON and
#     exits 1, its libraries step failing for want of NCCL.
# Exit status: 0 all checks passed, 1 a check failed, 77 the build has no
# GPU backend. Registered with meson as 'gpu-bundle' (suite bundle).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MAX_BYTES=$((60 * 1024 * 1024))
# Libraries that may resolve outside the bundle.
OUTSIDE_OK='^(linux-vdso|ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libutil|libresolv|libstdc\+\+|libgcc_s|libcuda|libnccl)\.so'

if [ "${1:-}" = --from-build ]; then
  build=${2:?--from-build needs a build directory}
  if ! grep -q '#define STRATA_HAVE_CUDA 1' "$build/include/strata/version.hpp"; then
    echo "check_bundle: SKIP: $build has no GPU backend (configure with -Dcuda=enabled)"
    exit 77
  fi
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-bundle-test.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  "$ROOT/scripts/gpu-bundle.sh" --from-build "$build" "$tmp/gpu-bundle"
  bash "$0" "$tmp/gpu-bundle"  # not exec: the trap removes the bundle afterwards
  exit $?
fi

if [ "${1:-}" != --inside ]; then
  bundle=$(cd "${1:?usage: check_bundle.sh --from-build BUILD_DIR | BUNDLE_DIR}" && pwd)
  [ -f "$bundle/manifest.json" ] || { echo "check_bundle: $bundle is not a bundle (no manifest.json)" >&2; exit 1; }
  if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
    exec unshare -m --propagation private bash "$0" --inside "$bundle" hide
  fi
  echo "check_bundle: NOTE: no private mount namespace here (needs root): the system's copies stay visible," \
    "so only ldd and Open MPI's reported paths show that the bundle's own are used"
  exec bash "$0" --inside "$bundle" keep
fi

bundle=$2
failures=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { echo "check_bundle: ok: $*"; }
bad() { echo "check_bundle: FAIL: $*"; failures=$((failures + 1)); }

if [ "$3" = hide ]; then
  # Hide what the bundle copied, as the GPU machine lacks it. Folders of
  # plugins, help files and configuration get an empty tmpfs (the outermost
  # only); library and program files get /dev/null bound over them.
  # Libraries this machine's own python3 and bash load stay visible: the
  # checks below need those two programs (the GPU machine has its own).
  python3 - "$bundle/manifest.json" "$(env -i bash -c 'command -v python3')" "$(command -v bash)" >"$tmp/hide" <<'PY'
import json, os, re, subprocess, sys
sources = json.load(open(sys.argv[1]))["sources"]
needed = set()
for program in sys.argv[2:]:
    text = subprocess.run(["ldd", program], stdout=subprocess.PIPE, text=True).stdout
    needed.update(os.path.realpath(m) for m in re.findall(r"=> (/\S+)", text))
dirs, files = set(), set()
for rel, src in sources.items():
    if rel.startswith(("lib/openmpi/", "pmix/", "share/", "etc/")):
        dirs.add(os.path.dirname(src))
    elif not rel.startswith(("scripts/", "env.sh", "run.sh", "gpu-check.sh")) and src.startswith(("/usr/", "/etc/", "/lib")):
        files.add(os.path.realpath(src))
if os.path.isdir("/usr/lib/x86_64-linux-gnu/hwloc"):
    dirs.add("/usr/lib/x86_64-linux-gnu/hwloc")
for program in ("ssh", "rsh"):  # the GPU machine has no ssh: mpirun must not need it
    for d in ("/usr/bin", "/bin", "/usr/local/bin"):
        if os.path.exists(os.path.join(d, program)):
            files.add(os.path.realpath(os.path.join(d, program)))
kept = []
for d in sorted(dirs, key=len):
    if not any(d == k or d.startswith(k + "/") for k in kept):
        kept.append(d)
for d in kept:
    print("dir", d)
for f in sorted(files):
    if f in needed:
        print("keep", f)
    elif not any(f.startswith(k + "/") for k in kept):
        print("file", f)
PY
  hidden=0
  kept=()
  while read -r kind path; do
    case $kind in
      dir) mount -t tmpfs -o size=1m none "$path" ;;
      file) mount --bind /dev/null "$path" ;;
      keep) kept+=("$(basename "$path")"); continue ;;
    esac
    hidden=$((hidden + 1))
  done <"$tmp/hide"
  ok "hid $hidden system files and folders that the bundle has copies of" \
    "(e.g. $(ldconfig -p | awk '$1 == "libmpi.so.40" {print $NF; exit}') is now empty);" \
    "left visible for python3 and bash: ${kept[*]:-none}"
fi

size=$(python3 -c 'import json, os, sys; b = sys.argv[1]; print(sum(os.path.getsize(os.path.join(b, r)) for r in json.load(open(os.path.join(b, "manifest.json")))["sources"]))' "$bundle")
if [ "$size" -lt "$MAX_BYTES" ]; then ok "size $((size / 1024)) KiB (< 60 MiB)"; else bad "size $size bytes, over 60 MiB"; fi

if out=$(env -i bash "$bundle/run.sh" strata-topo 2>&1) && grep -q '^strata-topo ' <<<"$out"; then
  ok "env -i run.sh strata-topo"
else
  bad "env -i run.sh strata-topo: $out"
fi

if out=$(env -i bash "$bundle/run.sh" strata-launch -n 2 strata-bench -b 8 -e 64k -c 1 --no-progress -J "$tmp/host.json" 2>&1) &&
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(not (d["ranks"] == 2 and d["check"] and d["summary"]["wrong_total"] == 0))' "$tmp/host.json"; then
  ok "env -i run.sh strata-launch -n 2 strata-bench -b 8 -e 64k -c 1: 2 ranks, every value checked, none wrong"
else
  bad "env -i run.sh strata-launch -n 2 strata-bench: $out"
fi

if out=$(env -i bash "$bundle/run.sh" "$bundle/tests/test_gpu_unavailable" 2>&1) && grep -q '^built: 1' <<<"$out" &&
  ! grep -q 'GPU backend plugin' <<<"$out"; then
  ok "env -i run.sh test_gpu_unavailable: the GPU plugin loads from the bundle ($(sed -n 's/.*why: //p' <<<"$out" | head -1))"
else
  bad "env -i run.sh test_gpu_unavailable: the GPU plugin does not load from the bundle: $out"
fi

pkglibdir=$(env -i bash "$bundle/run.sh" ompi_info --parsable --path pkglibdir 2>&1 | sed -n 's/^path:pkglibdir://p')
btls=$(env -i bash "$bundle/run.sh" ompi_info --parsable 2>&1 | sed -n 's/^mca:btl:\([a-z]*\):version:"mca:.*/\1/p' | sort -u | tr '\n' ' ')
if [ "$pkglibdir" = "$bundle/lib/openmpi" ] && grep -q vader <<<"$btls"; then
  ok "Open MPI's components come from the bundle ($pkglibdir; btl: $btls)"
else
  bad "Open MPI's component folder is '$pkglibdir' (btl components found: '$btls'), expected $bundle/lib/openmpi"
fi

# ldd from an empty environment: RUNPATHs alone must find the bundle's
# libraries (run.sh above linked NCCL into nccl/).
elves=0
outside=()
while IFS= read -r -d '' f; do
  head -c 4 "$f" | grep -q 'ELF' || continue
  elves=$((elves + 1))
  while read -r name arrow where _; do
    [ "$arrow" = "=>" ] || continue
    if [ "$where" = not ]; then
      outside+=("${f#"$bundle"/}: $name not found")
    elif ! [[ $name =~ $OUTSIDE_OK ]] && [[ $(readlink -f "$where") != "$bundle"/* ]]; then
      outside+=("${f#"$bundle"/}: $name => $where")
    fi
  done < <(env -i ldd "$f" 2>&1)
done < <(find "$bundle/bin" "$bundle/tests" "$bundle/lib" "$bundle/pmix" -type f -print0)
if [ ${#outside[@]} -eq 0 ]; then
  ok "ldd over $elves ELF files: every library inside the bundle except glibc, libstdc++, libgcc_s, libcuda, libnccl"
else
  bad "ldd: ${#outside[@]} libraries missing or outside the bundle:"
  printf '    %s\n' "${outside[@]}"
fi

# Every step but the host figure: it measures (xring over 64-256 MiB, half
# this check's time on a 2-core machine) and checks nothing of the bundle
# that host-bench does not; --list below still shows its command.
rc=0
env -i bash "$bundle/gpu-check.sh" --out "$tmp/check" --budget 300 --skip '^figure-staged-host-reference$' \
  >"$tmp/check.txt" 2>&1 || rc=$?
if verdict=$(python3 - "$tmp/check/gpu-check.json" <<'PY'
import json, sys
steps = json.load(open(sys.argv[1]))["steps"]
wrong = [f"{s['name']}: {s['status']} ({s['reason']})" for s in steps
         if s["status"] != ("skip" if s["device"] else "pass")]
print(f"{sum(s['device'] for s in steps)} GPU steps skipped, {sum(not s['device'] for s in steps)} host steps passed"
      if not wrong else "; ".join(wrong))
sys.exit(1 if wrong else 0)
PY
) && [ $rc -eq 0 ]; then
  ok "env -i gpu-check.sh: $verdict"
else
  bad "env -i gpu-check.sh (exit $rc): $verdict"
  cat "$tmp/check.txt"
fi

# gpu-check --list: the multi-rank GPU steps run each rank through
# per_rank_host.sh (NCCL_HOSTID per rank or virtual node), the others (host
# memory, `-m host`, among them) not.
if verdict=$(env -i bash "$bundle/gpu-check.sh" --list 2>&1 | python3 -c '
import re, sys
wrapped, wrong = [], []
for line in sys.stdin:
    m = re.match(r"^(\S+)\s+\d+s (\S+): (.*)$", line.rstrip("\n"))
    if not m:
        continue
    phase, name, command = m.groups()
    # mpirun -np N (the session steps) or strata-launch -n N (the tests).
    np = re.search(r"/(?:mpirun .*?-np|strata-launch -n) (\d+) ", command)
    should = bool(np) and int(np.group(1)) > 1 and phase != "preflight" and " -m host " not in command
    has = re.search(r"/(?:mpirun|strata-launch) .* \S+/scripts/per_rank_host\.sh /\S+/(tests|bin)/\S+",
                    command) is not None
    if should != has:
        wrong.append(f"{name}: {command}")
    elif has:
        wrapped.append(name)
names = ", ".join(wrapped)
print("; ".join(wrong) if wrong else f"{len(wrapped)} multi-rank GPU steps wrapped: {names}")
sys.exit(1 if wrong or not wrapped else 0)
'); then
  ok "gpu-check.sh --list: $verdict"
else
  bad "gpu-check.sh --list: per_rank_host.sh missing or misplaced: $verdict"
fi

# Last, as it hides more: a machine without NCCL. env.sh must only warn, and
# gpu-check.sh must go on to write its log and JSON, its libraries step
# failing with the reason. NCCL's folders (ldconfig's and the build's) get an
# empty tmpfs, unless one is a folder the system's own programs load from.
if [ "$3" = hide ]; then
  nccl_dirs=$(python3 - "$bundle/manifest.json" <<'PY'
import json, os, re, subprocess, sys
paths = {json.load(open(sys.argv[1])).get("nccl_at_build") or ""}
paths.update(re.findall(r"libnccl\.so\.2 \(libc6,x86-64\) => (\S+)", subprocess.run(
    ["ldconfig", "-p"], stdout=subprocess.PIPE, text=True).stdout))
print("\n".join(sorted({os.path.dirname(os.path.realpath(p)) for p in paths if p})))
PY
)
  hidden_nccl=yes
  while read -r dir; do
    [ -n "$dir" ] || continue
    if [ -e "$dir/libc.so.6" ] || [ -e "$dir/libstdc++.so.6" ]; then hidden_nccl=no; break; fi
    mount -t tmpfs -o size=1m none "$dir"
  done <<<"$nccl_dirs"
  if [ $hidden_nccl = no ]; then
    echo "check_bundle: NOTE: NCCL sits in a system library folder here ($nccl_dirs): the no-NCCL case is not checked"
  elif found=$(env -i bash -c 'source "$1/env.sh" 2>/dev/null; echo "$STRATA_BUNDLE_NCCL"' _ "$bundle") && [ -n "$found" ]; then
    bad "no-NCCL case: NCCL still found at $found after hiding $nccl_dirs"
  else
    rc=0
    env -i bash "$bundle/gpu-check.sh" --out "$tmp/no-nccl" --budget 300 --only '^(libraries|host-topo)$' \
      >"$tmp/no-nccl.txt" 2>&1 || rc=$?
    if verdict=$(python3 - "$tmp/no-nccl" <<'PY'
import json, os, sys
out = sys.argv[1]
problems = [f"no {name}" for name in ("gpu-check.log", "gpu-check.json") if not os.path.exists(os.path.join(out, name))]
if not problems:
    steps = {s["name"]: s for s in json.load(open(os.path.join(out, "gpu-check.json")))["steps"]}
    lib = steps.get("libraries", {})
    if lib.get("status") != "fail" or "NCCL" not in lib.get("reason", ""):
        problems.append(f"libraries step: {lib.get('status')} ({lib.get('reason')})")
    if "host-topo" not in steps:
        problems.append("gpu-check stopped after the libraries step")
print("; ".join(problems) or f"libraries failed: {lib['reason'][:150]}")
sys.exit(1 if problems else 0)
PY
) && [ $rc -eq 1 ] && grep -q 'strata bundle: no NCCL found' "$tmp/no-nccl.txt"; then
      ok "without NCCL, env -i gpu-check.sh exits 1 with its log and JSON written; $verdict"
    else
      bad "without NCCL, env -i gpu-check.sh (exit $rc): $verdict"
      cat "$tmp/no-nccl.txt"
    fi
  fi
fi

if [ $failures -eq 0 ]; then echo "check_bundle: OK"; else echo "check_bundle: $failures checks failed"; exit 1; fi
