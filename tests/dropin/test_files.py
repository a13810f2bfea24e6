#!/usr/bin/env python3
"""The drop-in's shipped files, outside the build tree (suite 'packaging').

    test_files.py alone     libncclshim-nccl.so.0 by itself: it needs only libc, exports only
                            NCCL's names (and pnccl aliases, and its marker); a program links
                            with that one file and runs with it
    test_files.py compare   ncclshim-record-compare on dumps of the interposed program: the
                            rank behind and the seq, ranks in step, a missing rank, ranks that
                            disagree, no dumps, a broken dump, a rank whose init NCCL
                            refused (rank -1); on hostile input (exit 2, a
                            message, never a traceback or a hang); two containers' processes
                            with one host name and pid; two processes that claim one rank;
                            captured operations (exit 3); a hang dump's stuck call; one
                            process holding two ranks; a fork that keeps its parent's
                            communicator; two children with one pid; sends and receives
                            matched by peer pair; a directory named like a dump, a lone
                            surrogate, a Latin-1 locale, dumps without a communicator, a
                            report that cannot be written (exit 2)
    test_files.py audit     audit mode (LD_AUDIT) over a Python ctypes program that binds NCCL
                            as vLLM's pynccl does: both ranks recorded, the rank behind named
    test_files.py deepdir   a working directory deeper than PATH_MAX takes dumps (the dump
                            signal dumps there, and the program goes on)

Environment (tests/dropin/meson.build): CC, SOURCE_ROOT, DROPIN_LIBRARY, FAKE_NCCL, INTERPOSED,
COMPARE, UNDER_NCCL, CTYPES_JOB, PYTHONPATH (tests/support/, for support.py). Exit status: 0 pass, 1
fail.
"""
import os
import re
import shutil
import subprocess
import sys

from support import check, clean_env, dynamic, main, run

ALLOWED_NEEDED = ("libc.so", "libdl.so", "libpthread.so")


def check_alone(tmp):
    lib = os.path.join(tmp, "lib")
    os.mkdir(lib)
    copy = os.path.join(lib, "libncclshim-nccl.so.0")
    shutil.copy(os.path.realpath(os.environ["DROPIN_LIBRARY"]), copy)
    os.symlink("libncclshim-nccl.so.0", os.path.join(lib, "libncclshim-nccl.so"))
    needed = dynamic(copy, "NEEDED")
    check(all(n.startswith(ALLOWED_NEEDED) for n in needed), "the drop-in needs %s" % needed)
    check(not dynamic(copy, "RUNPATH") and not dynamic(copy, "RPATH"), "the drop-in has a RUNPATH")
    names = [x.split()[-1] for x in run(["nm", "-D", "--defined-only", copy]).splitlines()]
    stray = [n for n in names if not re.match(r"^p?nccl[A-Z]\w*$", n)
             and n not in ("ncclshim_dropin_identity", "la_version", "la_objopen",
                           "la_symbind32", "la_symbind64", "la_objclose",
                           "la_activity")]
    check(names and not stray, "the drop-in exports more than NCCL's names: %s" % stray)

    # Link a program built against NCCL's names with that one file, nothing else on the path.
    program = os.path.join(tmp, "dropin_user")
    source = os.path.join(os.environ["SOURCE_ROOT"], "tests", "dropin", "dropin_user.c")
    include = os.path.join(os.environ["SOURCE_ROOT"], "include")
    run(os.environ["CC"].split() + ["-std=c11", "-I", include,
                                    source, "-o", program, "-L", lib, "-lncclshim-nccl"],
        env=clean_env(LIBRARY_PATH=""))
    check(dynamic(program, "NEEDED")[0] == "libncclshim-nccl.so.0" and not any(
        "libncclshim.so" in n or "libnccl.so" in n for n in dynamic(program, "NEEDED")),
          "the program needs %s" % dynamic(program, "NEEDED"))
    out = run([program], env=clean_env(LD_LIBRARY_PATH=lib,
                                       NCCLSHIM_NCCL_LIBRARY=os.environ["FAKE_NCCL"]))
    check("version=22809\n" in out and "allreduce_result=0\n" in out,
          "the program printed %r" % out)


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
                    r"ncclInt32 ncclMax .*; rank 1: ncclAllReduce count 1024", out),
          "no disagreement")

    # A rank whose init NCCL refused (rank -1): its error dump is read, the argument as given,
    # and the rank is missing from the communicator.
    job = record(os.path.join(tmp, "bad-rank"), "ops", "0", "2")
    record(job, "badrank")
    check(any('"rank":-1' in open(os.path.join(job, f)).read() for f in os.listdir(job)),
          "no dump holds the refused rank -1")
    out = compare(1, job)
    check("verdict: no dump from rank 1 of communicator" in out, "a refused rank: %s" % out)

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
    check_compare_hostile(tmp)
    check_compare_invariants(tmp)
    check_compare_graphs_and_hangs(tmp)
    check_compare_shapes(tmp)
    check_compare_p2p(tmp)
    check_compare_inputs(tmp)
    check_pid_reuse(tmp)


