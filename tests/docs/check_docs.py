#!/usr/bin/env python3
"""Docs match the code: every reference resolves, and the numbers that drift
are the code's.

  check_docs.py SOURCE_ROOT [BUILD_DIR]

Checks (each printed as it passes, so the log is the list of claims checked):
  1. every relative Markdown link and every backticked repository path
     (`lib/...`, `docs/X.md`, `scripts/...`, ...) in README.md and docs/*.md
     names a file or folder that exists, and a link's #anchor a heading; every "docs/X.md" or "DESIGN.md"
     named in a source comment exists;
  2. numbers the docs state are the constants in the code (shared-memory
     block and one-round sizes, automatic pack sizes, ring chunk size and
     the CUDA staging chunk, also as Config::chunk_bytes documents them, the
     shard bound, the rooted default); wherever a doc or public header says
     what mean divides by, it says ranks x replicas;
  3. ALGORITHMS.md's table describes every algorithm in the registry
     (lib/exec/algorithms.def);
  4. with BUILD_DIR: every "auto = [...]" map the docs print is one that
     strata-topo prints today (one node, and two virtual nodes);
  5. the guarantees are written once: DESIGN.md has them, README.md and
     RELIABILITY.md link there and list none of their own;
  6. each fact that changes (which GPU strata ran on and what of it ran
     there, the GPU and peer figures, step and test counts, CI times) is
     stated in one file, its owner (OWNED_FACTS), or in none: any other
     doc that states it fails, so two pages cannot come to disagree;
  7. every section a source comment or doc quotes by title
     ('docs/X.md, "Title"') is a heading of that file.
Exit 1 with one line per mismatch.
"""
import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(sys.argv[1]).resolve()
BUILD = pathlib.Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else None
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
failures = []


def ok(claim):
    print(f"ok   {claim}")


def fail(claim):
    print(f"FAIL {claim}")
    failures.append(claim)


def constant(path, name):
    """The value of `constexpr ... name = <expr>;` in a source file, evaluated."""
    text = (ROOT / path).read_text()
    match = re.search(rf"\b{name}\s*=\s*([^;]+);", text)
    if not match:
        fail(f"{path}: no constant {name}")
        return None
    expr = re.sub(r"std::size_t\{(\d+)\}", r"\1", match.group(1))
    expr = re.sub(r"(\d+)(LL|ULL|u|U|L)\b", r"\1", expr)
    return eval(expr, {"__builtins__": {}})  # constants only: digits, *, <<


def size_text(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


# 1. References resolve.
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
PATH = re.compile(r"`((?:lib|include|apps|tests|scripts|docs)/[A-Za-z0-9_./-]+)`")
def anchors(doc):
    """The anchors of a doc's headings, as GitHub makes them."""
    text = re.sub(r"(?ms)^```.*?^```", "", doc.read_text())
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"(?m)^#+ (.+)$", text)}


for doc in DOCS:
    text = doc.read_text()
    for target in LINK.findall(text):
        if "://" in target or target.startswith("mailto:"):
            continue
        where = (doc.parent / target).resolve()
        (ok if where.exists() else fail)(f"{doc.relative_to(ROOT)}: link {target} resolves")
    for target, anchor in re.findall(r"\]\(([^)#\s]*)#([^)\s]+)\)", text):
        where = (doc.parent / target).resolve() if target else doc
        if "://" not in target and where.suffix == ".md" and where.exists():
            (ok if anchor in anchors(where) else fail)(f"{doc.relative_to(ROOT)}: link {target}#{anchor} names a heading")
    for target in set(PATH.findall(text)):
        where = ROOT / target.rstrip("/.")
        (ok if where.exists() else fail)(f"{doc.relative_to(ROOT)}: path `{target}` exists")
for source in sorted(ROOT.glob("lib/**/*")) + sorted(ROOT.glob("include/**/*")) + sorted(ROOT.glob("scripts/*")):
    if not source.is_file():
        continue
    for target in set(re.findall(r"\b(docs/[A-Z_]+\.md|DESIGN\.md)\b", source.read_text(errors="replace"))):
        path = ROOT / (target if target.startswith("docs/") else "docs/" + target)
        (ok if path.exists() else fail)(f"{source.relative_to(ROOT)} names {target}: exists")

# 2. Numbers.
algorithms_md = " ".join((ROOT / "docs/ALGORITHMS.md").read_text().split())  # whitespace-insensitive
claims = [
    ("lib/host/shm_rounds.hpp", "kBlockBytes", lambda n: f"{size_text(n)} block per slice"),
    ("lib/host/shm_rounds.hpp", "kSmallBytes", lambda n: f"Messages up to {size_text(n)} take a one-round path"),
    ("lib/plan/packing.cpp", "kAutoPackOneNode", lambda n: f"b = {size_text(n)} on one node"),
    ("lib/plan/packing.cpp", "kAutoPackMultiNode", lambda n: f"{size_text(n)} across nodes"),
    ("lib/exec/host_runtime.cpp", "kDefaultChunkBytes", lambda n: f"pipelined in {size_text(n)} chunks"),
    ("lib/plan/spec.cpp", "kMaxShards", lambda n: f"shards outside 1..{n}"),
]
for path, name, phrase in claims:
    value = constant(path, name)
    if value is None:
        continue
    want = phrase(value)
    (ok if want in algorithms_md else fail)(f"ALGORITHMS.md says \"{want}\" ({path}: {name} = {value})")
