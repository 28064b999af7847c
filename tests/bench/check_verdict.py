#!/usr/bin/env python3
"""bench.sh's verdict (scripts/bench_verdict.py) on synthetic results files.

  check_verdict.py SOURCE_ROOT

Each case writes a strata-bench JSON with known ratios and checks the line:
the range over every size (slowest and fastest ratio, each with its size),
where strata is slower, and the correctness note; a simulated device gets
no speed comparison; a file that is not a result is one line, exit 1.
"""
import json
import pathlib
import subprocess
import sys
import tempfile

VERDICT = pathlib.Path(sys.argv[1]) / "scripts" / "bench_verdict.py"
failures = []


def result(ratios, wrong=0, simulated=False, baseline="MPI_Allreduce"):
    """A strata-bench JSON: one row per (bytes, ratio); ratio None = no baseline."""
    rows = []
    for bytes_, ratio in ratios:
        row = {"bytes": bytes_, "algorithm": "pscpu", "busbw": 1.5, "ratio": ratio}
        if ratio is not None:
            row["baseline"] = {"busbw": 1.0}
        rows.append(row)
    return {"algorithm": "auto", "ranks": 3, "baseline": baseline if ratios[0][1] is not None else None,
            "simulated": simulated, "simulated_device": "strata test double (simulated GPU 0)" if simulated else None,
            "rows": rows, "summary": {"wrong_total": wrong}}


def verdict(data):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        if isinstance(data, str):
            f.write(data)
        else:
            json.dump(data, f)
    run = subprocess.run([sys.executable, str(VERDICT), f.name], capture_output=True, text=True)
    pathlib.Path(f.name).unlink()
    return run


def expect(name, run, status, *parts):
    text = (run.stdout + run.stderr).strip()
    lines = text.splitlines()
    missing = [p for p in parts if p not in text]
    if run.returncode != status or len(lines) != 1 or missing:
        print(f"FAIL {name}: exit {run.returncode} (want {status}), {len(lines)} line(s), missing {missing}:\n  {text}")
        failures.append(name)
    else:
        print(f"ok   {name}: {text}")


# 3 ranks as measured on a 2-core machine: slower below 4 KiB, faster above.
sweep = [(8 << k, r) for k, r in enumerate([0.6, 0.5, 0.45, 0.4, 0.345, 0.5, 0.7, 0.8, 0.9, 1.2, 1.5, 2.0])]
sweep += [(64 << 20, 4.36)]
expect("mixed", verdict(result(sweep)), 0,
       "strata (auto) on 3 ranks vs MPI_Allreduce, 13 sizes from 8 B to 64 MiB:",
       "from 2.90x slower (at 128 B) to 4.36x faster (at 64 MiB)",
       "slower at 9 of 13 sizes (8 B-2 KiB)", "all results correct")
expect("two losing stretches", verdict(result([(8, 0.9), (16, 1.1), (32, 0.8), (64, 0.7), (128, 1.3)])), 0,
       "slower at 3 of 5 sizes (8 B, 32 B-64 B)")
expect("faster everywhere", verdict(result([(1024, 1.1), (1 << 20, 3.0)])), 0,
       "from 1.10x faster (at 1 KiB) to 3.00x faster (at 1 MiB); faster at every size")
expect("slower everywhere", verdict(result([(1024, 0.5), (1 << 20, 0.8)])), 0,
       "from 2.00x slower (at 1 KiB) to 1.25x slower (at 1 MiB); slower at every size")
expect("one size", verdict(result([(102228128, 1.5)])), 0, "at 97.5 MiB: 1.50x faster")
expect("wrong values", verdict(result([(8, 1.0), (16, 1.0)], wrong=7)), 0, "7 WRONG values")
expect("no baseline", verdict(result([(8, None), (64 << 20, None)])), 0, "1.50 GB/s busbw at 64 MiB")
expect("simulated device", verdict(result([(8, None)], simulated=True)), 0,
       "simulated device (strata test double (simulated GPU 0)): no bandwidth and no speed comparison")
expect("not a result", verdict(""), 1, "not a strata-bench result")

print(f"check_verdict: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
