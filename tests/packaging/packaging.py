#!/usr/bin/env python3
"""Packaging checks: what an install gives its consumers. One check per run:

    packaging.py install           `meson install --destdir`: files, links, SONAMEs, headers
                                   that compile alone, .pc files, the CMake files, the
                                   recorder's compare command, the probe (run with no
                                   LD_LIBRARY_PATH, from the tree and from a moved copy) and
                                   its man page
    packaging.py meson-subproject  tests/packaging/meson-consumer with ncclshim as its
                                   subproject (subprojects/ncclshim -> this checkout)
    packaging.py meson-pkgconfig   the same project against the installed tree, pkg-config
    packaging.py cmake             tests/packaging/cmake-consumer: find_package(ncclshim)
                                   against the installed tree; the version file's answers

The consumers run on a fake NCCL and must report the ncclshim they were built against.
Environment (tests/packaging/meson.build sets it): MESON, CC, SOURCE_ROOT, BUILD_ROOT,
FAKE_NCCL (a fake libnccl.so.2 of version 2.28.9), VERSION (ncclshim's), PYTHONPATH (tests/support/,
for support.py).
Exit status: 0 pass, 1 fail, 77 skipped (cmake absent).
"""
import glob
import json
import os
import shutil
import subprocess
import sys

from support import check, clean_env, dynamic, main, run

MESON = os.environ["MESON"].split()
SOURCE_ROOT = os.environ["SOURCE_ROOT"]
BUILD_ROOT = os.environ["BUILD_ROOT"]
FAKE_NCCL = os.environ["FAKE_NCCL"]
VERSION = os.environ["VERSION"]
FAKE_VERSION = "22809"
MAJOR = VERSION.split(".")[0]
CONSUMERS = os.path.join(SOURCE_ROOT, "tests", "packaging")


# ---- The installed tree --------------------------------------------------------------


class Tree:
    """`meson install --destdir` of the build this test belongs to, into tmp."""

    def __init__(self, tmp):
        self.destdir = os.path.join(tmp, "root")
        run(MESON + ["install", "-C", BUILD_ROOT, "--destdir", self.destdir, "--no-rebuild",
                     "--skip-subprojects", "--quiet"])
        path = os.path.join(BUILD_ROOT, "meson-info", "intro-buildoptions.json")
        with open(path, encoding="utf-8") as f:
            options = {o["name"]: o["value"] for o in json.load(f)}
        self.prefix = self.staged(options["prefix"])
        self.lib = self.staged(os.path.join(options["prefix"], options["libdir"]))
        self.include = self.staged(os.path.join(options["prefix"], options["includedir"]))
        self.bin = self.staged(os.path.join(options["prefix"], options["bindir"]))
        self.mandir = self.staged(os.path.join(options["prefix"], options["mandir"]))
        self.pkgconfig = os.path.join(self.lib, "pkgconfig")
        self.cmake = os.path.join(self.lib, "cmake", "ncclshim")

    def staged(self, path):
        return self.destdir + path if os.path.isabs(path) else os.path.join(self.destdir, path)

    def pkg_config_env(self):
        # Only this tree's .pc files; their prefix= moved under the staging directory; -I and
        # -L kept even for a prefix of /usr.
        return clean_env(PKG_CONFIG_LIBDIR=self.pkgconfig, PKG_CONFIG_PATH="",
                         PKG_CONFIG_SYSROOT_DIR=self.destdir, PKG_CONFIG_ALLOW_SYSTEM_CFLAGS="1",
                         PKG_CONFIG_ALLOW_SYSTEM_LIBS="1")


def check_library(tree, name):
    """lib<name>.so.X.Y.Z, lib<name>.so.X -> it, lib<name>.so -> it; SONAME lib<name>.so.X."""
    real = os.path.join(tree.lib, "lib%s.so.%s" % (name, VERSION))
    check(os.path.isfile(real) and not os.path.islink(real), "%s is not installed" % real)
    check(dynamic(real, "SONAME") == ["lib%s.so.%s" % (name, MAJOR)],
          "%s: SONAME %s, expected lib%s.so.%s (the SONAME number is the major version)"
          % (real, dynamic(real, "SONAME"), name, MAJOR))
    for link in ["lib%s.so.%s" % (name, MAJOR), "lib%s.so" % name]:
        path = os.path.join(tree.lib, link)
        check(os.path.islink(path), "%s is not an installed symlink" % path)
        check(os.path.realpath(path) == os.path.realpath(real), "%s does not lead to %s"
              % (path, real))
    return real


