#!/usr/bin/env python3
"""The lent-GPU session's figures (scripts/gpu/session.py runs the steps):
what each strata-bench JSON and NCCL's INFO lines say, the three targets
the session is for, and the text summary. This file is the bundle's
scripts/session_report.py.

Targets, one entry per measurement (docs/BENCHMARKING.md, "The lent-GPU
session"):
  host cost of an 8 B stream-ordered call at 2 ranks     <= 5 us  (a-stream-check-on/off: host_us at 8 B)
  per-call overhead over raw NCCL at 2 ranks, 8 B        <= 2 us  (a-*: overhead_us; stream-ordered also host_overhead_us)
  overlap from 1 MiB                                     >= 90 %  (d-overlap-np2, d-overlap-np1: the lowest overlap_pct at >= 1 MiB)
A figure from a simulated device (the test double) is no figure.
"""
import json
import re

# The targets the figures are held against (docs/BENCHMARKING.md, "The
# lent-GPU session").
TARGET_HOST_US = 5.0
TARGET_OVERHEAD_US = 2.0
TARGET_OVERLAP_PCT = 90.0
OVERLAP_FROM_BYTES = 1 << 20

ROW_KEYS = ("bytes", "time_us", "host_us", "device_us", "algbw", "busbw", "wrong", "overhead_us", "host_overhead_us",
            "device_overhead_us", "ratio", "t_comm_us", "t_compute_us", "t_both_us", "overlap_pct")


def bench_figures(path):
    with open(path) as f:
        doc = json.load(f)
    rows = []
    for r in doc.get("rows", []):
        row = {k: r[k] for k in ROW_KEYS if k in r}
        for k in ("time_us", "host_us", "device_us"):
            if k in r.get("baseline", {}):
                row["baseline_" + k] = r["baseline"][k]
        rows.append(row)
    return {"simulated": doc.get("simulated"), "simulated_device": doc.get("simulated_device"),
            "wrong_total": doc.get("summary", {}).get("wrong_total"), "ranks": doc.get("ranks"),
            "devices": doc.get("devices"), "algorithm": doc.get("algorithm"), "baseline": doc.get("baseline"),
            "stream_ordered": doc.get("stream_ordered"), "rows": rows}


def nccl_transport(output):
    """What NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET said about how the
    ranks were connected."""
    lines = [line.strip() for line in output.splitlines() if "NCCL INFO" in line]
    found = {
        "nccl_version": next(iter(re.findall(r"NCCL version (\S+)", output)), None),
        "network": sorted(set(re.findall(r"Using network (\S+)", output))),
        "channels_via": sorted(set(re.findall(r"\bvia (\S+)", output))),
        "nodes": sorted(set(re.findall(r"nRanks (\d+) nNodes (\d+)", output))),
    }
    keep = [line.split("NCCL INFO", 1)[1].strip() for line in lines
            if re.search(r"NET/|Using network|\bvia\b|nNodes|NCCL_P2P|NCCL_SHM", line)]
    found["lines"] = sorted(set(keep))[:30]
    found["info_lines"] = len(lines)
    return found


def bindings(output):
    """report_binding.sh's lines: each rank's CPUs, and whether every rank
    had CPUs of its own."""
    masks = dict(re.findall(r"^strata-binding: rank (\d+) cpus (\S+)", output, re.M))
    return {"ranks": len(masks), "distinct": len(set(masks.values())) == len(masks) if masks else None,
            "by_rank": {int(r): m.strip() for r, m in sorted(masks.items(), key=lambda kv: int(kv[0]))}}


def row_at(figures, size):
    return next((r for r in figures.get("rows", []) if r["bytes"] == size), None)


def speak(value, unit="us", decimals=2):
    return "-" if value is None else f"{value:.{decimals}f} {unit}".strip()


def targets(records):
    """The three targets from the steps' figures, one entry per
    measurement (check on and off, stream-ordered and blocking)."""
    by_name = {r["name"]: r for r in records}
    out = []

    def entry(target, step, check, value, bound, better, measure, note=None):
        rec = by_name.get(step, {})
        fig = rec.get("figures", {})
        if value is None:
            why = note or (f"{step}: {rec.get('status', 'not run')}"
                           + (f" ({rec['reason']})" if rec.get("reason") else "")
                           + ("; simulated device: no figure" if fig.get("simulated") else ""))
            met = None
        else:
            met = value <= bound if better == "<=" else value >= bound
            why = note
        out.append({"target": target, "step": step, "check": check, "measure": measure, "value": value,
                    "bound": f"{better} {bound:g}", "met": met, "note": why})

    for check in ("on", "off"):
        step = f"a-stream-check-{check}"
        fig = by_name.get(step, {}).get("figures", {})
        row = row_at(fig, 8) if not fig.get("simulated") else None
        entry("host cost of an 8 B stream-ordered call, 2 ranks (us)", step, check,
              row.get("host_us") if row else None, TARGET_HOST_US, "<=",
              "host_us at 8 B: the call until it returns, median of the slowest rank")
    for form in ("stream", "blocking"):
        for check in ("on", "off"):
            step = f"a-{form}-check-{check}"
            fig = by_name.get(step, {}).get("figures", {})
            row = row_at(fig, 8) if not fig.get("simulated") else None
            entry(f"per-call overhead over raw NCCL, 8 B, 2 ranks, {'stream-ordered' if form == 'stream' else 'blocking'}"
                  " (us)", step, check, row.get("overhead_us") if row else None, TARGET_OVERHEAD_US, "<=",
                  "overhead_us at 8 B: strata's call until its result is in place minus ncclAllReduce's "
                  "(each followed by a wait for its stream)")
            if form == "stream":
                entry("  the same, host side only (us)", step, check,
                      row.get("host_overhead_us") if row else None, TARGET_OVERHEAD_US, "<=",
                      "host_overhead_us at 8 B: strata's call until it returns minus ncclAllReduce's")
    for step in ("d-overlap-np2", "d-overlap-np1"):
        fig = by_name.get(step, {}).get("figures", {})
        rows = [r for r in fig.get("rows", []) if r["bytes"] >= OVERLAP_FROM_BYTES and r.get("overlap_pct") is not None]
        worst = min(rows, key=lambda r: r["overlap_pct"]) if rows else None
        entry(f"overlap from 1 MiB, {step[-3:]} (%, the lowest over the sizes)", step, "on",
              worst["overlap_pct"] if worst else None, TARGET_OVERLAP_PCT, ">=",
              "min over sizes >= 1 MiB of 100 x (comm + compute - both) / min(comm, compute)",
              note=f"lowest at {worst['bytes']} B" if worst else None)
    return out


