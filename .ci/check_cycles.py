#!/usr/bin/env python3
"""Calls run down a line: inside each library, no file calls (or reads a variable of) a file
above it, and no two files reach each other in a circle. Read from the built objects'
symbols, so it sees what #include lines do not (.ci/check_includes.py checks those).

  python3 .ci/check_cycles.py [BUILD]   (BUILD: a configured and built meson tree, default
                                         build; exit 0 ok, 1 problems, 2 cannot check)
  python3 .ci/check_cycles.py --self-test   (objects with planted mistakes: all found)

For each library (LIBRARIES: the meson targets whose objects it holds), `nm` of every object
gives what each file defines and what it uses; a use of a symbol another file of the library
defines is an edge between the two files. Checked:
  - inside a folder, an edge goes to a lower layer of LAYERS (the folder's files, bottom
    first; the files of one layer do not call each other); a file LAYERS does not list is an
    error, so a new file takes its place in the line in the commit that adds it;
  - between folders, an edge goes down the map of docs/contributing.md (CALLS); where the
    map says "through the public API" (PUBLIC_ONLY), only to symbols the library exports;
  - every group of files that reach each other (a strongly connected component of more than
    one file, Tarjan's algorithm) is printed with the edges that close it.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# library -> the meson targets whose objects it is made of (link_whole, extract_all_objects).
LIBRARIES = {
    "libncclshim.so": ["ncclshim", "ncclshim-loader"],
    "libncclshim-nccl.so": ["ncclshim-nccl", "ncclshim", "ncclshim-loader"],
    "ncclshim-probe": ["ncclshim-probe", "ncclshim-loader-probe"],
}
# The exports a PUBLIC_ONLY edge may use: the dynamic symbols of this target's file.
PUBLIC_TARGET = "ncclshim"

# folder -> its files (without .c), bottom layer first; one string per layer.
LAYERS = {
    "compat": ["glibc_start"],
    "loader": ["elf_check hwcaps list objects outcome",
               "blocking dl elf_file ld_cache library_path python_places", "load_blocks",
               "elf_banner search trace", "locate"],
    "src": ["status", "handle"],
    "src/nccl": ["nccl_build nccl_places nccl_results nccl_version",
                 "nccl_census nccl_functions", "nccl_stubs", "nccl_load",
                 "nccl_config nccl_fingerprint nccl_plugins nccl_visible"],
    "src/cuda": ["cuda_errors cuda_functions cuda_version", "cuda_stubs", "cuda_bind",
                 "cuda_load", "cuda_checks", "cuda_describe cuda_device cuda_init cuda_stream"],
    # time < check < state < wait < split < finish < symmem < caps, then the watchdog
    # (its events, the record and the pass), agreement, abort and destroy above.
    "src/comm": ["comm_time", "comm_devapi", "comm_check", "comm_state", "comm_wait",
                 "comm_split", "comm_finish", "comm_init symmem_capture symmem_free",
                 "symmem_alloc", "comm_caps", "comm_watch comm_agree",
                 "comm_watch_record comm_watch_pass", "comm_abort",
                 "comm_destroy comm_watchdog"],
    # The writer (no lock, no malloc) and the recorder's state at the bottom (record_start.c
    # its only writer), the recorder below the drop-in's entry points.
    "src/dropin": ["say", "record_state", "record_id", "record_comms", "record_dump", "record_cuda",
                   "record_hang_thread",
                   "record_hang", "record_ring", "record_calls", "record_start", "audit_got",
                   "interpose", "checks", "audit dropin"],
    # The tracker of GPU progress: its record side below its look.
    "src/track": ["track", "track_look"],
    "src/probe": ["candidates explain_parse json parse_version pyenv text", "usage",
                  "driver_check elf_facts plugins report_census",
                  "inventory report_json report_text requirements", "report_inventory",
                  "doctor explain", "doctor_args", "probe"],
}
# folder -> the folders its files may call, besides its own (docs/contributing.md, "The map").
CALLS = {
    "compat": [],
    "loader": ["compat"],
    "src": ["compat", "loader"],
    "src/nccl": ["compat", "loader", "src"],
    "src/cuda": ["compat", "loader", "src"],
    "src/track": [],
    "src/comm": ["compat", "src", "src/nccl", "src/cuda", "src/track"],
    "src/dropin": ["compat", "loader", "src", "src/nccl", "src/cuda", "src/comm", "src/track"],
    "src/probe": ["compat", "loader"],
}
# (caller's folder, callee's folder): only what the library exports.
PUBLIC_ONLY = {("src/comm", "src/nccl"), ("src/comm", "src/cuda"), ("src/dropin", "src/comm"),
               ("src/dropin", "src/cuda")}

DEFINED = set("TDBRGSVWiu")  # text, data, bss, read-only, small data, weak, indirect, unique


def symbols(obj):
    """(defined, used) global symbol names of one object file."""
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        if parts[1] == "U":
            used.add(parts[0])
        elif parts[1] in DEFINED:
            defined.add(parts[0])
    return defined, used


def edges_of(objects):
    """{(caller, callee): sorted symbols} over {source: object}, and the sources defining
    one symbol twice (an error of its own)."""
    table = {source: symbols(obj) for source, obj in objects.items()}
    owner, twice = {}, []
    for source, (defined, _) in sorted(table.items()):
        for name in defined:
            if name in owner:
                twice.append("%s defines %s, as %s does" % (source, name, owner[name]))
            owner.setdefault(name, source)
    edges = {}
    for source, (_, used) in table.items():
        for name in used:
            target = owner.get(name)
            if target is not None and target != source:
                edges.setdefault((source, target), set()).add(name)
    return {k: sorted(v) for k, v in edges.items()}, twice


def components(nodes, edges):
    """Strongly connected components of more than one node (iterative Tarjan)."""
    after = {n: sorted(t for (s, t) in edges if s == n) for n in nodes}
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(after[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, rest = work[-1]
            nxt = next(rest, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(after[nxt])))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return sorted(found)


def split(source):
    folder, name = os.path.split(source)
    return folder, name[:-2] if name.endswith(".c") else name


def layer_of(layers, source):
    folder, name = split(source)
    for level, files in enumerate(layers.get(folder, [])):
        if name in files.split():
            return level
    return None


def check(library, objects, layers, calls, public_only, exported):
    """The problems of one library: {source: object} -> lines, and the cycles found."""
    edges, problems = edges_of(objects)
    for source in sorted(objects):
        folder, _ = split(source)
        if folder not in layers:
            problems.append("%s: %s: folder %s/ is not in LAYERS" % (library, source, folder))
        elif layer_of(layers, source) is None:
            problems.append("%s: %s is not in LAYERS[%r]: give it its place in the line"
                            % (library, source, folder))
    for (caller, callee), names in sorted(edges.items()):
        (cfolder, _), (tfolder, _) = split(caller), split(callee)
        what = "%s -> %s (%s)" % (caller, callee, " ".join(names))
        if cfolder == tfolder:
            low, high = layer_of(layers, callee), layer_of(layers, caller)
            if low is not None and high is not None and low >= high:
                problems.append("%s: %s: %s" % (library, "calls sideways" if low == high
                                                else "calls up the layers", what))
        elif tfolder not in calls.get(cfolder, []):
            problems.append("%s: %s/ may not call %s/: %s" % (library, cfolder, tfolder, what))
        elif (cfolder, tfolder) in public_only:
            hidden = [n for n in names if n not in exported]
            if hidden:
                problems.append("%s: %s/ reaches %s/ through the public API only: %s -> %s "
                                "(%s, not exported)" % (library, cfolder, tfolder, caller,
                                                        callee, " ".join(hidden)))
    cycles = components(set(objects), edges)
    for group in cycles:
        members = set(group)
        closing = ["%s -> %s (%s)" % (os.path.basename(s), os.path.basename(t), " ".join(n))
                   for (s, t), n in sorted(edges.items()) if s in members and t in members]
        problems.append("%s: cycle of %d files: %s\n    %s"
                        % (library, len(group), " ".join(group), "\n    ".join(closing)))
    return problems, cycles


def cannot(why):
    print("check_cycles: cannot check: " + why, file=sys.stderr)
    sys.exit(2)


def build_objects(build):
    """{library: {source: object}} and the exported names, from meson's introspection."""
    info = os.path.join(build, "meson-info", "intro-targets.json")
    commands = os.path.join(build, "compile_commands.json")
    if not os.path.isfile(info) or not os.path.isfile(commands):
        cannot("%s is not a configured meson build (run meson setup and meson compile first)"
               % build)
    with open(info, encoding="utf-8") as f:
        targets = {t["name"]: t for t in json.load(f)}
    with open(commands, encoding="utf-8") as f:
        compiled = json.load(f)
    per_target = {}
    for name in {t for names in LIBRARIES.values() for t in names}:
        if name not in targets:
            cannot("%s has no target %s" % (build, name))
        private = os.path.normpath(targets[name]["filename"][0]) + ".p" + os.sep
        objects = {}
        for entry in compiled:
            out = os.path.normpath(os.path.join(entry["directory"], entry["output"]))
            if out.startswith(private):
                source = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
                if not os.path.isfile(out):
                    cannot("%s is not built (meson compile -C %s)" % (out, build))
                objects[os.path.relpath(source, ROOT)] = out
        per_target[name] = objects
    libraries = {lib: {s: o for t in names for s, o in per_target[t].items()}
                 for lib, names in LIBRARIES.items()}
    dynamic = subprocess.run(["nm", "-D", "--defined-only", targets[PUBLIC_TARGET]["filename"][0]],
                             capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1].split("@")[0] for line in dynamic.splitlines() if line.strip()}
    return libraries, exported