def check_compare_shapes(tmp):
    """One process holding two ranks: each rank's calls are its own, a split child's rank is
    its own; a forked child that goes on with its parent's communicator is reported."""
    job = record(os.path.join(tmp, "tworanks"), "tworanks")
    out = compare(1, job)
    check("verdict: rank 1 is behind on communicator " in out and " at seq 3: it stopped "
          "after seq 2" in out, "tworanks: the rank behind not named")
    check(re.search(r"ranks disagree on communicator \w+ at seq 2: rank 0: ncclAllReduce count "
                    r"1024 .*; rank 1: ncclAllReduce count 512", out), "tworanks: no disagreement")
    check("claim" not in out, "tworanks: a split child's rank taken from another")
    check(len(re.findall(r"^  rank 1 \(", out, re.M)) == 2, "tworanks: the split child's rank 1 "
          "not known")
    # A forked child that goes on with its parent's communicator, under LD_PRELOAD and under
    # audit mode (whose fork handler is registered with the program's libc).
    for mode in ("LD_PRELOAD", "LD_AUDIT"):
        job = os.path.join(tmp, "forkuse-" + mode)
        os.mkdir(job)
        run([os.environ["INTERPOSED"], "forkuse"],
            env=clean_env(**{mode: os.environ["DROPIN_LIBRARY"]}, NCCLSHIM_RECORD="100",
                          NCCLSHIM_RECORD_DIR=job, NCCLSHIM_RECORD_SIGNAL="USR1"))
        out = compare(2, job)
        check(re.search(r"verdict: unusable: two processes claim rank 0 of communicator \w+: "
                        r"rank 0 \(\S+ pid \d+\) and rank 0 \(\S+ pid \d+, forked\)", out),
              "forkuse %s: the fork that kept its parent's communicator not reported" % mode)
        for name in os.listdir(job):  # the child's call carries the child's thread id
            with open(os.path.join(job, name)) as f:
                text = f.read()
            if '"forked":true' in text:
                pid = re.search(r'"pid":(\d+)', text).group(1)
                check(re.search(r'"seq":3,.*"thread":%s,' % pid, text), "forkuse %s: the "
                      "child's call carries another thread id:\n%s" % (mode, text))


def check_compare_p2p(tmp):
    """Sends and receives are matched by peer pair, not by sequence number: a correct
    pipeline (3 sends on rank 0, 3 receives on rank 1) is in step; a receive of another count
    is named."""
    job = record(os.path.join(tmp, "pipeline"), "pipeline", "0", "64")
    record(job, "pipeline", "1", "64")
    check("verdict: every communicator in step" in compare(0, job), "pipeline: not in step")
    job = record(os.path.join(tmp, "pipeline-bad"), "pipeline", "0", "64")
    record(job, "pipeline", "1", "32")
    check(re.search(r"verdict: rank 0's send #1 to rank 1 \(ncclSend count 64 .*\) does not "
                    r"match rank 1's receive #1 from rank 0 \(ncclRecv count 32 ", compare(1, job)),
          "pipeline: a mismatched receive not named")


