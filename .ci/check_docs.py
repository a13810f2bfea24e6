#!/usr/bin/env python3
"""Docs that tell the truth: what the docs and READMEs name must exist, and the reverse.

  python3 .ci/check_docs.py              (from anywhere in the checkout; exit 0 ok, 1 problems)
  python3 .ci/check_docs.py --self-test  (a small tree with one of each mistake: all found)

Checked, over docs/*.md and every tracked README.md:
  - each NCCLSHIM_* name appears in the tracked code, tests or scripts (a variable, macro
    or function that was renamed or removed is caught);
  - each NCCL_* environment variable is one the code reads, or one of NCCL's own variables
    listed in NCCL_OWN below (named for context: what NCCL does, what a user sets);
  - each meson option (-Dname) is in meson_options.txt or is one of meson's own;
  - each repository path (`src/...`, `tests/...`, ...) exists in the tree;
  - each relative link resolves: its file or folder is tracked, and a `#section` of a .md file
    is one of that file's headings (GitHub's anchors);
  - each file bench/results/README.md cites (`h200x2/.../x.csv`, or a bare `x.csv` of a run's
    folder) is committed under bench/results/;
  - docs/README.md, the index, lists every page of docs/ once (a `- [x.md](x.md)` entry);
  - docs/reference.md's capability table has the names, versions and functions of
    NCCLSHIM_CAPABILITIES (include/ncclshim/ncclshim.h), each once;
  - docs/reference.md's environment table has a row for each NCCLSHIM_* variable that src/
    and loader/ read, and its section names each file of theirs that calls plain getenv()
    (the others use secure_getenv, as the section says);
  - docs/hardening.md's CI table has a row for each job .ci/run runs, and no other;
  - bench/results/ holds no archive (it keeps CSVs, summaries and plots: bench/results/README.md).
And the reverse: each NCCLSHIM_* environment variable the code reads (a string literal in
src/, loader/, include/, bindings/rust/) and each option of meson_options.txt is documented.
Only tracked files that git holds as text are read (git's own test: no file git calls binary,
such as a plot or a fuzz input, and never the inside of an archive); a new file counts once
it is added (`git add`).
"""
import os
import re
import subprocess
import sys

ROOT = os.environ.get("CHECK_DOCS_ROOT") or os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))

# NCCL's own variables and macros that the docs name without ncclshim reading them.
NCCL_OWN = {
    "NCCL_API",
    "NCCL_ALGO", "NCCL_ASYNC_ERROR_HANDLING", "NCCL_BLOCKING_WAIT", "NCCL_COMM_BLOCKING",
    "NCCL_CUMEM_ENABLE", "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS", "NCCL_IB_DISABLE",
    "NCCL_IB_HCA", "NCCL_NET", "NCCL_NET_PLUGIN", "NCCL_NVLS_ENABLE", "NCCL_P2P_DISABLE",
    "NCCL_PROTO", "NCCL_SHM_DISABLE", "NCCL_SOCKET_IFNAME", "NCCL_TUNER_PLUGIN",
    "NCCL_PROFILER_PLUGIN", "NCCL_RAS_ENABLE", "NCCL_TIMEOUT", "NCCL_LAUNCH_MODE",
    "NCCL_RUNTIME_CONNECT", "NCCL_WORK_FIFO_DEPTH", "NCCL_ENV_PLUGIN", "NCCL_CONF_FILE",
    "NCCL_SET_THREAD_NAME", "NCCL_NCHANNELS_PER_NET_PEER", "NCCL_MNNVL_ENABLE",
    "NCCL_2297",  # the GPU scripts' path to NCCL 2.29.7 (tests/gpu, bench/gpu)
}
# meson's built-in and base options the docs may name.
MESON_OWN = {
    "b_sanitize", "b_lundef", "b_coverage", "b_ndebug", "b_lto", "buildtype", "c_args",
    "cpp_args", "c_link_args", "prefix", "libdir", "bindir", "includedir", "default_library",
    "werror", "warning_level", "optimization", "debug", "strip", "pkg_config_path",
    "cmake_prefix_path", "c_std", "wrap_mode",
}
# Placeholders in the docs, not names: a capability's row (of the library, of a communicator),
# a future version node.
PLACEHOLDERS = {"NCCLSHIM_CAP_X", "NCCLSHIM_COMM_CAP_X", "NCCLSHIM_1"}
# Files of other projects that the docs cite by their own paths: NCCL's source tree (its
# src/**/*.cc, src/include/, src/nccl.h.in, makefiles; ncclshim's src/ holds no C++), the
# CUDA toolkit's headers, and the subproject directory a consumer creates.
OTHERS = re.compile(
    r"^(src/(include/|misc/|register/|nccl_device|Makefile$|CMakeLists\.txt$)"
    r"|src/.*\.(cc|in)$"
    r"|src/include/nccl_device|include/cuda\.h$|include/cudaTypedefs\.h$|makefiles/"
    r"|subprojects/ncclshim$)")
