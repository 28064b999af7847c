#!/usr/bin/env python3
"""Proves that the CUDA/NCCL test double can fail: strata's GPU code is
built with one seeded mistake at a time, and the GPU test meant to catch it
must fail with a message that points at the mistake.

    mistakes.py BUILD SOURCE [--only NAME] [--list] [--jobs N] [--show-output]

For each mistake the one source file it changes is compiled again with the
build's own compile command (compile_commands.json), the change applied to
a copy (in a unity build, the chunk that includes the file, including the
copy instead); the library holding that file is linked again with the build's own
link command (`ninja -t commands`) into a scratch folder next to links to
the build's other strata libraries; then the mistake's meson test runs as
meson would run it (`meson introspect --tests`: command, environment),
with the scratch folder first on LD_LIBRARY_PATH. Neither the source tree
nor the build changes.

A mistake is caught when its test exits non-zero and its output matches
the mistake's pattern (the double's violation, or the test's own failure
line). The script fails when a mistake is not caught, when its change no
longer applies to the source (the table below must follow the code), or
when a build step fails. Exit 0 only when every mistake was caught.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time


def run(cmd, cwd=None, env=None, timeout=None):
    return subprocess.run(cmd, cwd=cwd, env=env, timeout=timeout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)


class Build:
    def __init__(self, build, source):
        self.build, self.source = os.path.realpath(build), os.path.realpath(source)
        with open(os.path.join(self.build, "compile_commands.json")) as f:
            self.compiles = json.load(f)
        self.tests = {t["name"]: t for t in json.loads(run(["meson", "introspect", self.build, "--tests"]).stdout)}
        targets = json.loads(run(["meson", "introspect", self.build, "--targets"]).stdout)
        # strata's shared libraries: (output file relative to the build, soname)
        self.libraries = []
        for t in targets:
            if t["type"] == "shared library" and t["name"] in ("strata", "strata_gpu"):
                for filename in t["filename"]:
                    rel = os.path.relpath(filename, self.build)
                    self.libraries.append((rel, soname(filename)))

    def compile_command(self, source_file):
        """(compile entry, the source file that entry compiles, what that
        file says where it names `source_file`). In a unity build
        (-Dunity=on) the file is compiled as part of a generated chunk that
        #includes it: the chunk's entry, the chunk, and that include line."""
        wanted = os.path.realpath(os.path.join(self.source, source_file))
        for c in self.compiles:
            compiled = os.path.realpath(os.path.join(c["directory"], c["file"]))
            if compiled == wanted:
                return c, compiled, None
        for c in self.compiles:
            compiled = os.path.realpath(os.path.join(c["directory"], c["file"]))
            if "-unity" not in os.path.basename(compiled) or not os.path.exists(compiled):
                continue
            for line in open(compiled):
                m = re.fullmatch(r"#include\s*<(.*)>\s*", line)
                if m and os.path.realpath(m.group(1)) == wanted:
                    return c, compiled, line
        raise SystemExit(f"mistakes: {source_file} is compiled by no target of {self.build}")

    def link_command(self, library, obj):
        lines = run(["ninja", "-C", self.build, "-t", "commands", library]).stdout.strip().splitlines()
        line = lines[-1]
        if obj not in line:
            raise SystemExit(f"mistakes: the link of {library} does not name {obj}")
        return line


def soname(path):
    for line in run(["readelf", "-d", path]).stdout.splitlines():
        m = re.search(r"\(SONAME\).*\[(.*)\]", line)
        if m:
            return m.group(1)
    return os.path.basename(path)


