#!/usr/bin/env python3
"""Check that strata's layers point one way.

  scripts/check_layers.py [--graph] [ROOT]

The library is layered by folder (lib/meson.build and docs/DESIGN.md draw
it). A file may include headers of its own folder and of folders in a LOWER
layer, never of a higher one, and never of a sibling folder of its own layer.
The GPU plugin's folders (PLUGIN, under lib/gpu_plugin: libstrata_gpu.so, which libstrata loads at
run time) sit above the seam they implement (lib/gpu) and may include it and
what lies below it; no folder of libstrata may include them, whatever its
layer, and no app but the white-box ones may. api includes neither host nor
gpu (FORBIDDEN): it validates and hands calls to exec, which runs them. Public headers
(include/strata/) are the contract every layer may use; they include only
each other. Apps and tests use the public headers; tests may also look
inside (white-box) but apps may not.

Exit 0 when every #include line keeps the rule, 1 with one line per
violation (file:line, the include, and which layers it crosses). --graph
prints the folder-to-folder include counts as well.
"""
import collections
import pathlib
import re
import sys

# Bottom to top. Folders in one tuple are siblings of one layer: they may not
# include each other.
LAYERS = [
    ("util",),
    ("model",),
    ("plan",),
    ("topo",),
    ("host",),
    ("gpu",),
    ("gpu_plugin/cuda",),
    ("gpu_plugin/nccl",),
    ("exec",),
    ("api",),
    ("capi",),
    ("interpose",),
]
RANK = {folder: rank for rank, folders in enumerate(LAYERS) for folder in folders}
# The GPU plugin's folders (libstrata_gpu.so): only plugin folders, tests and
# WHITE_BOX_APPS include them.
PLUGIN = {"gpu_plugin/cuda", "gpu_plugin/nccl"}
# Folders that may not include some lower layers all the same: api takes
# calls and hands them to exec, which runs them over host and GPU memory;
# api reaching into host or gpu would make a second place where calls run.
FORBIDDEN = {"api": {"host": "api hands calls to exec (exec::Executor), which alone runs them over host memory",
                     "gpu": "api hands calls to exec (exec::Executor), which alone runs them over the GPU"}}
# Apps that measure the library's internals and so may include them.
WHITE_BOX_APPS = {"apps/gpu-kernels": "times strata's own CUDA kernels against a device copy"}
SOURCES = (".cpp", ".hpp", ".h", ".cu", ".cuh", ".def")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(parts):
    """The layer folder of a path under lib/ (or an include target), as parts: its first folder, or the
    plugin's two (gpu_plugin/cuda)."""
    return "/".join(parts[:2]) if parts[0] == "gpu_plugin" and len(parts) > 2 else parts[0]


def includes(path):
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        match = INCLUDE.match(line)
        if match:
            yield number, match.group(1)


def check(root):
    problems, edges = [], collections.Counter()
    lib = root / "lib"
    for path in sorted(lib.rglob("*")):
        if path.suffix not in SOURCES or not path.is_file():
            continue
        folder = folder_of(path.relative_to(lib).parts)
        if folder not in RANK:
            problems.append(f"{path.relative_to(root)}: folder lib/{folder} is in no layer (add it to LAYERS)")
            continue
        for number, target in includes(path):
            head = folder_of(target.split("/"))
            if head == "strata":  # public headers: the contract, allowed everywhere
                continue
            if head not in RANK:
                continue  # a sibling file of the same folder, or a generated header
            edges[(folder, head)] += 1
            if head == folder:
                continue
            if head in FORBIDDEN.get(folder, {}):
                problems.append(f"{path.relative_to(root)}:{number}: includes \"{target}\": "
                                f"lib/{folder} must not include lib/{head}: {FORBIDDEN[folder][head]}")
            elif head in PLUGIN and folder not in PLUGIN:
                problems.append(f"{path.relative_to(root)}:{number}: includes \"{target}\": "
                                f"lib/{folder} is part of libstrata, which must not include the GPU plugin's "
                                f"lib/{head} (libstrata_gpu.so, loaded at run time through lib/gpu/plugin.hpp)")
            elif RANK[head] > RANK[folder]:
                problems.append(f"{path.relative_to(root)}:{number}: includes \"{target}\": "
                                f"lib/{folder} (layer {RANK[folder]}) must not include lib/{head} "
                                f"(layer {RANK[head]}, higher)")
            elif RANK[head] == RANK[folder]:
                problems.append(f"{path.relative_to(root)}:{number}: includes \"{target}\": "
                                f"lib/{folder} and lib/{head} are siblings of one layer")
    for path in sorted((root / "include" / "strata").glob("*")):
        if path.suffix not in SOURCES + (".in",):
            continue
        for number, target in includes(path):
            if not target.startswith("strata/"):
                problems.append(f"{path.relative_to(root)}:{number}: public header includes internal \"{target}\"")
    for path in sorted((root / "apps").rglob("*")):
        if path.suffix not in SOURCES or str(path.parent.relative_to(root)) in WHITE_BOX_APPS:
            continue
        for number, target in includes(path):
            if folder_of(target.split("/")) in RANK:
                problems.append(f"{path.relative_to(root)}:{number}: app includes library internal \"{target}\"; "
                                f"apps use the public API (include/strata)")
    return problems, edges


def main(argv):
    graph = "--graph" in argv
    args = [a for a in argv if a != "--graph"]
    root = pathlib.Path(args[0] if args else pathlib.Path(__file__).resolve().parent.parent)
    problems, edges = check(root)
    if graph:
        for (src, dst), count in sorted(edges.items(), key=lambda e: (RANK[e[0][0]], RANK[e[0][1]])):
            if src != dst:
                print(f"{src:>15} -> {dst:<15} {count}")
    for problem in problems:
        print(problem)
    print(f"check_layers: {len(problems)} include(s) against the layering")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
