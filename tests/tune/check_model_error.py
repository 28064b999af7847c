#!/usr/bin/env python3
"""scripts/model_error.py on synthetic sweeps whose errors are known.

  check_model_error.py SOURCE_ROOT

Three sweeps of two plans at 8 KiB (below --from), 64 KiB and 1 MiB; a
plan without a prediction; a bad file. Checks each count the script
prints: per sweep, the medians over the sweeps, the machine against
itself, and --from / --within.
"""
import pathlib
import subprocess
import sys
import tempfile

SCRIPT = pathlib.Path(sys.argv[1]) / "scripts" / "model_error.py"
failures = []


def sweep(rows):
    """rows: (bytes, plan, time_us, model_us or None)."""
    text = "bytes,plan,iters,time_us,model_us\n"
    for b, plan, t, m in rows:
        text += f"{b},{plan},10,{t},{'' if m is None else m}\n"
    f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
    f.write(text)
    f.close()
    return f.name


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


def expect(what, condition, output):
    if not condition:
        failures.append(f"{what}\n--- output ---\n{output}")


# Errors (model / time - 1) per sweep, 64 KiB and 1 MiB:
#   xring: +10% +10% | +40% -30% | +20% +20%   -> medians +20%, +10%: both within 25%
#   rechd: -50% +0%  | -50% +0%  | -50% +0%    -> medians -50%, 0%: one within
# 8 KiB is off by 100% everywhere and must not count; `nccl` has no prediction.
def rows(xr64, xr1m, rd64, rd1m, time_scale=1.0):
    t = 100 * time_scale
    return [(8192, "xring", t, 2 * t), (8192, "rechd", t, 2 * t),
            (65536, "xring", t, t * (1 + xr64)), (1 << 20, "xring", t, t * (1 + xr1m)),
            (65536, "rechd", t, t * (1 + rd64)), (1 << 20, "rechd", t, t * (1 + rd1m)),
            (65536, "nccl", t, None)]


a = sweep(rows(0.10, 0.10, -0.50, 0.0))
b = sweep(rows(0.40, -0.30, -0.50, 0.0, time_scale=1.5))  # every time 1.5x sweep a's
c = sweep(rows(0.20, 0.20, -0.50, 0.0))

out = run(a, b, c)
text = out.stdout + out.stderr
expect("three sweeps exit 0", out.returncode == 0, text)
expect("sweep a: 3 of 4 within (rechd 64 KiB -50% is not)", f"{a}: 3 of 4" in text, text)
expect("sweep b: 1 of 4 within (+40%, -30%, -50% are not)", f"{b}: 1 of 4" in text, text)
expect("medians: 3 of 4 within", "median error over 3 sweeps: 3 of 4 pairs within 25%" in text, text)
expect("median row xring: +20% +10%", any(l.split()[:3] == ["xring", "+20%", "+10%"] for l in text.splitlines()), text)
expect("median row rechd: -50% +0%", any(l.split()[:3] == ["rechd", "-50%", "+0%"] for l in text.splitlines()), text)
expect("the 8 KiB column is not shown", "8 KiB" not in text, text)
# Times: b is 1.5x a and c at every size -> 0 of 5 pairs (the nccl row has a time too); a and c agree.
expect("a / b: none agree", f"{a} / {b}: 0 of 5" in text, text)
expect("a / c: all agree", f"{a} / {c}: 5 of 5" in text, text)

out = run(a, "--within", "0.6")
expect("--within 0.6: 4 of 4", f"{a}: 4 of 4" in out.stdout, out.stdout + out.stderr)
out = run(a, "--from", "1M")
expect("--from 1M: 2 of 2", f"{a}: 2 of 2" in out.stdout, out.stdout + out.stderr)
out = run(a, "--from", "8K")
expect("--from 8K: 3 of 6 (8 KiB off by 100%)", f"{a}: 3 of 6" in out.stdout, out.stdout + out.stderr)
out = run(a, b, "--markdown")
expect("--markdown table", "| `xring` |" in out.stdout and "|---|" in out.stdout, out.stdout + out.stderr)

bad = sweep([])
out = run(bad)
expect("an empty sweep: exit 2, one line", out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
       and "not a strata-tune sweep" in out.stderr, out.stdout + out.stderr)
out = run(str(pathlib.Path(a).with_suffix(".missing")))
expect("a missing file: exit 2", out.returncode == 2 and "cannot read" in out.stderr, out.stdout + out.stderr)
out = run(a, "--from", "lots")
expect("a bad size: exit 2 (argparse)", out.returncode == 2 and "not a size" in out.stderr, out.stdout + out.stderr)

for f in failures:
    print("FAIL:", f)
print(f"{'ok' if not failures else 'FAILED'}: model_error.py, {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
