#!/usr/bin/env python3
"""Adds the lent-GPU session (scripts/gpu/session.sh, session.py,
session_report.py) to a GPU bundle that scripts/gpu/assemble.py made, with
everything it runs that the bundle may lack. Called by scripts/gpu-bundle.sh
after assemble.py.

    bundle_session.py --targets BUILD   print the ninja targets the session needs beyond the bundle's own
    bundle_session.py BUILD OUTDIR      add the session to the bundle in OUTDIR

What the session runs: bin/strata-bench, bin/strata-launch (over the
bundle's Open MPI), scripts/per_rank_host.sh, scripts/report_binding.sh and
gpu-check.sh (all assemble.py's), and tests/test_gpu_async for its
abort step. assemble.py takes the GPU test executables from the build's
registered tests; where the build makes test_gpu_async without registering
it with a GPU suite, it is copied here the same way (RUNPATH into the
bundle's lib/ and nccl/). Every file added is recorded in manifest.json's
"sources", and the session's files under "session".
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ASYNC = "test_gpu_async"


def fail(message):
    print(f"gpu-bundle: {message}", file=sys.stderr)
    sys.exit(1)


def build_file(build, name):
    """The build's output file called `name` (from meson's introspection),
    as a path relative to the build, or None."""
    text = subprocess.run(["meson", "introspect", build, "--targets"], check=True, stdout=subprocess.PIPE,
                          text=True).stdout
    for target in json.loads(text):
        for filename in target["filename"]:
            if os.path.basename(filename) == name:
                return os.path.relpath(os.path.realpath(filename), os.path.realpath(build))
    return None


def copy(out, manifest, src, rel, runpath=None):
    dst = os.path.join(out, rel)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copyfile(os.path.realpath(src), dst)
    shutil.copymode(os.path.realpath(src), dst)
    if runpath is not None:
        os.chmod(dst, os.stat(dst).st_mode | 0o200)
        subprocess.run(["patchelf", "--set-rpath", runpath, dst], check=True)
    manifest["sources"][rel] = os.path.realpath(src)
    return rel


def add(build, out):
    path = os.path.join(out, "manifest.json")
    if not os.path.exists(path):
        fail(f"{out} is not a bundle (no manifest.json): run scripts/gpu/assemble.py first")
    with open(path) as f:
        manifest = json.load(f)
    added = [copy(out, manifest, os.path.join(HERE, "session.sh"), "session.sh"),
             copy(out, manifest, os.path.join(HERE, "session.py"), "scripts/session.py"),
             copy(out, manifest, os.path.join(HERE, "session_report.py"), "scripts/session_report.py")]
    rel = f"tests/{ASYNC}"
    if rel not in manifest["sources"]:
        made = build_file(build, ASYNC)
        if made and os.path.exists(os.path.join(build, made)):
            added.append(copy(out, manifest, os.path.join(build, made), rel, "$ORIGIN/../lib:$ORIGIN/../nccl"))
    manifest["session"] = {"script": "session.sh", "files": added,
                           "abort_program": rel if os.path.exists(os.path.join(out, rel)) else None}
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(f"gpu-bundle: {out}: session.sh added ({', '.join(added)}); abort step: "
          f"{manifest['session']['abort_program'] or f'no {ASYNC} in this build, the session will skip it'}")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--targets":
        made = build_file(sys.argv[2], ASYNC)
        if made:
            print(made)
    elif len(sys.argv) == 3:
        add(os.path.realpath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    else:
        fail(__doc__)


if __name__ == "__main__":
    main()
