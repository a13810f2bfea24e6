#!/usr/bin/env python3
"""The NCCL header corpus: what each release declares, read from its own headers.

A corpus is a directory with one subdirectory per release holding that release's nccl.h and,
from 2.28, nccl_device.h and nccl_device/. The declared functions are found by running the C++
preprocessor over the release's headers and reading the extern "C" declarations without a
body that come from the release's own files: nccl.h's functions and the device API's host
functions. Nothing here knows a release by name, so a release added later is checked as is.

  corpus.py releases ROOT...
      one line per release: NAME DIR VERSION_CODE HAS_DEVICE (0/1); a ROOT holding nccl.h
      itself is one release, named by its version
  corpus.py generate --rows ROWS --release DIR --out H -- CXX...
      H: the declared functions that ncclshim's list has, with their declared types, for the
      signature check (abi_signatures.cc) and the address program (addresses.cc)
  corpus.py coverage --rows ROWS --release DIR --declared-later TXT [--corpus ROOT]... -- CXX...
      the test: every declared function is in the list with the right first version, and
      every row the release's version should have is declared (on some platform: the
      headers are read once as usual and once per NCCL_OS_* macro they test; the device
      API's rows only where the release has nccl_device.h); the roots together give the
      release's predecessor

ROWS is the output of tests/abi/list_rows (NAME FIRST_VERSION POLICY per line). CXX is the
C++ compiler command with the include flags for the release (cuda_runtime.h etc.)."""

import argparse
import os
import re
import subprocess
import sys
import tempfile


def version_code(release_dir):
    """NCCL_VERSION_CODE as nccl.h spells it (MAJOR*10000 + MINOR*100 + PATCH from 2.9)."""
    text = open(os.path.join(release_dir, "nccl.h"), encoding="utf-8", errors="replace").read()
    parts = []
    for key in ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"):
        m = re.search(r"#define\s+%s\s+(\d+)" % key, text)
        if m is None:
            raise SystemExit("%s/nccl.h: no %s" % (release_dir, key))
        parts.append(int(m.group(1)))
    major, minor, patch = parts
    if major <= 2 and minor <= 8:
        return major * 1000 + minor * 100 + patch
    return major * 10000 + minor * 100 + patch


def has_device(release_dir):
    return os.path.isfile(os.path.join(release_dir, "nccl_device.h"))


def releases(root):
    """The releases of a corpus (each subdirectory with an nccl.h), oldest first; a directory
    that holds an nccl.h itself is one release."""
    if os.path.isfile(os.path.join(root, "nccl.h")):
        d = os.path.realpath(root)
        return [(fmt(version_code(d)), d, version_code(d), has_device(d))]
    found = []
    for name in sorted(os.listdir(root)):
        d = os.path.realpath(os.path.join(root, name))
        if os.path.isfile(os.path.join(d, "nccl.h")):
            found.append((name, d, version_code(d), has_device(d)))
    found.sort(key=lambda r: r[2])
    return found


def preprocess(cxx, release_dir, defines=()):
    """The release's headers through the C++ preprocessor. A system header that another
    platform's branch includes (intrin.h for Windows) is stood in for by an empty file."""
    source = "#include <nccl.h>\n"
    if has_device(release_dir):
        source += "#include <nccl_device.h>\n"
    with tempfile.TemporaryDirectory() as stand_ins:
        cmd = cxx + ["-std=c++17", "-E"] + ["-D" + d for d in defines] + \
            ["-I", release_dir, "-idirafter", stand_ins, "-x", "c++", "-"]
        for _ in range(20):
            run = subprocess.run(cmd, input=source, capture_output=True, text=True)
            missing = re.search(r"fatal error: '?([\w./-]+)'?(?:: No such file| file not found)",
                                run.stderr)  # gcc's and clang's wording
            if run.returncode == 0 or missing is None or not defines:
                break
            path = os.path.join(stand_ins, missing.group(1))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").close()
    if run.returncode != 0:
        raise SystemExit("preprocessing %s failed (%s):\n%s"
                         % (release_dir, " ".join(cmd), run.stderr[-4000:]))
    return run.stdout


def platform_macros(release_dir):
    """The NCCL_OS_* macros the release's headers choose declarations by."""
    found = set()
    for base, _, files in os.walk(release_dir):
        for f in files:
            if f.endswith(".h"):
                text = open(os.path.join(base, f), encoding="utf-8", errors="replace").read()
                found.update(re.findall(r"\bNCCL_OS_\w+", text))
    return sorted(found)


