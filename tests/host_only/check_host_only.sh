#!/usr/bin/env bash
# The host-only build check, run in a build configured without the GPU
# backend (-Dcuda=disabled, or no CUDA found): in CI that is the sanitizer
# pass's build (scripts/sanitize.sh), which is host-only, so the main pass
# does not pay for a third configuration. It checks that
#   - the library needs neither cudart nor NCCL (readelf NEEDED), and no GPU
#     plugin (libstrata_gpu.so) is built,
#   - version.hpp says STRATA_HAVE_CUDA 0,
#   - test_gpu_unavailable passes there (built() false, a reason saying the
#     build has no GPU backend, and make_backend throws Unavailable).
#   check_host_only.sh BUILD
set -euo pipefail
build=$1
start=$(date +%s)

status=0
library=$(ls "$build"/lib/libstrata.so.*.*.* | head -1)
if readelf -d "$library" | grep -Eq 'NEEDED.*(cudart|nccl)'; then
  echo "FAIL: the host-only library links CUDA or NCCL:"; readelf -d "$library" | grep NEEDED; status=1
else
  echo "ok: $(basename "$library") needs neither cudart nor NCCL"
fi
if ls "$build"/lib/libstrata_gpu.so* >/dev/null 2>&1; then
  echo "FAIL: the host-only build made a GPU plugin:"; ls "$build"/lib/libstrata_gpu.so*; status=1
else
  echo "ok: no GPU plugin (libstrata_gpu.so) in the host-only build"
fi
if grep -q '#define STRATA_HAVE_CUDA 0' "$build/include/strata/version.hpp"; then
  echo "ok: version.hpp says STRATA_HAVE_CUDA 0"
else
  echo "FAIL: version.hpp does not say STRATA_HAVE_CUDA 0"; status=1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if output=$("$build/tests/gpu/test_gpu_unavailable" 2>&1) && grep -q "built: 0" <<<"$output" &&
  grep -q "has no GPU backend" <<<"$output"; then
  echo "ok: test_gpu_unavailable passes in the host-only build"
else
  echo "FAIL: test_gpu_unavailable in the host-only build:"; echo "$output"; status=1
fi
echo "host-only build check took $(( $(date +%s) - start )) s"
exit $status