def check_compare_inputs(tmp):
    """A directory named like a dump is left out; a lone surrogate is refused; a locale that
    cannot show a path's characters gets them escaped; dumps without a communicator are not
    "in step"."""
    job = os.path.join(tmp, "with-dir")
    os.makedirs(os.path.join(job, "ncclshim-record-x.jsonl"))
    with open(os.path.join(job, "ncclshim-record-a.jsonl"), "w") as f:
        f.write(dump_text(process="00000000000000a1", rank=0, nranks=1))
    check("verdict: every communicator in step" in compare(0, job), "a directory named like a "
          "dump was read")
    compare_dir(os.path.join(tmp, "surrogate"), {"ncclshim-record-a.jsonl": dump_text(
        host="\\ud800")}, 2, "'host' holds a lone surrogate")
    latin = os.path.join(tmp, "latin")
    os.makedirs(latin)
    with open(os.path.join(latin, "ncclshim-record-\u4e2d.jsonl"), "w") as f:
        f.write(dump_text(process="00000000000000a1", rank=0, nranks=1))
    proc = subprocess.run([sys.executable, os.environ["COMPARE"], latin], capture_output=True,
                          env=clean_env(PYTHONIOENCODING="latin-1"))
    check(proc.returncode == 0 and b"Traceback" not in proc.stderr and b"record-\\u4e2d" in
          proc.stdout, "latin-1 output: %d %r" % (proc.returncode, proc.stderr[-300:]))
    empty = dump_text().split("\n")[0] + "\n"
    compare_dir(os.path.join(tmp, "no-comm"), {"ncclshim-record-a.jsonl": empty}, 2,
                "verdict: unusable: no communicator")
    # A report that cannot be written (a full disk, a closed stdout) is exit 2 with a message,
    # never the verdict's status; a closed stderr leaves an error's status 2.
    command = [sys.executable, os.environ["COMPARE"]]
    for name, fd, job, said in (
            ("full", None, latin, b"cannot write the report: No space left on device"),
            ("closed", 1, latin, b"cannot write the report: standard output or error is closed"),
            ("no-stderr", 2, os.path.join(tmp, "missing"), b"")):
        if name == "full" and not os.path.exists("/dev/full"):
            continue
        with open("/dev/full" if name == "full" else os.devnull, "wb") as out:
            proc = subprocess.run(command + [job], stdout=out, stderr=subprocess.PIPE,
                                  env=clean_env(), timeout=60,
                                  preexec_fn=(lambda: os.close(fd)) if fd else None)
        check(proc.returncode == 2 and b"Traceback" not in proc.stderr and said in proc.stderr,
              "%s output: exit %d, %r" % (name, proc.returncode, proc.stderr[-300:]))


def check_pid_reuse(tmp):
    """Two children with one pid (a PID namespace of their own, ns_last_pid set before each
    fork): two dumps, two process ids."""
    unshare = shutil.which("unshare")
    if unshare is None:
        print("skip: no unshare")
        return
    job = os.path.join(tmp, "reuse")
    os.mkdir(job)
    proc = subprocess.run([unshare, "-Urpf", "--mount-proc", os.environ["INTERPOSED"],
                           "forkreuse"], capture_output=True, text=True,
                          env=clean_env(LD_PRELOAD=os.environ["DROPIN_LIBRARY"],
                                        NCCLSHIM_RECORD="100", NCCLSHIM_RECORD_DIR=job,
                                        NCCLSHIM_RECORD_SIGNAL="USR1"))
    pids = re.findall(r"^child_pid=(\d+)$", proc.stdout, re.M)
    if proc.returncode != 0 or len(pids) != 2:
        print("skip: no PID namespace with ns_last_pid here (%d): %s" % (
            proc.returncode, (proc.stdout + proc.stderr)[-300:]))
        return
    check(pids[0] == pids[1], "the children's pids differ: %s" % pids)
    dumps = sorted(os.listdir(job))
    check(len(dumps) == 2, "pid reuse: %d dumps: %s" % (len(dumps), dumps))
    ids = set()
    for name in dumps:
        with open(os.path.join(job, name)) as f:
            ids.add(re.search(r'"process":"(\w+)"', f.readline()).group(1))
    check(len(ids) == 2, "pid reuse: one process id for two processes")