def own_text(output, release_dir):
    """The preprocessed text that comes from the release's own files."""
    prefix = os.path.realpath(release_dir) + os.sep
    keep, mine = [], False
    for line in output.splitlines():
        m = re.match(r'#\s*\d+\s+"([^"]*)"', line)
        if m:
            name = m.group(1)
            mine = not name.startswith("<") and os.path.realpath(name).startswith(prefix)
            continue
        if mine:
            keep.append(line)
    return "\n".join(keep)


DECLARATION = re.compile(r"\b(p?nccl\w+)\s*\(")


def declarations(text):
    """The extern "C" functions declared (not defined) at namespace scope, as a dict from
    name to the declaration's pointer type ("ncclResult_t (*)(int *version)")."""
    names = {}
    scopes = []  # per open brace: "extern-c", "namespace" or "body"
    statement = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':  # a string literal: kept whole, so that braces inside do not count
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            statement.append(text[i:j + 1])
            i = j + 1
            continue
        if c == "{":
            head = " ".join("".join(statement).split())
            if "body" in scopes:
                scopes.append("body")
            elif head.endswith('extern "C"'):
                scopes.append("extern-c")
            elif re.match(r"^(inline\s+)?namespace\b", head):
                scopes.append("namespace")
            else:
                scopes.append("body")
            statement = []
        elif c == "}":
            if scopes:
                scopes.pop()
            statement = []
        elif c == ";":
            if "body" not in scopes:
                found = declared_function(" ".join("".join(statement).split()),
                                          "extern-c" in scopes)
                if found:
                    names[found[0]] = found[1]
            statement = []
        else:
            statement.append(c)
        i += 1
    return names


def declared_function(statement, in_extern_c):
    if not (in_extern_c or statement.startswith('extern "C"')):
        return None
    words = set(re.findall(r"\w+", statement))
    # inline (also MSVC's spellings, in the Windows branch): defined in the header, not exported
    if words & {"typedef", "inline", "template", "static", "using", "__forceinline"}:
        return None
    m = DECLARATION.search(statement)
    if m is None:
        return None
    depth, end = 0, len(statement)
    for j in range(m.end() - 1, len(statement)):
        depth += {"(": 1, ")": -1}.get(statement[j], 0)
        if depth == 0:
            end = j + 1
            break
    returns = strip_attributes(statement[:m.start(1)].replace('extern "C"', ""))
    return m.group(1), "%s (*)%s" % (returns.strip(), statement[m.end() - 1:end])


def strip_attributes(text):
    """text without __attribute__((...)) groups."""
    while True:
        at = text.find("__attribute__")
        if at < 0:
            return text
        depth, j = 0, text.find("(", at)
        while j < len(text):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        text = text[:at] + text[j + 1:]


def read_rows(path):
    rows = {}
    for line in open(path, encoding="utf-8"):
        parts = line.split()
        if len(parts) == 3:
            rows[parts[0]] = (int(parts[1]), parts[2])
    return rows