def main(build):
    libraries, exported = build_objects(build)
    # A file in two libraries (libncclshim's, compiled into the drop-in too) is told once.
    found, cycles = {}, set()
    for library, objects in sorted(libraries.items()):
        problems, groups = check(library, objects, LAYERS, CALLS, PUBLIC_ONLY, exported)
        for problem in problems:
            found.setdefault(problem.split(": ", 1)[1], []).append(library)
        cycles |= {tuple(g) for g in groups}
    for folder, layers in sorted(LAYERS.items()):
        for name in " ".join(layers).split():
            if not os.path.isfile(os.path.join(ROOT, folder, name + ".c")):
                found["LAYERS[%r] lists %s.c, which is not there" % (folder, name)] = ["tree"]
    for problem, where in found.items():
        print("%s: %s" % (", ".join(where), problem))
    print("check_cycles: %d libraries, %d files, %d cycles, %d problems"
          % (len(libraries), len({s for o in libraries.values() for s in o}), len(cycles),
             len(found)))
    return 1 if found else 0


# The self-test's tree: a.c -> b.c -> a.c (a cycle, and b calls up), c.c unlisted, d.c in
# another folder reaching a hidden symbol of a public-only folder, e.c calling e2.c sideways.
PLANTED = {
    "p/a.c": "int b(void); int a(void) { return b(); }\n",
    "p/b.c": "int a(void); int b_seen; int b(void) { return b_seen ? a() : 0; }\n",
    "p/c.c": "int a(void); int c(void) { return a(); }\n",
    "p/e.c": "int e2(void); int e(void) { return e2(); }\n",
    "p/e2.c": "int e2(void) { return 2; }\n",
    "q/d.c": "extern int b_seen; int a(void); int d(void) { return a() + b_seen; }\n",
    "r/f.c": "int a(void); int f(void) { return a(); }\n",
}
PLANTED_LAYERS = {"p": ["a", "b", "e e2"], "q": ["d"], "r": ["f"]}
PLANTED_CALLS = {"p": [], "q": ["p"], "r": []}
EXPECTED = [
    "calls up the layers: p/a.c -> p/b.c (b)",
    "p/c.c is not in LAYERS",
    "calls sideways: p/e.c -> p/e2.c (e2)",
    "through the public API only: q/d.c -> p/b.c (b_seen, not exported)",
    "r/ may not call p/: r/f.c -> p/a.c (a)",
    "cycle of 2 files: p/a.c p/b.c",
]


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        objects = {}
        for source, text in PLANTED.items():
            path = os.path.join(tmp, source)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            subprocess.run([os.environ.get("CC", "cc"), "-c", "-fno-common", path, "-o",
                            path + ".o"], check=True)
            objects[source] = path + ".o"
        problems, _ = check("planted", objects, PLANTED_LAYERS, PLANTED_CALLS, {("q", "p")},
                            {"a", "b"})
    out = "\n".join(problems)
    print(out)
    missed = [e for e in EXPECTED if e not in out]
    extra = len(problems) - len(EXPECTED)
    if missed or extra:
        print("self-test: missed %s, %d problems beyond those expected" % (missed, extra))
        return 1
    print("self-test: all %d mistakes found" % len(EXPECTED))
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")))