def check_compare_graphs_and_hangs(tmp):
    """Captured operations are said to be captured, never "in step"; a hang dump's stuck call
    is named (with those that shared its event), after the rank behind."""
    compare_dir(
        os.path.join(tmp, "captured"),
        {"ncclshim-record-a.jsonl": dump_text(process="00000000000000a1", rank=0, captured=(2, 3)),
         "ncclshim-record-b.jsonl": dump_text(process="00000000000000b2", rank=1, captured=(2, 3))},
        3, "rank 1: seq 2-3 captured into a CUDA graph: their replays are not in the dumps")
    hang = '"hang","function":"ncclAllReduce","hang_ms":500,"stuck_call":3'
    stuck = "rank 0 (h pid 7) hung: ncclAllReduce count 4 on communicator 00000000000000c1 at "
    for name, reason, where in (
            ("hang", hang, "seq 3"),
            ("hang-shared", hang.replace(":3", ":2") + ',"stuck_calls":2',
             "seq 2 (or one of the 1 operations after it under the same event, or work "
             "enqueued after them)")):
        compare_dir(
            os.path.join(tmp, name),
            {"ncclshim-record-a.jsonl": dump_text(process="00000000000000a1", rank=0,
                                                  reason=reason),
             "ncclshim-record-b.jsonl": dump_text(process="00000000000000b2", rank=1)},
            1, "verdict: " + stuck + where + " has not completed after 500 ms")
    # A later dump of the process (the watchdog's abort, a launcher's SIGTERM) keeps the hang's
    # finding in its header; the stuck call named even once the ring no longer holds it.
    kept = ('"signal","signal":15,"hang_ms":500,"stuck_call":3,"stuck_function":"ncclAllReduce",'
            '"stuck_comm_id":"00000000000000c1","stuck_seq":3,"stuck_rank":0')
    later = dump_text(process="00000000000000a1", rank=0, reason=kept)
    evicted = "\n".join(line for line in later.splitlines() if '"index":3,' not in line) + "\n"
    bare = dump_text(process="00000000000000a1", rank=0, reason=hang)
    bare = "\n".join(line for line in bare.splitlines() if '"index":3,' not in line) + "\n"
    rank1 = dump_text(process="00000000000000b2", rank=1)
    for name, dump, said in (
            ("hang-kept", later, stuck + "seq 3 has not completed after 500 ms; found by the "
             "hang dump, kept in the later signal dump"),
            ("hang-evicted", evicted, "rank 0 (h pid 7) hung: ncclAllReduce on communicator "
             "00000000000000c1 at seq 3 (the call itself no longer in the dump's ring) has not "
             "completed after 500 ms"),
            ("hang-evicted-bare", bare, "pid 7 (h pid 7) hung: ncclAllReduce (the call no "
             "longer in the dump's ring, which does not say its communicator or sequence "
             "number) has not completed after 500 ms")):
        compare_dir(os.path.join(tmp, name), {"ncclshim-record-a.jsonl": dump,
                                              "ncclshim-record-b.jsonl": rank1},
                    1, "verdict: " + said)
    # A newer dump of the process that does not carry the finding (an older recorder's): the
    # hang dump's file is read for it.
    compare_dir(os.path.join(tmp, "hang-then-plain"), {
        "ncclshim-record-a.jsonl": dump_text(process="00000000000000a1", rank=0, reason=hang),
        "ncclshim-record-a2.jsonl": dump_text(process="00000000000000a1", rank=0).replace(
            '"time_ns":1', '"time_ns":2'),
        "ncclshim-record-b.jsonl": rank1}, 1, "verdict: " + stuck + "seq 3 has not completed")
    compare_dir(
        os.path.join(tmp, "hang-behind"),
        {"ncclshim-record-a.jsonl": dump_text(process="00000000000000a1", rank=0, reason=hang),
         "ncclshim-record-b.jsonl": dump_text(process="00000000000000b2", rank=1, last_seq=2)},
        1, "verdict: rank 1 is behind on communicator 00000000000000c1 at seq 3")