def catch(build, mistake, scratch_root, show_output=False):
    """Returns (caught, report lines)."""
    started = time.time()
    scratch = tempfile.mkdtemp(prefix=f"{mistake.name}-", dir=scratch_root)
    path = os.path.join(build.source, mistake.file)
    text = open(path).read()
    if text.count(mistake.find) != 1:
        return False, [f"the change no longer applies: {mistake.file} holds the text to replace "
                       f"{text.count(mistake.find)} times, not once (update tests/gpu/double/mistakes_table.py)"]
    mutated = os.path.join(scratch, os.path.basename(mistake.file))
    with open(mutated, "w") as f:
        f.write(text.replace(mistake.find, mistake.replace))
    entry, compiled, include_line = build.compile_command(mistake.file)
    if include_line is not None:
        # Unity build: compile the chunk again, including the changed copy
        # in the original's place.
        chunk = os.path.join(scratch, os.path.basename(compiled))
        with open(compiled) as original, open(chunk, "w") as f:
            f.write(original.read().replace(include_line, f"#include <{mutated}>\n"))
        replacement = chunk
    else:
        replacement = mutated
    obj = entry["output"]
    new_obj = os.path.join(scratch, os.path.basename(obj))
    args = shlex.split(entry["command"])
    args = [replacement if os.path.realpath(os.path.join(entry["directory"], a)) == compiled else
            new_obj if a == obj else a for a in args]
    # The copy sits elsewhere: the file's own folder stays on the include
    # path, first (after the compiler and any launcher such as ccache).
    first_flag = next(i for i, a in enumerate(args) if a.startswith("-"))
    args.insert(first_flag, "-I" + os.path.dirname(path))
    done = run(args, cwd=entry["directory"])
    if done.returncode != 0:
        return False, [f"compiling the mistake failed:\n{done.stdout[-3000:]}"]
    # Relink the library that holds the object; link the others as they are.
    holder = next((lib for lib, _ in build.libraries if obj.startswith(lib + ".p/")), None)
    if holder is None:
        return False, [f"no strata library holds {obj}"]
    for lib, name in build.libraries:
        target = os.path.join(scratch, name)
        if lib == holder:
            line = build.link_command(lib, obj).replace(obj, new_obj)
            line = re.sub(r"(-o\s+)" + re.escape(lib), r"\g<1>" + target, line)
            done = run(["sh", "-c", line], cwd=build.build)
            if done.returncode != 0:
                return False, [f"linking {lib} with the mistake failed:\n{done.stdout[-3000:]}"]
        elif not os.path.exists(target):
            os.symlink(os.path.join(build.build, lib), target)
    test = build.tests.get(mistake.test)
    if test is None:
        return False, [f"no meson test named {mistake.test}"]
    env = dict(os.environ)
    env.update(test["env"])
    env["LD_LIBRARY_PATH"] = scratch + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    try:
        done = run(test["cmd"], cwd=test.get("workdir") or build.build, env=env, timeout=test["timeout"])
        output, rc = done.stdout, done.returncode
    except subprocess.TimeoutExpired as e:
        output, rc = (e.output or "") if isinstance(e.output, str) else "", "timeout"
    match = re.search(mistake.expect, output)
    caught = rc not in (0, 77) and match is not None
    lines = [f"{'caught' if caught else 'NOT CAUGHT'}: {mistake.name} ({mistake.what}) in {mistake.file}, "
             f"by {mistake.test}: exit {rc}, {time.time() - started:.0f} s"]
    if match:
        line = output[output.rfind("\n", 0, match.start()) + 1:output.find("\n", match.end())]
        lines.append(f"    {line.strip()[:400]}")
    if not caught:
        lines.append(f"    expected a failure whose output matches /{mistake.expect}/; the output ends:")
        lines += ["    " + l for l in output.strip().splitlines()[-15:]]
    if show_output:
        lines += ["    | " + l for l in output.strip().splitlines()]
    shutil.rmtree(scratch, ignore_errors=True)
    return caught, lines


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build")
    parser.add_argument("source")
    parser.add_argument("--only", help="run the mistakes whose name matches this regular expression")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--show-output", action="store_true", help="print each test's whole output")
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
    from mistakes_table import MISTAKES as table
    chosen = [m for m in table if not args.only or re.search(args.only, m.name)]
    if args.list:
        for m in chosen:
            print(f"{m.name}: {m.what} ({m.file}; caught by {m.test})")
        return 0
    build = Build(args.build, args.source)
    scratch_root = tempfile.mkdtemp(prefix="strata-mistakes-")
    caught_all = True
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for caught, lines in pool.map(lambda m: catch(build, m, scratch_root, args.show_output), chosen):
            caught_all = caught_all and caught
            print("\n".join(lines), flush=True)
    shutil.rmtree(scratch_root, ignore_errors=True)
    print(f"mistakes: {sum(1 for _ in chosen)} seeded, {'all caught' if caught_all else 'NOT all caught'}")
    return 0 if caught_all else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
