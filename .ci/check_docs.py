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
  - each repository path (`src/...`, `tests/...`, a link target, ...) exists in the tree;
  - docs/hardening.md's CI table has a row for each job .ci/run runs, and no other;
  - bench/results/ holds no archive (it keeps CSVs, summaries and plots: bench/results/README.md).
And the reverse: each NCCLSHIM_* environment variable the code reads (a string literal in
src/, loader/, include/, bindings/rust/) and each option of meson_options.txt is documented.
Only what is committed as text is read (git's own test: no file git calls binary, such as a
plot or a fuzz input).
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
    "NCCL_2297",  # the GPU scripts' path to NCCL 2.29.7 (bench/gpu)
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
        if os.path.exists(os.path.join(ROOT, path)):
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

    problems = ci_table(tree) + [
        f"{f}: an archive in bench/results/, which keeps plain text (bench/results/README.md)"
        for f in files if f.startswith("bench/results/") and ARCHIVE.search(f)]
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


def is_nccl_api(word, code_words):
    """NCCL_ constants of nccl.h (NCCL_CONFIG_INITIALIZER, ...) are in the code too."""
    return word in code_words


def candidate_paths(line, doc):
    """Repository paths named on a line: in backticks or as relative link targets."""
    found = []
    for m in re.finditer(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", line):
        target = m.group(1)
        if "://" in target or target.startswith("mailto:"):
            continue
        found.append(os.path.normpath(os.path.join(os.path.dirname(doc), target)))
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
                     "`NCCLSHIM_IN_BLOB`\n",
        "docs/b.md": "`NCCL_NVLS_ENABLE`\n",
        "docs/hardening.md": "## CI jobs\n\n| job | what |\n|---|---|\n| lint | x |\n"
                             "| gone | y |\n\n## Next\n\n| other | z |\n",
        ".ci/run": "job lint lint_job\njob new new_job\n",
    }
    expected = ["NCCLSHIM_GONE is nowhere", "NCCL_MADE_UP: not read", "-Dnope is not",
                "src/missing.c does not exist", "docs/c.md does not exist",
                "NCCLSHIM_IN_BLOB is nowhere", "run-x.tar.xz: an archive in bench/results/",
                "runs job new, which docs/hardening.md's CI table lacks",
                "lists job gone, which .ci/run does not run",
                "reads NCCLSHIM_HIDDEN, which no doc",
                "option quiet (meson_options.txt) is in no doc"]
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