def dump_text(host="h", pid=7, process="00000000000000a1", rank=0, last_seq=3, nranks=2,
              comm_id="00000000000000c1", reason='"signal"', captured=()):
    lines = ['{"kind":"header","format":"ncclshim-record/2","host":"%s","pid":%d,"process":"%s",'
             '"rank":%d,"reason":%s,"calls":%d,"time_ns":1}' % (host, pid, process, rank, reason,
                                                                last_seq + 1),
             '{"kind":"comm","comm":"c-1","comm_id":"%s","rank":%d,"nranks":%d,"last_seq":%d}' % (
                 comm_id, rank, nranks, last_seq)]
    for seq in range(1, last_seq + 1):
        lines.append('{"kind":"call","index":%d,"function":"ncclAllReduce","comm":"c-1",'
                     '"comm_id":"%s",'
                     '"rank":%d,"seq":%d,"count":4,"state":"returned","result":0%s}' % (
                         seq, comm_id, rank, seq, ',"captured":true' if seq in captured else ""))
    return "\n".join(lines) + "\n"


def compare_dir(directory, files, expect, needle):
    os.makedirs(directory)
    for name, content in files.items():
        with open(os.path.join(directory, name), "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode())
    proc = subprocess.run([sys.executable, os.environ["COMPARE"], directory],
                          capture_output=True, text=True, timeout=60, env=clean_env())
    out = proc.stdout + proc.stderr
    print("$ compare %s -> %d\n%s" % (os.path.basename(directory), proc.returncode, out.rstrip()))
    check(proc.returncode == expect,
          "%s: exit %d, expected %d" % (directory, proc.returncode, expect))
    check("Traceback" not in out, "%s: a traceback" % directory)
    check(needle in out, "%s: no %r" % (directory, needle))
    return out


def check_compare_invariants(tmp):
    """A dump that breaks the format's invariants is named as malformed (exit 2), never folded
    into "in step"; CRLF line ends are read; control characters are printed escaped."""
    good = dump_text()
    call2 = [line for line in good.splitlines() if '"seq":2,' in line][0]
    call3 = [line for line in good.splitlines() if '"seq":3,' in line][0]
    broken = {
        "duplicate-seq": (good.replace(call3, call3.replace('"seq":3', '"seq":2')),
                          "seq 2 of communicator 00000000000000c1 after seq 2"),
        "decreasing-seq": (good.replace(call2 + "\n" + call3, call3.replace(
            '"index":3', '"index":2') + "\n" + call2.replace('"index":2', '"index":3')),
            "seq 2 of communicator 00000000000000c1 after seq 3"),
        "duplicate-index": (good.replace(call3, call3.replace('"index":3', '"index":2')),
                            "call index 2 after index 2"),
        "duplicate-key": (good.replace('"pid":7', '"pid":7,"pid":8'),
                          "the key 'pid' twice in one object"),
        "stuck-calls-0": (good.replace('"reason":"signal"', '"reason":"hang","hang_ms":5,'
                                       '"stuck_call":2,"stuck_calls":0'),
                          "'stuck_calls' 0 out of range"),
        "stuck-calls-huge": (good.replace('"reason":"signal"', '"reason":"hang","hang_ms":5,'
                                          '"stuck_call":2,"stuck_calls":1000000'),
                             "'stuck_calls' 1000000 out of range (1 to the 4 calls"),
        "stuck-call-past": (good.replace('"reason":"signal"', '"reason":"hang","hang_ms":5,'
                                         '"stuck_call":1000000'),
                            "'stuck_call' 1000000 out of range"),
        "stuck-without-hang-ms": (good.replace('"reason":"signal"', '"reason":"signal",'
                                               '"stuck_call":2'), "without 'hang_ms'"),
        "hang-without-stuck": (good.replace('"reason":"signal"', '"reason":"hang","hang_ms":5'),
                               "a hang dump without 'stuck_call'"),
        "carriage-return": (good.replace("\n", "\r"), "a carriage return inside a line"),
    }
    for case, (content, needle) in broken.items():
        compare_dir(os.path.join(tmp, case), {"ncclshim-record-a.jsonl": content}, 2, needle)
    # A communicator made again at one address from one id starts again at seq 1: read.
    again = good + "\n".join(line.replace('"index":%d' % i, '"index":%d' % (i + 3))
                             for i, line in enumerate((call2, call3), 2)).replace(
        '"seq":2', '"seq":1').replace('"seq":3', '"seq":2') + "\n"
    compare_dir(os.path.join(tmp, "made-again"), {
        "ncclshim-record-a.jsonl": again.replace('"calls":4', '"calls":6'),
        "ncclshim-record-b.jsonl": dump_text(process="00000000000000b2", rank=1)}, 0,
        "verdict: every communicator in step")
    # One communicator, two sizes: two jobs' dumps, or a broken one.
    compare_dir(os.path.join(tmp, "two-sizes"), {
        "ncclshim-record-a.jsonl": dump_text(process="00000000000000a1", rank=0),
        "ncclshim-record-b.jsonl": dump_text(process="00000000000000b2", rank=1, nranks=4)}, 2,
        "verdict: unusable: communicator 00000000000000c1 has 2 ranks in ")
    # One process lists a communicator twice (destroyed, then made again from the same unique
    # id): the live one counts, not "two processes claim rank 0".
    ended = ('{"kind":"comm","comm":"c-2","comm_id":"00000000000000c1","rank":0,"nranks":2,'
             '"last_seq":1,"ended_by":"ncclCommDestroy"}\n')
    first, rest = good.split("\n", 1)
    compare_dir(os.path.join(tmp, "made-twice"), {
        "ncclshim-record-a.jsonl": first + "\n" + ended + rest,
        "ncclshim-record-b.jsonl": dump_text(process="00000000000000b2", rank=1)}, 0,
        "verdict: every communicator in step")
    # Two containers' processes (one host name, one pid) claim rank 1: told apart by id.
    compare_dir(os.path.join(tmp, "claims-one-pid"), {
        "ncclshim-record-a.jsonl": dump_text(process="00000000000000a1", rank=0, last_seq=4),
        "ncclshim-record-b.jsonl": dump_text(process="00000000000000b2", rank=1, last_seq=3),
        "ncclshim-record-c.jsonl": dump_text(process="00000000000000c3", rank=1, last_seq=4)},
        2, "rank 1 (h pid 7, process 00000000000000b2) is behind on communicator "
        "00000000000000c1 at seq 4: it stopped after seq 3, while rank 0, rank 1 (h pid 7, "
        "process 00000000000000c3) issued seq 4")
    # CRLF line ends.
    compare_dir(os.path.join(tmp, "crlf"), {
        "ncclshim-record-a.jsonl": dump_text(process="00000000000000a1", rank=0).replace(
            "\n", "\r\n"),
        "ncclshim-record-b.jsonl": dump_text(process="00000000000000b2", rank=1)}, 0,
        "verdict: every communicator in step")
    # Control characters from a dump's texts and from a path are escaped.
    title = "\x1b]0;owned\x07"
    job = os.path.join(tmp, "controls")
    compare_dir(job, {
        "ncclshim-record-%s.jsonl" % title: dump_text(process="00000000000000a1", rank=0,
                                                      host="h\\u001b]0;x\\u0007\\u009b"),
        "ncclshim-record-b.jsonl": dump_text(process="00000000000000b2", rank=1, last_seq=2)}, 1,
        "rank 0 (h\\x1b]0;x\\x07\\x9b pid 7)")
    proc = subprocess.run([sys.executable, os.environ["COMPARE"], job], capture_output=True,
                          env=clean_env())
    check(not re.search(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", proc.stdout + proc.stderr)
          and b"record-\\x1b]0;owned\\x07.jsonl" in proc.stdout,
          "control characters printed raw: %r" % proc.stdout[-400:])
    with open(os.path.join(job, "ncclshim-record-\x1b[2J\x07.jsonl"), "w") as f:
        f.write('{"kind":"header","format":"ncclshim-record/2","host":"\\u001b[2J",')
    proc = subprocess.run([sys.executable, os.environ["COMPARE"], job], capture_output=True,
                          env=clean_env())
    check(proc.returncode == 2 and b"\x1b" not in proc.stderr and b"\x07" not in proc.stderr,
          "an error message printed control characters raw: %r" % proc.stderr)


def check_compare_hostile(tmp):
    good = dump_text()
    header = good.splitlines()[0]
    name = "ncclshim-record-h-7-rank0-00000000.jsonl"
    hostile = {
        "non-utf8": (good.encode() + b'{"kind":"call","function":"\xff\xfe"}\n', "not UTF-8"),
        "nesting": (header + "\n" + '{"kind":"comm","x":' + "[" * 30000 + "]" * 30000 + "}\n",
                    "nested deeper"),
        "string-number": (good.replace('"pid":7', '"pid":"7"'), "'pid' must be an integer"),
        "missing-key": (good.replace('"last_seq":3}', '"seq":3}'), "without 'last_seq'"),
        "infinity": (good.replace('"time_ns":1', '"time_ns":Infinity'), "Infinity is not"),
        "nranks": (good.replace('"nranks":2', '"nranks":1000000000'), "'nranks' out of range"),
        "big-number": (good.replace('"time_ns":1', '"time_ns":' + "9" * 5000), "more than 20"),
        "long-line": (header + "\n" + '{"kind":"comm","x":"' + "a" * 200000 + '"}\n',
                      "longer than"),
        "bool": (good.replace('"pid":7', '"pid":true'), "'pid' must be an integer"),
        "no-header": (good.split("\n", 1)[1], "before the header"),
    }
    for case, (content, needle) in hostile.items():
        compare_dir(os.path.join(tmp, case), {name: content}, 2, needle)
    # Neither a FIFO nor a link to /dev/zero is read: no hang, no memory exhausted.
    fifo = os.path.join(tmp, "fifo")
    os.makedirs(fifo)
    os.mkfifo(os.path.join(fifo, name))
    compare_dir(os.path.join(tmp, "fifo-job"), {}, 2, "no ncclshim-record")
    os.symlink(os.path.join(fifo, name), os.path.join(tmp, "fifo-job", name))
    compare_dir(os.path.join(tmp, "fifo-job2"), {}, 2, "no ncclshim-record")
    os.symlink("/dev/zero", os.path.join(tmp, "fifo-job2", name))
    for job in ("fifo-job", "fifo-job2"):
        proc = subprocess.run([sys.executable, os.environ["COMPARE"], os.path.join(tmp, job)],
                              capture_output=True, text=True, timeout=60, env=clean_env())
        check(proc.returncode == 2 and "not a regular file" in proc.stderr, "%s: %d %s" % (
            job, proc.returncode, proc.stderr))

    # Two containers: one host name, one pid, two processes (ranks 0 and 1): both counted.
    compare_dir(
        os.path.join(tmp, "containers"),
        {"ncclshim-record-h-7-rank0-a.jsonl": dump_text(process="00000000000000a1", rank=0,
                                                        last_seq=4),
         "ncclshim-record-h-7-rank1-b.jsonl": dump_text(process="00000000000000b2", rank=1,
                                                        last_seq=3)},
        1, "verdict: rank 1 is behind on communicator 00000000000000c1 at seq 4")
    # The leader's next collective no longer in its ring: said once, in one pair of brackets.
    leader = dump_text(process="00000000000000a1", rank=0, last_seq=4)
    evicted = "\n".join(line for line in leader.splitlines() if '"seq":4,' not in line) + "\n"
    out = compare_dir(
        os.path.join(tmp, "leader-evicted"),
        {"ncclshim-record-a.jsonl": evicted,
         "ncclshim-record-b.jsonl": dump_text(process="00000000000000b2", rank=1)},
        1, "while rank 0 issued seq 4 (no longer in the ring)")
    check("((" not in out, "doubled brackets: %s" % out)
    # Two processes claim rank 1 (a fork, or two jobs in one directory): no pick, exit 2.
    out = compare_dir(
        os.path.join(tmp, "claims"),
        {"ncclshim-record-a.jsonl": dump_text(process="00000000000000a1", rank=0, last_seq=4),
         "ncclshim-record-b.jsonl": dump_text(process="00000000000000b2", rank=1, last_seq=3),
         "ncclshim-record-c.jsonl": dump_text(process="00000000000000c3", rank=1, last_seq=4,
                                              pid=8)},
        2, "verdict: unusable: two processes claim rank 1 of communicator 00000000000000c1")
    # The claimants are told apart by host and pid: never "rank 1 ... while rank 1 issued".
    check("  rank 1 (h pid 7) is behind on communicator 00000000000000c1 at seq 4: it stopped "
          "after seq 3, while rank 0, rank 1 (h pid 8) issued seq 4" in out,
          "two claimants of rank 1 not told apart")


def check_audit(tmp):
    """vLLM's pynccl binds NCCL with ctypes: LD_PRELOAD misses it, audit mode records it."""
    job = os.path.join(tmp, "job")
    os.mkdir(job)
    for rank, count in ((0, 5), (1, 4)):
        run([sys.executable, os.environ["CTYPES_JOB"], os.environ["UNDER_NCCL"], str(rank),
             str(count)], env=clean_env(LD_AUDIT=os.environ["DROPIN_LIBRARY"],
                                        NCCLSHIM_RECORD="1000", NCCLSHIM_RECORD_DIR=job,
                                        NCCLSHIM_RECORD_AT_EXIT="1"))
    out = compare(1, job)
    check("verdict: rank 1 is behind on communicator " in out and " at seq 5: it stopped after "
          "seq 4, while rank 0 issued seq 5 (ncclAllReduce count 1024 ncclFloat32 ncclSum" in out,
          "audit mode: the rank behind not named")
    # Without the auditor, LD_PRELOAD sees nothing of a ctypes program's calls.
    quiet = os.path.join(tmp, "preload")
    os.mkdir(quiet)
    run([sys.executable, os.environ["CTYPES_JOB"], os.environ["UNDER_NCCL"], "0", "2"],
        env=clean_env(LD_PRELOAD=os.environ["DROPIN_LIBRARY"], NCCLSHIM_RECORD="1000",
                      NCCLSHIM_RECORD_DIR=quiet, NCCLSHIM_RECORD_AT_EXIT="1"))
    check(not os.listdir(quiet), "LD_PRELOAD recorded a ctypes program: %s" % os.listdir(quiet))


def check_deepdir(tmp):
    """The default dump directory is the working directory, opened as it is: one deeper than
    PATH_MAX (4096) is not refused, and the dump signal dumps instead of ending the program."""
    os.chdir(tmp)
    try:
        for _ in range(24):  # 24 x 201 bytes
            os.mkdir("d" * 200)
            os.chdir("d" * 200)
        out = run([os.environ["INTERPOSED"], "signal"], env=clean_env(
            LD_PRELOAD=os.environ["DROPIN_LIBRARY"], NCCLSHIM_RECORD="100",
            NCCLSHIM_RECORD_SIGNAL="USR1"))
        check("alive=1" in out and "ncclshim recorder: wrote " in out and
              "NCCLSHIM_RECORD_DIR" not in out, "deep working directory: %s" % out[-500:])
        check(any(n.startswith("ncclshim-record-") for n in os.listdir(".")),
              "no dump in the deep working directory")
    finally:
        os.chdir(tmp)


CHECKS = {"alone": check_alone, "compare": check_compare, "audit": check_audit,
          "deepdir": check_deepdir}


if __name__ == "__main__":
    sys.exit(main(__doc__, CHECKS, "ncclshim-dropin-"))
