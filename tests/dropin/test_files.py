#!/usr/bin/env python3
"""The drop-in's shipped files, outside the build tree (suite 'packaging').

    test_files.py alone     libncclshim-nccl.so.0 by itself: it needs only libc, exports only
                            NCCL's names (and pnccl aliases, and its marker); a program links
                            with that one file and runs with it
    test_files.py compare   ncclshim-record-compare on dumps of the interposed program: the
                            rank behind and the seq, ranks in step, a missing rank, ranks that
                            disagree, no dumps, a broken dump

Environment (tests/dropin/meson.build): CC, SOURCE_ROOT, DROPIN_LIBRARY, FAKE_NCCL, INTERPOSED,
COMPARE. Exit status: 0 pass, 1 fail.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ALLOWED_NEEDED = ("libc.so", "libdl.so", "libpthread.so")


class Failure(Exception):
    pass


def check(ok, message):
    if not ok:
        raise Failure(message)


def run(cmd, env=None, expect=0):
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    print("$ %s  -> %d" % (" ".join(cmd), proc.returncode))
    out = proc.stdout + proc.stderr
    if out.strip():
        print(out.rstrip())
    check(proc.returncode == expect, "exit status %d, expected %d: %s" % (proc.returncode, expect,
                                                                          " ".join(cmd)))
    return proc.stdout


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD") and not k.startswith("NCCLSHIM_")}
    env.update(extra)
    return env


def dynamic(path, tag):
    out = run(["readelf", "-d", path])
    return [l.split("[", 1)[1].rstrip("]") for l in out.splitlines() if "(%s)" % tag in l]


def check_alone(tmp):
    lib = os.path.join(tmp, "lib")
    os.mkdir(lib)
    copy = os.path.join(lib, "libncclshim-nccl.so.0")
    shutil.copy(os.path.realpath(os.environ["DROPIN_LIBRARY"]), copy)
    os.symlink("libncclshim-nccl.so.0", os.path.join(lib, "libncclshim-nccl.so"))
    needed = dynamic(copy, "NEEDED")
    check(all(n.startswith(ALLOWED_NEEDED) for n in needed), "the drop-in needs %s" % needed)
    check(not dynamic(copy, "RUNPATH") and not dynamic(copy, "RPATH"), "the drop-in has a RUNPATH")
    names = [l.split()[-1] for l in run(["nm", "-D", "--defined-only", copy]).splitlines()]
    stray = [n for n in names if not re.match(r"^p?nccl[A-Z]\w*$", n)
             and n != "ncclshim_dropin_identity"]
    check(names and not stray, "the drop-in exports more than NCCL's names: %s" % stray)

    # Link a program built against NCCL's names with that one file, nothing else on the path.
    program = os.path.join(tmp, "dropin_user")
    source = os.path.join(os.environ["SOURCE_ROOT"], "tests", "dropin", "dropin_user.c")
    run(os.environ["CC"].split() + ["-std=c11", "-I", os.path.join(os.environ["SOURCE_ROOT"],
                                                                     "include"),
                                     source, "-o", program, "-L", lib, "-lncclshim-nccl"],
        env=clean_env(LIBRARY_PATH=""))
    check(dynamic(program, "NEEDED")[0] == "libncclshim-nccl.so.0" and not any(
        "libncclshim.so" in n or "libnccl.so" in n for n in dynamic(program, "NEEDED")),
          "the program needs %s" % dynamic(program, "NEEDED"))
    out = run([program], env=clean_env(LD_LIBRARY_PATH=lib,
                                       NCCLSHIM_NCCL_LIBRARY=os.environ["FAKE_NCCL"]))
    check("version=22809\n" in out and "allreduce_result=0\n" in out, "the program printed %r" % out)


def record(directory, *args):
    os.makedirs(directory, exist_ok=True)
    run([os.environ["INTERPOSED"]] + list(args), env=clean_env(
        LD_PRELOAD=os.environ["DROPIN_LIBRARY"], NCCLSHIM_RECORD="100",
        NCCLSHIM_RECORD_DIR=directory, NCCLSHIM_RECORD_AT_EXIT="1"))
    return directory


def compare(expect, *args):
    return run([sys.executable, os.environ["COMPARE"]] + list(args), env=clean_env(),
               expect=expect)


def check_compare(tmp):
    job = record(os.path.join(tmp, "behind"), "ops", "0", "5")
    record(job, "ops", "1", "4")
    out = compare(1, job)
    check("verdict: rank 1 is behind on communicator " in out and " at seq 5: it stopped after "
          "seq 4, while rank 0 issued seq 5 (ncclAllReduce count 1024 ncclFloat32 ncclSum" in out,
          "the rank behind not named")

    job = record(os.path.join(tmp, "in-step"), "ops", "0", "3")
    record(job, "ops", "1", "3")
    check("verdict: every communicator in step" in compare(0, job), "in step not seen")
    # One dump of two ranks (given as a file): the other rank is missing.
    alone = [os.path.join(job, f) for f in sorted(os.listdir(job)) if "-rank0" in f]
    check("verdict: no dump from rank 1 of communicator" in compare(1, *alone), "missing rank")

    job = record(os.path.join(tmp, "disagree"), "ops", "1", "3")
    record(job, "error")  # rank 0: its third all-reduce has another count, type and op
    out = compare(1, job)
    check(re.search(r"ranks disagree on communicator \w+ at seq 3: rank 0: ncclAllReduce count 8 "
                    r"ncclInt32 ncclMax .*; rank 1: ncclAllReduce count 1024", out), "no disagreement")

    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    compare(2, empty)
    broken = os.path.join(empty, "ncclshim-record-x-1-rank0.jsonl")
    with open(broken, "w") as f:
        f.write('{"kind":"header","format":"ncclshim-record/2","host":"x","pid":1,'
                '"process":"0123456789abcdef","reason":"exit","calls":0}\n{"kind":"call",\n')
    proc = subprocess.run([sys.executable, os.environ["COMPARE"], empty], capture_output=True,
                          text=True)
    check(proc.returncode == 2 and "ncclshim-record-x-1-rank0.jsonl:2: not JSON" in proc.stderr,
          "broken dump: %d %s" % (proc.returncode, proc.stderr))


CHECKS = {"alone": check_alone, "compare": check_compare}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in CHECKS:
        print(__doc__, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="ncclshim-dropin-") as tmp:
        try:
            CHECKS[sys.argv[1]](tmp)
        except Failure as e:
            print("FAIL: %s" % e)
            return 1
    print("ok: %s" % sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
