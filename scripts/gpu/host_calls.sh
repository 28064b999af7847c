#!/usr/bin/env bash
# The CUDA runtime and NCCL calls one 8-byte all-reduce on CUDA tensors
# makes on the host, stream-ordered and blocking, with the call check on and
# off, at 2 ranks on the CUDA/NCCL test double (no GPU needed: the double
# names each call it receives; its NCCL traces name the group calls, not the
# collective inside). Counts are rank 0's, per call; polling queries (the
# blocking call's wait, the GPU watcher's looks every 200 us on its own
# thread) are reported apart, since the double's trace does not say which
# thread made a call. The call check's own work is host work (a shared-
# memory round, or one MPI all-reduce across nodes): no CUDA call.
#   scripts/gpu/host_calls.sh [BUILD]   (default build/, configured with CUDA)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
[ -f "$build/tests/gpu/double/libcudart.so.13" ] || {
  echo "host_calls: $build has no CUDA test double (configure with CUDA found)" >&2
  exit 2
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -std=c++20 -O1 -DOMPI_SKIP_MPICXX=1 -o "$work/host_calls" "$root/scripts/gpu/host_calls.cpp" \
  -I"$root/include" -I"$build/include" -I/usr/local/cuda/include $(pkg-config --cflags-only-I ompi 2>/dev/null || true) \
  -L"$build/lib" -lstrata -L/usr/local/cuda/lib64 -lcudart $(pkg-config --libs ompi 2>/dev/null || echo -lmpi) \
  -Wl,-rpath,"$build/lib"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for check in on off; do
  STRATA_CHECK=$check STRATA_FAKE_TRACE=1 STRATA_FAKE_GPUS=2 \
    LD_LIBRARY_PATH="$build/lib:$build/tests/gpu/double" \
    "$build/strata-launch" -n 2 "$work/host_calls" >"$work/trace-$check.txt" 2>&1
  python3 - "$work/trace-$check.txt" "$check" <<'PY'
import collections, re, sys
path, check = sys.argv[1], sys.argv[2]
lines = open(path).read().splitlines()
# The watcher's calls: the queries it makes on its own thread.
watcher = {"cudaEventQuery", "cudaThreadExchangeStreamCaptureMode", "cudaStreamQuery", "ncclCommGetAsyncError"}
for mode in ("ordered", "blocking"):
    inside, counts = False, collections.Counter()
    for line in lines:
        if f"MARK {mode} begin" in line:
            inside = True
        elif f"MARK {mode} end" in line:
            break
        elif inside and line.startswith("strata test double [rank 0 "):
            if ": enqueue " in line:
                counts["(stream operations)"] += 1
                continue
            what = re.fullmatch(r"strata test double \[[^]]*\]: ((cuda|nccl)[A-Za-z]+)", line)
            if what:
                counts[what.group(1)] += 1
    ops = counts.pop("(stream operations)", 0) / 10
    mine = {k: v / 10 for k, v in counts.items() if k not in watcher}
    theirs = {k: v / 10 for k, v in counts.items() if k in watcher}
    print(f"check {check}, {mode}: {sum(mine.values()):.1f} CUDA/NCCL API calls per call ("
          f"{', '.join(f'{k} {v:g}' for k, v in sorted(mine.items(), key=lambda kv: -kv[1]))}), "
          f"{ops:g} stream operations enqueued; polling queries: "
          f"{', '.join(f'{k} {v:g}' for k, v in sorted(theirs.items())) or 'none'}")
PY
done