def fmt(code):
    return "%d.%d.%d" % (code // 10000, code // 100 % 100, code % 100)


def declared_in(cxx, release_dir, every_platform=False):
    """The functions declared for a program built as usual on this platform; with
    every_platform, also those declared when one of the platform macros is defined (a
    function NCCL exports everywhere may be declared only in another platform's branch)."""
    configurations = [()]
    if every_platform:
        configurations += [(m,) for m in platform_macros(release_dir)]
    names = {}
    for defines in reversed(configurations):  # the usual build's declaration wins
        names.update(declarations(own_text(preprocess(cxx, release_dir, defines), release_dir)))
    plain = sorted(x for x in names if not x.startswith("pnccl"))
    return plain, names


def read_declared_later(path):
    """NAME FIRST_DECLARED: functions NCCL exported before its headers declared them."""
    later = {}
    for line in open(path, encoding="utf-8"):
        parts = line.split("#")[0].split()
        if len(parts) >= 2:
            major, minor, patch = (int(x) for x in parts[1].split("."))
            later[parts[0]] = major * 10000 + minor * 100 + patch
    return later


def generate(args, cxx):
    rows = read_rows(args.rows)
    plain, names = declared_in(cxx, args.release)
    listed = [x for x in plain if x in rows]
    profiled = [x for x in listed if "p" + x in names]
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("/* Generated by tests/abi/corpus.py from %s: the functions it declares that\n"
                " * ncclshim's list has, each with the pointer type of its declaration (which\n"
                " * picks the extern \"C\" function out of a C++ overload set), and the ones"
                " whose\n"
                " * pncclX alias it declares too. Include after the release's headers. */\n"
                % os.path.basename(args.release))
        f.write("namespace declared {\n")
        for x in listed:
            f.write("using %s = %s;\n" % (x, names[x]))
        f.write("}  // namespace declared\n")
        f.write("#define DECLARED_LISTED(X)%s\n" % "".join(" X(%s)" % x for x in listed))
        f.write("#define DECLARED_PROFILING(X)%s\n" % "".join(" X(%s)" % x for x in profiled))
    return 0


def coverage(args, cxx):
    rows = read_rows(args.rows)
    later = read_declared_later(args.declared_later)
    code = version_code(args.release)
    plain, _ = declared_in(cxx, args.release, every_platform=True)
    previous = None
    if args.corpus:
        older = sorted((r for root in args.corpus for r in releases(root) if r[2] < code),
                       key=lambda r: r[2])
        previous = older[-1] if older else None
    problems = []
    for name in plain:
        if name not in rows:
            problems.append("%s is declared but not in ncclshim's list" % name)
            continue
        first, policy = rows[name]
        if first > code:
            problems.append("%s is declared by %s but listed from %s"
                            % (name, fmt(code), fmt(first)))
    device_headers = has_device(args.release)
    for name, (first, policy) in sorted(rows.items()):
        if policy == "DEVICE" and not device_headers:
            continue  # a release held without its nccl_device.h declares none of them
        if max(first, later.get(name, 0)) <= code and name not in plain:
            problems.append("%s is listed from %s but %s does not declare it" %
                            (name, fmt(first), fmt(code)))
    # A function first declared here (absent from the previous release of the corpus) must be
    # listed with a version after that release's: the list's first version is exact, unless
    # declared_later.txt records that NCCL exported it before declaring it.
    if previous is not None:
        before, _ = declared_in(cxx, previous[1], every_platform=True)
        for name in sorted(set(plain) - set(before)):
            if name not in rows:
                continue
            if name in later:
                if later[name] != code:
                    problems.append("%s is first declared by %s, not %s as %s says" %
                                    (name, fmt(code), fmt(later[name]),
                                     os.path.basename(args.declared_later)))
            elif rows[name][0] <= previous[2]:
                problems.append("%s is new in %s (not in %s) but listed from %s" %
                                (name, fmt(code), previous[0], fmt(rows[name][0])))
    device = [x for x in plain if rows.get(x, (0, ""))[1] == "DEVICE"]
    print("%s (%s): %d functions declared, %d of them the device API's host functions%s" %
          (os.path.basename(args.release), fmt(code), len(plain), len(device),
           "; previous release in the corpus: %s" % previous[0] if previous else ""))
    for p in problems:
        print("FAIL " + p)
    print("%s: %d problems" % ("FAIL" if problems else "PASS", len(problems)))
    return 1 if problems else 0


def main():
    argv = sys.argv[1:]
    cxx = []
    if "--" in argv:
        cut = argv.index("--")
        argv, cxx = argv[:cut], argv[cut + 1:]
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("releases")
    p.add_argument("roots", nargs="*")
    p = sub.add_parser("generate")
    p.add_argument("--rows", required=True)
    p.add_argument("--release", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("coverage")
    p.add_argument("--rows", required=True)
    p.add_argument("--release", required=True)
    p.add_argument("--corpus", action="append", default=[])
    p.add_argument("--declared-later", required=True)
    args = parser.parse_args(argv)
    if args.command == "releases":
        for root in args.roots:
            if not os.path.isdir(root):
                raise SystemExit("%s: not a directory" % root)
            for name, d, code, device in releases(root):
                print("%s %s %d %d" % (name, d, code, int(device)))
        return 0
    if not cxx:
        raise SystemExit("no compiler command after --")
    return generate(args, cxx) if args.command == "generate" else coverage(args, cxx)


if __name__ == "__main__":
    sys.exit(main())
