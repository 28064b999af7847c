#!/usr/bin/env python3
"""Runs strata-topo under mpirun and checks its output.

usage: check_topo.py LAUNCH NP STRATA_TOPO MODE [ARGS...]
LAUNCH: the build's strata-launch (scripts/launch.py).
MODE: json  - exit 0, stdout one JSON object listing every rank, nodes as
              STRATA_RANKS_PER_NODE implies (ceil(np/k) virtual nodes) or
              one node per host, one plan row per requested size, a GPU
              assignment per rank (STRATA_GPU_MAP=zz: its error per rank)
      text  - exit 0, a node line and a rank line per rank, a plan table
      usage - exit 2 with a one-line error on stderr
      help  - exit 0, usage text on stdout
A hang is bounded by the timeout below (meson's timeout is the outer bound).
"""
import json
import os
import subprocess
import sys


def fail(message, proc=None):
    print(f"check_topo: {message}", file=sys.stderr)
    if proc is not None:
        print(f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}", file=sys.stderr)
    sys.exit(1)


def main():
    launch, np, exe, mode, *args = sys.argv[1:]
    np = int(np)
    command = [launch, "-n", str(np)]
    per_node = os.environ.get("STRATA_RANKS_PER_NODE", "")
    if per_node:
        command += ["--env", "STRATA_RANKS_PER_NODE"]
    gpu_map = os.environ.get("STRATA_GPU_MAP", "")
    if gpu_map:
        command += ["--env", "STRATA_GPU_MAP"]
    command += [exe] + args
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        fail(f"hang: {' '.join(command)} still running after 90 s")

    if mode == "usage":
        if proc.returncode != 2:
            fail(f"expected exit 2, got {proc.returncode}", proc)
        lines = [l for l in proc.stderr.splitlines() if l.startswith("strata-topo:")]
        if len(lines) != 1 or "\n" in lines[0]:
            fail(f"expected one 'strata-topo:' error line, got {lines}", proc)
        return
    if proc.returncode != 0:
        fail(f"exit {proc.returncode}", proc)
    if mode == "help":
        if "--sizes" not in proc.stdout or "--json" not in proc.stdout:
            fail("help text lacks --sizes/--json", proc)
        return

    if mode == "text":
        out = proc.stdout
        for r in range(np):
            if f"rank {r} (local " not in out:
                fail(f"rank {r} missing from the text output", proc)
        if "node 0: " not in out or "all_reduce plan" not in out:
            fail("text output lacks the node block or the plan", proc)
        return

    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        fail(f"stdout is not one JSON object: {e}", proc)
    topo = doc["topology"]
    ranks = [r["rank"] for r in topo["ranks"]]
    if ranks != list(range(np)) or doc["ranks"] != np:
        fail(f"ranks listed: {ranks}, expected 0..{np - 1}", proc)
    nodes = topo["nodes"]
    if sum(len(n["ranks"]) for n in nodes) != np:
        fail("node sizes do not sum to the number of ranks", proc)
    if per_node:
        k = int(per_node)
        if not topo["virtual_nodes"] or len(nodes) != -(-np // k):
            fail(f"expected {-(-np // k)} virtual nodes, got {len(nodes)}", proc)
        for r in topo["ranks"]:
            if r["node"] != r["rank"] // k or r["local_rank"] != r["rank"] % k:
                fail(f"rank {r['rank']}: node {r['node']} local {r['local_rank']}", proc)
    else:
        hosts = sorted({r["hostname"] for r in topo["ranks"]})
        if topo["virtual_nodes"] or len(nodes) != len(hosts):
            fail(f"expected one node per host ({hosts}), got {len(nodes)}", proc)
    for r in topo["ranks"]:
        if not r["bound_cores"] or not r["numa"]:
            fail(f"rank {r['rank']} has no bound cores or NUMA domain", proc)
        gpu = r["gpu"]
        if not gpu["how"] or (gpu["cuda_device"] >= 0 and not gpu["pci_bus_id"]):
            fail(f"rank {r['rank']}: incomplete GPU assignment {gpu}", proc)
        # A malformed map is reported per rank (never a crash), on any machine.
        if gpu_map == "zz" and (gpu["cuda_device"] != -1 or "STRATA_GPU_MAP = 'zz'" not in gpu["how"]):
            fail(f"rank {r['rank']}: STRATA_GPU_MAP=zz not reported: {gpu}", proc)
    plans = doc["all_reduce"]
    if not plans or any(not p["algorithm"] or p["bytes"] < 0 for p in plans):
        fail(f"bad plan rows: {plans}", proc)
    if "--sizes" in args:
        wanted = args[args.index("--sizes") + 1].split(",")
        if [p["size"] for p in plans] != wanted:
            fail(f"plan sizes {[p['size'] for p in plans]}, expected {wanted}", proc)
    # The GPU plan per size, for the same sizes (NCCL where the control plane allows it).
    cuda = doc.get("cuda_all_reduce")
    if not cuda or [p["bytes"] for p in cuda] != [p["bytes"] for p in plans] or any(not p["algorithm"] for p in cuda):
        fail(f"bad CUDA plan rows: {cuda}", proc)


if __name__ == "__main__":
    main()