def summarise_parts(records):
    """A few lines per part beyond the targets: (b)'s polling cost, (c)'s
    outcome, (e)'s ratios, (f)'s counts."""
    lines = []
    for r in records:
        fig = r.get("figures", {})
        if r["status"] == "skip" or not fig:
            continue
        if r["part"] == "b" and fig.get("rows") and not fig.get("simulated"):
            over = [(row["bytes"], row.get("overhead_us")) for row in fig["rows"] if row.get("overhead_us") is not None]
            if over:
                size, worst = max(over, key=lambda x: x[1])
                lines.append(f"{r['name']}: overhead vs NCCL {over[0][1]:+.2f} us at {over[0][0]} B, "
                             f"{over[-1][1]:+.2f} us at {over[-1][0]} B, largest {worst:+.2f} us at {size} B")
        elif r["part"] == "d" and fig.get("rows") and not fig.get("simulated"):
            lines.append(f"{r['name']}: overlap " + ", ".join(
                f"{speak(row.get('overlap_pct'), '%', 1)} at {row['bytes'] >> 20} MiB" for row in fig["rows"]))
        elif r["part"] == "c":
            lines.append(f"{r['name']}: {fig.get('abort') or 'no ABORT: line'} ({r['seconds']} s)")
        elif r["part"] == "e" and fig.get("rows"):
            ratios = [(row["bytes"], row["ratio"]) for row in fig["rows"] if row.get("ratio") is not None]
            if ratios:
                lo, hi = min(ratios, key=lambda x: x[1]), max(ratios, key=lambda x: x[1])
                slower = sum(1 for _, x in ratios if x < 1)
                shared = "" if fig.get("bindings", {}).get("distinct") is not False else "; ranks SHARED cores"
                lines.append(f"{r['name']}: strata vs MPI_Allreduce, MPI time / strata time from {lo[1]:.2f} "
                             f"(at {lo[0]} B) to {hi[1]:.2f} (at {hi[0]} B); strata slower at {slower} of "
                             f"{len(ratios)} sizes; wrong values {fig.get('wrong_total')}{shared}")
        elif r["part"] == "a" and fig.get("transport"):
            t = fig["transport"]
            lines.append(f"{r['name']}: NCCL {t.get('nccl_version') or '?'}, network {', '.join(t['network']) or '-'}, "
                         f"channels via {', '.join(t['channels_via']) or '-'}")
        elif r["part"] == "f" and fig.get("counts"):
            c = fig["counts"]
            lines.append(f"{r['name']}: {c.get('pass', 0)} passed, {c.get('fail', 0)} failed, {c.get('skip', 0)} "
                         f"skipped{'; failed: ' + ', '.join(fig['failed']) if fig.get('failed') else ''}")
    return lines


def text_summary(summary):
    out = [f"strata GPU session ({summary['seconds']} s of a {summary['budget_s']:.0f} s budget; "
           f"GPU: {summary['gpu']['why']})", ""]
    for r in summary["steps"]:
        out.append(f"  {r['status']:4} {r['seconds'] or 0:6.1f}s  {r['name']:24} {r['reason'][:100]}")
    out += ["", f"{'target':68} {'check':5} {'measured':>12} {'bound':>7}  verdict"]
    for t in summary["targets"]:
        unit = "%" if "%" in t["target"] else "us"
        verdict = {True: "met", False: "NOT met", None: "no figure"}[t["met"]]
        note = f" ({t['note']})" if t["note"] else ""
        out.append(f"{t['target']:68} {t['check']:5} {speak(t['value'], unit):>12} {t['bound']:>7}  {verdict}{note}")
    parts = summarise_parts(summary["steps"])
    if parts:
        out += [""] + parts
    c = summary["counts"]
    out += ["", f"{c['pass']} passed, {c['fail']} failed, {c['skip']} skipped"]
    return "\n".join(out) + "\n"