# Config::chunk_bytes documents both defaults it stands in for.
options_hpp = " ".join(re.sub(r"^\s*//", "", line) for line in (ROOT / "include/strata/options.hpp").read_text().splitlines())
for path, phrase in (("lib/exec/host_runtime.cpp", lambda n: f"built-in default ({size_text(n)})"),
                     ("lib/gpu/staged.cpp", lambda n: f"in chunks of {size_text(n)}")):
    value = constant(path, "kDefaultChunkBytes")
    if value is not None:
        want = phrase(value)
        (ok if want in " ".join(options_hpp.split()) else fail)(
            f"include/strata/options.hpp says \"{want}\" ({path}: kDefaultChunkBytes = {value})")
# What mean divides by, wherever it is said.
for doc in DOCS + sorted(ROOT.glob("include/strata/*.hpp")):
    text = " ".join(re.sub(r"(?m)^\s*//", "", doc.read_text()).split())
    for said in re.findall(r"mean`?\*?\*? = sum / ([^;.]*)|mean divides by ([^;.]*)", text):
        divisor = said[0] or said[1]
        right = re.search(r"ranks (x|×) replicas|contributors \(ranks (x|×) replicas\)", divisor)
        (ok if right else fail)(f"{doc.relative_to(ROOT)}: mean divides by \"{divisor.strip()[:60]}\" (ranks x replicas)")
choose_cpp = (ROOT / "lib/plan/choose.cpp").read_text()


def documented_rooted_default(constant, pattern, render, where):
    """ALGORITHMS.md states choose.cpp's default table `constant` for reduce and broadcast."""
    found = re.search(pattern, choose_cpp)
    if not found:
        fail(f"lib/plan/choose.cpp: {constant} not found")
        return
    want = render(found)
    (ok if want in algorithms_md else fail)(f"ALGORITHMS.md's default for reduce and broadcast {where} is {want}")


# rechd's recursive-doubling bound (its cost formula, in rechd.cpp, uses the same constant) and the docs' agree.
doubling = constant("lib/host/rechd.cpp", "kDoublingBytes")
if doubling is not None:
    for doc, want in (("docs/ALGORITHMS.md", f"Up to {size_text(doubling)} per shard, recursive doubling"),
                      ("docs/SCALING.md", f"up to {size_text(doubling)} (recursive doubling)")):
        (ok if want in (ROOT / doc).read_text() else fail)(
            f"{doc} says \"{want}\" (rechd.cpp: kDoublingBytes = {doubling})")
carried = constant("lib/plan/algorithm.hpp", "kCheckCarriesBytes")
documented_rooted_default("kRootedNodes",
                          r'const Spec kRootedNodes\{\s*\{\{"(\w+)", 1, static_cast<long long>\(kCheckCarriesBytes\)\}, '
                          r'\{"([\w/]+)", 1, k64KiB\}, \{"([\w/]+)", 1, -1\}\}\};',
                          lambda m: f"`{m.group(1)}:{carried}:{m.group(2)}:64k:{m.group(3)}`", "on several nodes")
documented_rooted_default("kRootedOneNode", r'const Spec kRootedOneNode\{\{\{"(\w+)", 1, -1\}\}\};',
                          lambda m: f"| one node | `{m.group(1)}` at every size (shared memory) | `{m.group(1)}` at every size",
                          "on one node")

# 3. The registry is documented.
registry = re.findall(r"^STRATA_ALGORITHM\(\w+, (\w+)\)", (ROOT / "lib/exec/algorithms.def").read_text(), re.M)
table = [line for line in (ROOT / "docs/ALGORITHMS.md").read_text().splitlines() if line.startswith("| `")]
for name in registry:
    (ok if any(f"`{name}`" in line for line in table) else fail)(f"ALGORITHMS.md's table describes `{name}`")