def check_install(tmp):
    tree = Tree(tmp)
    lib = check_library(tree, "ncclshim")
    needed = [n for n in dynamic(lib, "NEEDED") if not n.startswith(("libc.so", "libdl.so",
                                                                     "libpthread.so"))]
    check(not needed, "libncclshim.so links more than libc: %s" % needed)
    dropin = check_library(tree, "ncclshim-nccl")
    needed = [n for n in dynamic(dropin, "NEEDED") if not n.startswith(("libc.so", "libdl.so",
                                                                        "libpthread.so"))]
    check(not needed, "libncclshim-nccl.so (one file) links more than libc: %s" % needed)

    # Every public header, and nothing else; each compiles alone from the installed tree.
    public = sorted(os.path.basename(h) for h in glob.glob(
        os.path.join(SOURCE_ROOT, "include", "ncclshim", "*.h")))
    installed = sorted(os.listdir(os.path.join(tree.include, "ncclshim")))
    check(public == installed, "installed headers %s, public headers %s: update "
          "install_headers in src/meson.build" % (installed, public))
    cc = os.environ.get("CC", "cc").split()
    for header in public:
        proc = subprocess.run(cc + ["-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                                    "-I", tree.include, "-x", "c", "-"],
                              input="#include <ncclshim/%s>\n" % header, capture_output=True,
                              text=True)
        check(proc.returncode == 0, "installed ncclshim/%s does not compile alone:\n%s"
              % (header, proc.stderr))

    env = tree.pkg_config_env()
    for pc in ["ncclshim", "ncclshim-nccl"]:
        got = run(["pkg-config", "--modversion", pc], env=env).strip()
        check(got == VERSION, "%s.pc says version %s, expected %s" % (pc, got, VERSION))
    cflags = run(["pkg-config", "--cflags", "--libs", "ncclshim"], env=env)
    check("-I" + tree.include in cflags and "-L" + tree.lib in cflags,
          "pkg-config ncclshim points outside the installed tree: %s" % cflags)

    for name in ["ncclshimConfig.cmake", "ncclshimConfigVersion.cmake"]:
        check(os.path.isfile(os.path.join(tree.cmake, name)), "%s not installed in %s"
              % (name, tree.cmake))

    compare = os.path.join(tree.bin, "ncclshim-record-compare")
    check(os.access(compare, os.X_OK), "%s is not installed" % compare)
    check("which rank is behind" in run([compare, "--help"]), "ncclshim-record-compare --help")

    check_installed_probe(tree, tmp)


def check_installed_probe(tree, tmp):
    """The probe finds the tree's library through its RUNPATH, with no LD_LIBRARY_PATH, also
    after the whole tree is moved; its man page is installed."""
    probe = os.path.join(tree.bin, "ncclshim-probe")
    check(os.access(probe, os.X_OK), "%s is not installed" % probe)
    runpath = dynamic(probe, "RUNPATH")
    check(len(runpath) == 1 and runpath[0].startswith("$ORIGIN/"),
          "installed probe: RUNPATH %s, expected one $ORIGIN-relative entry" % runpath)
    check(os.path.realpath(runpath[0].replace("$ORIGIN", tree.bin)) ==
          os.path.realpath(tree.lib), "installed probe: RUNPATH %s does not lead from %s to %s"
          % (runpath[0], tree.bin, tree.lib))
    moved = os.path.join(tmp, "moved")
    shutil.copytree(tree.destdir, moved, symlinks=True)
    for root in (tree.destdir, moved):
        here = os.path.join(root, os.path.relpath(probe, tree.destdir))
        lib = os.path.join(root, os.path.relpath(tree.lib, tree.destdir))
        # ld.so's own account of where libncclshim.so.0 came from.
        trace = run([here], env=clean_env(LD_TRACE_LOADED_OBJECTS="1"))
        used = [line.split("=>")[1].split("(")[0].strip() for line in trace.splitlines()
                if "libncclshim.so" in line and "=>" in line]
        check(len(used) == 1 and os.path.realpath(used[0]) ==
              os.path.realpath(os.path.join(lib, "libncclshim.so.%s" % MAJOR)),
              "%s loads libncclshim from %s, not from %s" % (here, used, lib))
        out = run([here, "--json", "--no-devices", "--library", FAKE_NCCL], env=clean_env())
        doc = json.loads(out)
        check(doc["nccl"]["version"] == "2.28.9" and doc["ncclshim"]["version"] == VERSION,
              "installed probe reported %s" % out)

    path = os.path.join(tree.mandir, "man1", "ncclshim-probe.1")
    check(os.path.isfile(path), "man page %s is not installed" % path)
    with open(path, encoding="utf-8") as f:
        check(f.read().startswith(".TH NCCLSHIM-PROBE 1"), "%s is not the probe's man page"
              % path)


# ---- Consumers ----------------------------------------------------------------------


def run_consumers(build, libdir):
    """Run the consumers built in `build`: NCCL from the fake, ncclshim from libdir."""
    env = clean_env(NCCLSHIM_NCCL_LIBRARY=FAKE_NCCL)
    out = run([os.path.join(build, "consumer"), FAKE_VERSION], env=env).strip()
    prefix = "ncclshim %s at " % VERSION
    check(out.startswith(prefix), "consumer printed %r, expected %r..." % (out, prefix))
    used, nccl = out[len(prefix):].split("; NCCL 2.28.9 from ")
    check(os.path.realpath(used).startswith(os.path.realpath(libdir) + os.sep),
          "consumer used %s, not the ncclshim in %s" % (used, libdir))
    check(os.path.realpath(nccl) == os.path.realpath(FAKE_NCCL), "consumer loaded %s" % nccl)
    out = run([os.path.join(build, "dropin_consumer"), FAKE_VERSION], env=env).strip()
    check(out == "NCCL %s through the drop-in" % FAKE_VERSION, "dropin_consumer: %r" % out)


def check_meson_subproject(tmp):
    src = os.path.join(tmp, "consumer")
    shutil.copytree(os.path.join(CONSUMERS, "meson-consumer"), src)
    os.mkdir(os.path.join(src, "subprojects"))
    os.symlink(SOURCE_ROOT, os.path.join(src, "subprojects", "ncclshim"))
    build = os.path.join(tmp, "build")
    # Never the machine's own ncclshim, never a download.
    run(MESON + ["setup", build, src, "--force-fallback-for=ncclshim,ncclshim-nccl",
                 "--wrap-mode=nodownload", "-Dncclshim:tests=disabled"], env=clean_env())
    run(MESON + ["compile", "-C", build, "consumer", "dropin_consumer"])
    run_consumers(build, os.path.join(build, "subprojects", "ncclshim"))


def check_meson_pkgconfig(tmp):
    tree = Tree(tmp)
    build = os.path.join(tmp, "build")
    env = tree.pkg_config_env()
    run(MESON + ["setup", build, os.path.join(CONSUMERS, "meson-consumer"),
                 "--wrap-mode=nofallback"], env=env)
    run(MESON + ["compile", "-C", build], env=env)
    run_consumers(build, tree.lib)


def cmake_version_answers(cmake, tmp, version_file):
    """find_package's view of ncclshimConfigVersion.cmake, for requests around VERSION."""
    major, minor = (int(p) for p in VERSION.split(".")[:2])
    cases = [  # (request, compatible)
        (VERSION, True), ("%d.%d" % (major, minor), True), ("", True),
        ("%d.%d" % (major, minor + 1), False), ("%d.0" % (major + 1), False),
        ("%d.%d...<%d.0" % (major, minor, major + 1), True),
        ("%d.0...%d.0" % (major + 1, major + 2), False),
    ]
    for request, want in cases:
        lines = []
        if "..." in request:
            low, high = request.split("...")
            rng = "EXCLUDE" if high.startswith("<") else "INCLUDE"
            high = high.lstrip("<")
            lines += ['set(PACKAGE_FIND_VERSION_RANGE "%s")' % request,
                      'set(PACKAGE_FIND_VERSION_RANGE_MAX "%s")' % rng,
                      'set(PACKAGE_FIND_VERSION_MIN "%s")' % low,
                      'set(PACKAGE_FIND_VERSION_MIN_MAJOR "%s")' % low.split(".")[0],
                      'set(PACKAGE_FIND_VERSION_MAX "%s")' % high,
                      'set(PACKAGE_FIND_VERSION "%s")' % low,
                      'set(PACKAGE_FIND_VERSION_MAJOR "%s")' % low.split(".")[0]]
        elif request:
            lines += ['set(PACKAGE_FIND_VERSION "%s")' % request,
                      'set(PACKAGE_FIND_VERSION_MAJOR "%s")' % request.split(".")[0]]
        lines += ["set(CMAKE_SIZEOF_VOID_P 8)", 'include("%s")' % version_file,
                  'message("compatible=${PACKAGE_VERSION_COMPATIBLE}")']
        script = os.path.join(tmp, "version.cmake")
        with open(script, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        proc = subprocess.run([cmake, "-P", script], capture_output=True, text=True)
        got = "compatible=TRUE" in proc.stderr
        check(proc.returncode == 0 and got == want, "find_package(ncclshim %s) against %s: "
              "compatible=%s, expected %s\n%s" % (request, VERSION, got, want, proc.stderr))
    print("version file: %d requests answered as expected" % len(cases))


def check_cmake(tmp):
    cmake = shutil.which("cmake")
    if cmake is None:
        print("SKIP: cmake is not installed")
        sys.exit(77)
    tree = Tree(tmp)
    build = os.path.join(tmp, "build")
    # Only the installed tree: no system paths, no package registries.
    run([cmake, "-S", os.path.join(CONSUMERS, "cmake-consumer"), "-B", build,
         "-DCMAKE_PREFIX_PATH=" + tree.prefix, "-DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF",
         "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF",
         "-DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF"],
        env=clean_env(CC=os.environ.get("CC", "cc").split()[-1]))
    with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8") as f:
        found = [x.split("=", 1)[1].strip() for x in f if x.startswith("ncclshim_DIR:")]
    check(found and os.path.realpath(found[0]) == os.path.realpath(tree.cmake),
          "find_package found ncclshim in %s, not %s" % (found, tree.cmake))
    run([cmake, "--build", build])
    run_consumers(build, tree.lib)
    cmake_version_answers(cmake, tmp, os.path.join(tree.cmake, "ncclshimConfigVersion.cmake"))


CHECKS = {"install": check_install, "meson-subproject": check_meson_subproject,
          "meson-pkgconfig": check_meson_pkgconfig, "cmake": check_cmake}


if __name__ == "__main__":
    sys.exit(main(__doc__, CHECKS, "ncclshim-packaging-"))
