#!/usr/bin/env python3
"""Check STRATA_TRACE files against the Chrome trace-event format's rules.

  check_trace.py [--ranks N] [--expect-span NAME]... FILE...

Each FILE is one rank's trace, or a merged file (otherData.merged: the
ranks' events together, otherData.per_rank giving each rank's data; every
check below then holds per rank, and every rank made the same calls in
the same order). Checked, per file: valid JSON with a
traceEvents list, displayTimeUnit and otherData (clock offset and its
uncertainty, dropped_events); every event has name, ph, ts, pid and tid;
complete events ("X") have dur >= 0 and args; spans on one tid nest
properly (a span either contains another or is disjoint from it); every pid
is the file's rank (otherData.rank), and a process_name metadata event
names it "rank N (host)". When FILE.expected exists (written by
trace_calls), the top-level call spans (collective names) must be exactly
the calls listed there, in order, with the outcome listed; a failed call's
span carries its error. --ranks N: the files' ranks must be 0..N-1, each
once. --expect-span NAME: some file has a span named NAME.

Exit 0 when every check passes, 1 with one line per failure.
"""
import argparse
import json
import sys

CALLS = {"all_reduce", "reduce", "broadcast", "batch_all_reduce", "batch_reduce", "batch_broadcast"}


def check_file(path, failures):
    def fail(message):
        failures.append(f"{path}: {message}")

    try:
        with open(path) as f:
            trace = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"not readable JSON: {e}")
        return None
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        fail("no traceEvents list")
        return None
    if trace.get("displayTimeUnit") not in ("ns", "ms"):
        fail(f"displayTimeUnit = {trace.get('displayTimeUnit')!r}")
    other = trace.get("otherData", {})
    if not other.get("merged"):
        return [check_rank(path, trace["traceEvents"], other, fail)]
    per_rank = other.get("per_rank")
    if not isinstance(per_rank, list) or len(per_rank) != other.get("ranks"):
        fail(f"merged: per_rank {per_rank!r} does not list otherData.ranks = {other.get('ranks')} ranks")
        return None
    results = []
    for data in per_rank:
        events = [e for e in trace["traceEvents"] if e.get("pid") == data.get("rank")]
        results.append(check_rank(path, events, data, lambda m, r=data.get("rank"): fail(f"rank {r}: {m}")))
    stray = [e for e in trace["traceEvents"] if e.get("pid") not in {d.get("rank") for d in per_rank}]
    if stray:
        fail(f"merged: {len(stray)} event(s) of no listed rank, e.g. {stray[0]}")
    calls = [r[2] for r in results if r]
    if any(c != calls[0] for c in calls):
        fail(f"merged: the ranks' call spans differ: {calls}")
    return results


def check_rank(path, events, other, fail):
    """One rank's events and otherData; returns (rank, span names, call names)."""
    for key in ("rank", "clock_offset_us", "clock_uncertainty_us", "dropped_events", "events"):
        if key not in other:
            fail(f"otherData has no {key}")
    rank = other.get("rank")
    spans = []
    named = False
    for i, e in enumerate(events):
        missing = [k for k in ("name", "ph", "ts", "pid", "tid") if k not in e]
        if missing:
            fail(f"event {i} lacks {missing}: {e}")
            continue
        if e["pid"] != rank:
            fail(f"event {i} has pid {e['pid']}, the file's rank is {rank}")
        if not isinstance(e["ts"], (int, float)):
            fail(f"event {i}: ts is not a number")
        if e["ph"] == "M":
            if e["name"] == "process_name":
                named = e.get("args", {}).get("name", "").startswith(f"rank {rank} (")
        elif e["ph"] == "X":
            if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
                fail(f"event {i} ({e['name']}): dur = {e.get('dur')!r}")
                continue
            if not isinstance(e.get("args"), dict):
                fail(f"event {i} ({e['name']}): no args object")
            spans.append(e)
        else:
            fail(f"event {i}: unexpected ph {e['ph']!r}")
    if not named:
        fail(f"no process_name metadata event naming 'rank {rank} (host)'")
    if other.get("events") != len(spans):
        fail(f"otherData.events = {other.get('events')}, the file holds {len(spans)} spans")

    # Nesting, per tid: sorted by start (longer first on a tie), each span
    # must end within every open span it starts in.
    by_tid = {}
    for e in spans:
        by_tid.setdefault(e["tid"], []).append(e)
    top_level = []
    for tid, events in by_tid.items():
        events.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_spans = []
        for e in events:
            start, end = e["ts"], e["ts"] + e["dur"]
            while open_spans and open_spans[-1]["ts"] + open_spans[-1]["dur"] <= start + 1e-9:
                open_spans.pop()
            if open_spans:
                parent = open_spans[-1]
                if end > parent["ts"] + parent["dur"] + 1e-6:
                    fail(f"tid {tid}: span {e['name']} [{start}, {end}] overlaps {parent['name']} "
                         f"[{parent['ts']}, {parent['ts'] + parent['dur']}] without nesting")
            elif e["name"] in CALLS:
                top_level.append(e)
            open_spans.append(e)
    top_level.sort(key=lambda e: e["ts"])
    for e in top_level:
        args = e["args"]
        for key in ("bytes", "dtype", "algorithm", "outcome"):
            if key not in args:
                fail(f"call span {e['name']} at {e['ts']} has no {key} in args")
        if args.get("outcome", "ok") != "ok" and not args.get("error"):
            fail(f"failed call span {e['name']} at {e['ts']} does not carry its error")

    try:
        with open(path.removesuffix(".after-failure") + ".expected") as f:
            expected = [line.split() for line in f if line.strip()]
    except OSError:
        expected = None
    if expected is not None:
        got = [[e["name"], e["args"].get("outcome")] for e in top_level]
        if path.endswith(".after-failure"):  # written at the timeout: the calls up to it
            cut = next((i + 1 for i, (_, outcome) in enumerate(expected) if outcome == "DeadlineExceeded"), None)
            if cut is None:
                fail("a snapshot after a failure, but no call failed with DeadlineExceeded")
            expected = expected[:cut or 0]
        if got != expected:
            fail(f"call spans {got}, the program made {expected}")
    return rank, [e["name"] for e in spans], [e["name"] for e in top_level]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int)
    parser.add_argument("--expect-span", action="append", default=[])
    parser.add_argument("files", nargs="+")
    options = parser.parse_args()
    failures = []
    ranks, names = [], set()
    for path in options.files:
        for result in check_file(path, failures) or []:
            if result:
                ranks.append(result[0])
                names.update(result[1])
    if options.ranks is not None and sorted(set(ranks)) != list(range(options.ranks)):
        failures.append(f"ranks {sorted(ranks)}, expected 0..{options.ranks - 1}")
    for name in options.expect_span:
        if name not in names:
            failures.append(f"no span named {name!r} in any file (names: {sorted(names)})")
    for line in failures:
        print(line)
    if not failures:
        print(f"check_trace: {len(options.files)} file(s) valid")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