# 4. The printed maps are today's.
if BUILD:
    topo = BUILD / "apps/strata-topo/strata-topo"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", STRATA_SPEC="")
    maps = []
    for ranks, extra in ((1, {}), (2, {"STRATA_RANKS_PER_NODE": "1"})):
        # The build's launcher (meson.build's STRATA_LAUNCH), whichever MPI it is.
        run = subprocess.run([os.environ.get("STRATA_LAUNCH", str(BUILD / "strata-launch")), "-n", str(ranks),
                              str(topo), "--json"],
                             env=dict(env, **extra), capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            fail(f"strata-topo at {ranks} rank(s) failed: {run.stderr.strip()[:300]}")
            continue
        maps.append(json.loads(run.stdout)["spec_map"])
    for doc in DOCS:
        for printed in re.findall(r"auto = \[[^\]]*\](?: \[[^\]]*\])*", " ".join(doc.read_text().split())):
            (ok if printed in maps else fail)(f"{doc.relative_to(ROOT)} prints '{printed}' as strata-topo does")

# 5. The guarantees are written once.
design = (ROOT / "docs/DESIGN.md").read_text()
(ok if "\n## Guarantees\n" in design else fail)("DESIGN.md has the Guarantees")
for doc, link in (("README.md", "docs/DESIGN.md#guarantees"), ("docs/RELIABILITY.md", "DESIGN.md#guarantees")):
    text = (ROOT / doc).read_text()
    (ok if f"]({link})" in text else fail)(f"{doc} links to {link}")
    section = re.search(r"\n## Guarantees\n(.*?)(?=\n## |\Z)", text, re.S)
    listed = section and re.search(r"(?m)^- ", section.group(1))
    (fail if listed else ok)(f"{doc} lists no guarantees of its own")

# 6. Facts that change live in one place. (name, pattern, owner): the owner
# is the one doc allowed to state the fact (None: no doc states it; the
# tests' own output does), and must state it; every other doc links there.
OWNED_FACTS = [
    ("the GPU model strata has run on", r"\b(?:A100|H100|H200|B200|GH200|L40S?)\b", "docs/PERFORMANCE.md"),
    ("what of the GPU backend has run on a GPU",
     r"\b(?:has|have|had|ran|never|not yet|not) (?:yet )?(?:been )?run on (?:a|the|one) (?:real )?GPU\b"
     r"|\bon silicon\b|\bonly on the (?:GPU )?(?:test )?double\b|\bon the (?:GPU )?(?:test )?double only\b",
     "docs/GPU.md"),
    ("a GPU figure (kernel share of a device copy, overhead over NCCL)",
     r"\b(?:9\d\.\d|9\d(?:\.\d)?-9\d(?:\.\d)?)% of (?:a |the )?(?:device-to-device|D2D|device)\b"
     r"|\+\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)? ?[µu]s (?:per call )?over (?:raw )?(?:NCCL|`?ncclAllReduce)",
     "docs/PERFORMANCE.md"),
    ("a peer MPI's measured version", r"\b(?:Intel MPI 2021\.\d+\.\d+|Open MPI 5\.0\.\d+|MPICH 5\.0\.\d+)\b",
     "docs/PERFORMANCE.md"),
    ("the gpu-check steps passed", r"\b\d+ of \d+ steps passed\b", "docs/PERFORMANCE.md"),
    ("a test count", r"\b\d+ tests? (?:in the default build|in CI|passed|pass)\b|\b\d+ passed, \d+ failed\b", None),
    ("a CI time", r"(?i)\b(?:CI|\.ci/run|scripts/test\.sh)\b[^.;:]{0,60}?\b\d+(?:\.\d+)? ?(?:s|min|minutes|seconds|hours?)\b",
     None),
]
flat = {doc.relative_to(ROOT).as_posix(): " ".join(doc.read_text().split()) for doc in DOCS}
for name, pattern, owner in OWNED_FACTS:
    for path, text in flat.items():
        if path == owner:
            continue
        for said in re.finditer(pattern, text):
            where = f"only {owner} may; link there instead" if owner else "no doc may (the tests' own output says it)"
            fail(f"{path} states {name} ('{said.group(0)}'): {where}")
    if owner:
        (ok if re.search(pattern, flat[owner]) else fail)(f"{owner} states {name}, and no other doc does")

# 7. Quoted section titles are headings.
headings = {path: {" ".join(h.split()) for h in re.findall(r"(?m)^#+ (?:\d+\. )?(.+)$",
                                                         re.sub(r"(?ms)^```.*?^```", "", (ROOT / path).read_text()))}
            for path in flat}
QUOTE = re.compile(r"((?:docs/)?[A-Z_]+\.md)(?:\]\([^)#]*\))?,? \\?\"([^\"\\]+)\\?\"")
quoting = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
for folder in ("lib", "include", "apps", "tests", "scripts", "python"):
    quoting += sorted(p for p in (ROOT / folder).rglob("*") if p.is_file())
for source in quoting:
    if source.suffix in (".png", ".so", ".a", ".o") or source.name == "check_docs.py":
        continue
    lines = [re.sub(r"^\s*(?://|#|\*|!|/\*)\s?", "", line) for line in source.read_text(errors="replace").splitlines()]
    for target, title in set(QUOTE.findall(" ".join(" ".join(lines).split()))):
        path = target if target in headings else ("docs/" + target if "docs/" + target in headings else None)
        if path is None:
            continue
        found = any(h == title or h.startswith(title + " ") or h.startswith(title + ":") or h.startswith(title + ",")
                    for h in headings[path])
        (ok if found else fail)(f"{source.relative_to(ROOT)} quotes {target}, \"{title}\": a heading there")

print(f"check_docs: {len(failures)} mismatch(es)")
sys.exit(1 if failures else 0)