# Prose that looks like a path but is not one in the tree.
NOT_PATHS = re.compile(
    r"^(build[^/]*|/|\.\./|~|\$|<|lib/|bin/|include/ncclshim/\*|share/|usr/|opt/|"
    r"nvidia/|site-packages/|corpus/|target/|x86_64|aarch64|ncclshim-|.*://)")
TOP = ("src/", "docs/", "tests/", "bench/", "include/", "loader/", "abi/", "bindings/",
       "cmake/", "cross/", "examples/", "subprojects/", ".ci/", "meson")


def tracked():
    """The tracked files that exist, and the subset git holds as text."""
    out = subprocess.run(["git", "ls-files", "--eol"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    files, text = [], []
    for line in out.splitlines():
        info, path = line.split("\t", 1)
        if os.path.isfile(os.path.join(ROOT, path)):  # not a link to a folder
            files.append(path)
            if not info.startswith("i/-text"):
                text.append(path)
    return files, set(text)


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def main():
    files, text_files = tracked()
    docs = [f for f in files
            if (f.startswith("docs/") and f.endswith(".md")) or os.path.basename(f) == "README.md"]
    code = [f for f in files if f not in docs and not f.endswith(".md")
            and not f.startswith("bench/results/") and f in text_files]
    code_text = "\n".join(read(f) for f in code)
    code_words = set(re.findall(r"\b(?:NCCLSHIM|NCCL)_\w+", code_text))
    tree = set(files)
    dirs = {os.path.dirname(f) for f in files}
    for d in list(dirs):
        while d:
            d = os.path.dirname(d)
            dirs.add(d)
    options = set(re.findall(r"option\('(\w+)'", read("meson_options.txt")))

    # What the code reads: "NCCLSHIM_X" string literals in the library, loader, headers, crate.
    readers = [f for f in code if f.startswith(("src/", "loader/", "include/", "bindings/rust/"))]
    read_vars = set()
    for f in readers:
        read_vars |= set(re.findall(r'"(NCCLSHIM_[A-Z0-9_]+)"', read(f)))
    read_vars = {v for v in read_vars if not v.endswith("_INIT")}
    code_nccl_vars = set()
    for f in readers:
        code_nccl_vars |= set(re.findall(r'"(NCCL_[A-Z0-9_]+)"', read(f)))

    problems = ci_table(tree) + index_entries(tree) + capability_table(tree) + [
        f"{f}: an archive in bench/results/, which keeps plain text (bench/results/README.md)"
        for f in files if f.startswith("bench/results/") and ARCHIVE.search(f)]
    problems += links(docs, tree, dirs) + results_cited(tree) + environment_table(tree, code)
    doc_words = set()
    doc_options = set()
    for doc in docs:
        text = read(doc)
        for n, line in enumerate(text.splitlines(), 1):
            where = f"{doc}:{n}"
            for word in re.findall(r"\b(?:NCCLSHIM|NCCL)_[A-Z0-9_]*[A-Z0-9]\b", line):
                doc_words.add(word)
                if word in PLACEHOLDERS:
                    continue
                if word.startswith("NCCLSHIM_"):
                    if word not in code_words and not word.endswith("_"):
                        problems.append(f"{where}: {word} is nowhere in the code")
                elif word not in code_words and word not in NCCL_OWN \
                        and word not in code_nccl_vars and not is_nccl_api(word, code_words):
                    problems.append(f"{where}: {word}: not read by the code, and not in "
                                    ".ci/check_docs.py's NCCL_OWN list")
            for opt in re.findall(r"(?<![\w-])-D([a-z_][a-z0-9_]*)=", line):
                doc_options.add(opt)
                if opt not in options and opt not in MESON_OWN:
                    problems.append(f"{where}: meson option -D{opt} is not in meson_options.txt")
            for path in candidate_paths(line, doc):
                here = os.path.normpath(os.path.join(os.path.dirname(doc), path))
                if not OTHERS.match(path) and not exists(path, tree, dirs) \
                        and not exists(here, tree, dirs):
                    problems.append(f"{where}: {path} does not exist")
    for var in sorted(read_vars - doc_words):
        problems.append(f"the code reads {var}, which no doc names")
    for opt in sorted(options - doc_options):
        problems.append(f"meson option {opt} (meson_options.txt) is in no doc as -D{opt}=")
    for p in problems:
        print(p)
    print(f"check_docs: {len(docs)} docs, {len(problems)} problems")
    return 1 if problems else 0


ARCHIVE = re.compile(r"\.(tar(\.\w+)?|tgz|zip|7z|xz|gz|bz2|zst)$")


def ci_table(tree):
    """docs/hardening.md's "CI jobs" table against the `job NAME FUNCTION` lines of .ci/run."""
    if ".ci/run" not in tree or "docs/hardening.md" not in tree:
        return []
    run = re.findall(r"^job (\S+) ", read(".ci/run"), re.M)
    section = read("docs/hardening.md").split("## CI jobs", 1)[-1].split("\n## ", 1)[0]
    rows = [r for r in re.findall(r"^\| (\S+) \|", section, re.M) if r not in ("job", "---")]
    return ([f".ci/run runs job {j}, which docs/hardening.md's CI table lacks"
             for j in run if j not in rows]
            + [f"docs/hardening.md's CI table lists job {r}, which .ci/run does not run"
               for r in rows if r not in run])


LINK = re.compile(r"\]\(([^)\s]*)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(text):
    """(number, line) of the lines outside fenced code blocks."""
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def anchors(path):
    """The anchors GitHub gives the headings of a Markdown file: lower case, punctuation
    dropped, spaces to hyphens, a repeat suffixed -1, -2, ..."""
    seen, out = {}, set()
    for _, line in prose_lines(read(path)):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def links(docs, tree, dirs):
    """Every relative link of the docs: its target is tracked, its #section a heading."""
    problems, cache = [], {}
    for doc in docs:
        for n, line in prose_lines(read(doc)):
            for m in LINK.finditer(line):
                target = m.group(1)
                if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # a URL, mailto:
                path, _, anchor = target.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(doc), path)) \
                    if path else doc
                where = f"{doc}:{n}"
                if resolved.startswith("..") or (resolved not in tree and resolved not in dirs):
                    problems.append(f"{where}: link {target}: {resolved} is not in the tree")
                elif anchor and resolved.endswith(".md"):
                    if resolved not in cache:
                        cache[resolved] = anchors(resolved)
                    if anchor not in cache[resolved]:
                        problems.append(f"{where}: link {target}: {resolved} has no heading "
                                        f"#{anchor}")
    return problems


RESULT_FILE = re.compile(r"`([\w./*-]+\.(?:csv|txt|md|png|jsonl))`")


def results_cited(tree):
    """The files bench/results/README.md cites in backticks: a path under a folder of
    bench/results/ (h200x2/percall/detect.csv), or a bare name of a file somewhere there."""
    readme = "bench/results/README.md"
    if readme not in tree:
        return []
    kept = [f[len("bench/results/"):] for f in tree if f.startswith("bench/results/")]
    folders = {k.split("/", 1)[0] for k in kept if "/" in k}
    names = {os.path.basename(k) for k in kept}
    problems = []
    for n, line in prose_lines(read(readme)):
        for m in RESULT_FILE.finditer(line):
            cited = m.group(1)
            if cited.startswith(("bench/", "docs/", "tests/")):
                continue  # a repository path: checked with the others
            if "/" in cited and cited.split("/", 1)[0] not in folders:
                continue  # a file of a run's output ($OUT), not of this folder
            pattern = re.escape(cited).replace(r"\*", "[^/]*")
            pool = kept if "/" in cited else names
            if not any(re.fullmatch(pattern, k) for k in pool):
                problems.append(f"{readme}:{n}: {cited} is not committed under bench/results/")
    return problems


def index_entries(tree):
    """docs/README.md lists each page of docs/ exactly once, as a `- [x.md](x.md)` entry."""
    index = "docs/README.md"
    if index not in tree:
        return []
    pages = sorted(f[len("docs/"):] for f in tree
                   if f.startswith("docs/") and f.endswith(".md") and f.count("/") == 1
                   and f != index)
    entries = re.findall(r"^- \[[^\]]*\]\(([\w.-]+\.md)\)", read(index), re.M)
    return ([f"{index}: {p} has no entry in the index" for p in pages if p not in entries]
            + [f"{index}: {p} has {entries.count(p)} entries in the index"
               for p in pages if entries.count(p) > 1])


def environment_table(tree, code):
    """docs/reference.md's "## Environment variables": a row per NCCLSHIM_* variable the
    library reads, and the name of every file of it that reads with plain getenv()."""
    doc = "docs/reference.md"
    if doc not in tree:
        return []
    section = read(doc).split("\n## Environment variables\n", 1)[-1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `(NCCLSHIM_\w+)`", section, re.M))
    problems = []
    for f in sorted(c for c in code if c.startswith(("src/", "loader/")) and c.endswith(".c")):
        text = read(f)
        for var in sorted(set(re.findall(r'"(NCCLSHIM_[A-Z0-9_]+)"', text))):
            if not var.endswith("_INIT") and var not in rows:
                problems.append(f"{doc}: {f} reads {var}, which the environment table lacks")
        if re.search(r"(?<![\w])getenv\(", text) and f not in section:
            problems.append(f"{doc}: {f} calls getenv(), not secure_getenv(): the environment "
                            "section must name it and say why")
    return problems


def version_text(code):
    """22803 -> 2.28.3 (NCCL's packing from 2.9 on)."""
    return f"{code // 10000}.{code // 100 % 100}.{code % 100}"


def capability_table(tree):
    """docs/reference.md's "## Capabilities" table against NCCLSHIM_CAPABILITIES: each
    capability once, with its version and, where the cell lists functions (not a note in
    parentheses), the functions of the row's capabilities in the list's order."""
    header, doc = "include/ncclshim/ncclshim.h", "docs/reference.md"
    if header not in tree or doc not in tree:
        return []
    body = read(header).split("#define NCCLSHIM_CAPABILITIES(X)", 1)[-1].split("\n\n", 1)[0]
    # A version written as a named constant rather than a number is not compared.
    want = {name: (int(version) if version.strip().isdigit() else None,
                   [f.strip() for f in fns.split(",")])
            for name, version, fns in re.findall(r'X\(\w+,\s*"([\w-]+)",\s*([^,]+),\s*([^)]*)\)',
                                                 body)}
    if not want:
        return [f"{header}: no NCCLSHIM_CAPABILITIES rows found"]
    section = read(doc).split("\n## Capabilities\n", 1)[-1].split("\n## ", 1)[0]
    seen, problems = set(), []
    for cell, version, fns in re.findall(r"^\| (`[^|]*`) \| ([\d.]+) \| ([^|]*) \|$",
                                         section, re.M):
        names = re.findall(r"`([\w-]+)`", cell)
        for name in names:
            if name in seen:
                problems.append(f"{doc}: capability {name} has two rows")
            seen.add(name)
            if name not in want:
                problems.append(f"{doc}: capability {name} is not in {header}")
            elif want[name][0] is not None and version_text(want[name][0]) != version:
                problems.append(f"{doc}: capability {name} needs "
                                f"{version_text(want[name][0])} in {header}, the table says "
                                f"{version}")
        listed = [f.strip() for f in fns.split(",")]
        expected = [f for name in names if name in want for f in want[name][1]]
        if not fns.strip().startswith("(") and listed != list(dict.fromkeys(expected)):
            problems.append(f"{doc}: capability {', '.join(names)}: the list has "
                            f"{', '.join(expected)}, the table {fns.strip()}")
    problems += [f"{doc}: capability {name} ({header}) is not in the table"
                 for name in want if name not in seen]
    return problems


def is_nccl_api(word, code_words):
    """NCCL_ constants of nccl.h (NCCL_CONFIG_INITIALIZER, ...) are in the code too."""
    return word in code_words


def candidate_paths(line, doc):
    """Repository paths named on a line in backticks (link targets: links())."""
    found = []
    for m in re.finditer(r"`([^`\s]+)`", line):
        token = m.group(1).rstrip(".,:;)")
        token = re.sub(r"\(.*$", "", token)
        if NOT_PATHS.match(token):
            continue
        if not token.startswith(TOP):
            # A README names the files of its own directory (bindings/rust/README.md).
            here = os.path.dirname(doc)
            if not here or "/" not in token or not os.path.exists(os.path.join(ROOT, here, token)):
                continue
            token = os.path.join(here, token)
        if token.startswith("meson") and "/" not in token and "." not in token:
            continue
        found.append(token)
    return found


def exists(path, tree, dirs):
    path = path.rstrip("/")
    if path in tree or path in dirs:
        return True
    if any(c in path for c in "*{<["):
        prefix = re.split(r"[*{<\[]", path, 1)[0]
        return any(f.startswith(prefix) for f in tree)
    # A program or target named without its extension (tests/hardening/test_stress_race).
    return any(path + ext in tree for ext in (".c", ".py", ".sh", ".rs", ".h"))


def self_test():
    """Runs the check on a throwaway git tree holding one mistake of each kind."""
    import tempfile
    files = {
        "meson_options.txt": "option('tests', type : 'feature')\n"
                             "option('quiet', type : 'boolean')\n",
        "src/a.c": 'const char *v = "NCCLSHIM_READ";\nconst char *w = "NCCLSHIM_HIDDEN";\n',
        "bench/results/h200x2/run-x.tar.xz": None,
        "src/blob.bin": None,
        "docs/a.md": "`NCCLSHIM_READ` and `NCCLSHIM_GONE`; NCCL_MADE_UP; -Dtests=enabled, "
                     "-Dnope=1; `src/a.c`, `src/missing.c`, [b](b.md), [c](c.md); "
                     "`NCCLSHIM_IN_BLOB`; [s](b.md#a-section), [t](b.md#no-section), "
                     "[u](#top-1), [v](../src/a), [w](https://example.com/x.md)\n"
                     "# Top\n\n## Top\n\n```\n# not a heading\n```\n[x](#not-a-heading)\n",
        "docs/b.md": "`NCCL_NVLS_ENABLE`\n\n## A `section`\n",
        "docs/README.md": "- [a.md](a.md)\n- [a.md](a.md)\n- [hardening.md](hardening.md)\n"
                          "- [reference.md](reference.md)\n",
        "src/b.c": 'const char *p = getenv("PATH");\n',
        "src/c.c": 'const char *h = getenv("HOME");\n',
        "docs/reference.md": "## Environment variables\n\nPlain getenv: `src/c.c`, because.\n\n"
                             "| variable | read by | effect |\n|---|---|---|\n"
                             "| `NCCLSHIM_READ` | a | b |\n\n"
                             "## Capabilities\n\n| capability | needs NCCL | and |\n|---|---|---|\n"
                             "| `split` | 2.18.1 | ncclCommSplit |\n"
                             "| `fp8` | 2.24.4 | (types) |\n"
                             "| `grow` | 2.29.2 | ncclCommGrow |\n",
        "include/ncclshim/ncclshim.h": "#define NCCLSHIM_CAPABILITIES(X) \\\n"
                                       '  X(SPLIT, "split", 21801, ncclCommSplit) \\\n'
                                       '  X(FP8, "fp8", 22403, ncclAllReduce) \\\n'
                                       '  X(GROW, "grow", 22902, ncclCommGrow, '
                                       'ncclCommGetUniqueId) \\\n'
                                       '  X(REVOKE, "revoke", 22807, ncclCommRevoke)\n\n',
        "bench/results/README.md": "`h200x2/x.csv`, `h200x2/gone.csv`, `$OUT/y.csv`, "
                                   "`x.csv`, `lost.csv`\n",
        "bench/results/h200x2/x.csv": "case,verdict\n",
        "docs/hardening.md": "## CI jobs\n\n| job | what |\n|---|---|\n| lint | x |\n"
                             "| gone | y |\n\n## Next\n\n| other | z |\n",
        ".ci/run": "job lint lint_job\njob new new_job\n",
    }
    expected = ["NCCLSHIM_GONE is nowhere", "NCCL_MADE_UP: not read", "-Dnope is not",
                "src/missing.c does not exist", "link c.md: docs/c.md is not in the tree",
                "NCCLSHIM_IN_BLOB is nowhere", "run-x.tar.xz: an archive in bench/results/",
                "runs job new, which docs/hardening.md's CI table lacks",
                "lists job gone, which .ci/run does not run",
                "reads NCCLSHIM_HIDDEN, which no doc",
                "option quiet (meson_options.txt) is in no doc",
                "b.md#no-section: docs/b.md has no heading #no-section",
                "link ../src/a: src/a is not in the tree",
                "link #not-a-heading: docs/a.md has no heading",
                "h200x2/gone.csv is not committed", "lost.csv is not committed",
                "b.md has no entry in the index", "a.md has 2 entries in the index",
                "capability fp8 needs 2.24.3", "capability grow: the list has ncclCommGrow, "
                "ncclCommGetUniqueId, the table ncclCommGrow",
                "capability revoke (include/ncclshim/ncclshim.h) is not in the table",
                "src/a.c reads NCCLSHIM_HIDDEN, which the environment table lacks",
                "src/b.c calls getenv(), not secure_getenv()"]
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in files.items():
            os.makedirs(os.path.join(tmp, os.path.dirname(name)), exist_ok=True)
            if text is None:  # binary: a NUL byte, and a name only the doc has
                with open(os.path.join(tmp, name), "wb") as f:
                    f.write(b"\0NCCLSHIM_IN_BLOB\0")
            else:
                with open(os.path.join(tmp, name), "w") as f:
                    f.write(text)
        subprocess.run(["git", "init", "-q", tmp], check=True)
        subprocess.run(["git", "-C", tmp, "add", "."], check=True)
        out = subprocess.run([sys.executable, __file__], cwd=tmp, capture_output=True,
                             text=True, env=dict(os.environ, CHECK_DOCS_ROOT=tmp)).stdout
    missed = [e for e in expected if e not in out]
    extra = len(out.splitlines()) - 1 - len(expected)
    print(out, end="")
    if missed or extra:
        print(f"self-test: missed {missed}, {extra} problems beyond those expected")
        return 1
    print(f"self-test: all {len(expected)} mistakes found")
    return 0


if __name__ == "__main__":
    sys.exit(self_test() if sys.argv[1:] == ["--self-test"] else main())
