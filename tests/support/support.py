"""What the Python test scripts of several folders share (meson puts this folder on their
PYTHONPATH): the environment a child of a test starts with, and the frame of the scripts that
run one named check per invocation (tests/packaging/packaging.py, tests/dropin/test_files.py):
a check raises Failure, run() logs each command it starts, main() maps the outcome to the exit
status meson reads (0 pass, 1 fail, 2 usage)."""
import os
import subprocess
import sys
import tempfile

# What would send a child elsewhere than the test means: the caller's ncclshim settings, the
# dynamic loader's variables (meson test puts the build tree on LD_LIBRARY_PATH), the
# caller's Python environment.
CALLERS_SETTINGS = ("NCCLSHIM_", "LD_", "PYTHONPATH", "VIRTUAL_ENV", "CONDA")


def clean_env(**extra):
    """os.environ without the caller's settings (CALLERS_SETTINGS), then `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(CALLERS_SETTINGS)}
    env.update(extra)
    return env


class Failure(Exception):
    pass


def check(ok, message):
    if not ok:
        raise Failure(message)


def run(cmd, env=None, cwd=None, expect=0):
    """Runs cmd, its output to the log; fails the check unless it exits with `expect`.
    Returns its stdout."""
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    if out.strip():
        print(out.rstrip())
    check(proc.returncode == expect, "exit status %d, expected %d: %s"
          % (proc.returncode, expect, " ".join(cmd)))
    return proc.stdout


def dynamic(path, tag):
    """The values of the ELF file's dynamic entries of one tag (NEEDED, SONAME, RUNPATH)."""
    proc = subprocess.run(["readelf", "-d", path], capture_output=True, text=True)
    check(proc.returncode == 0, "readelf -d %s: %s" % (path, proc.stderr.strip()))
    return [line.split("[", 1)[1].rstrip("]") for line in proc.stdout.splitlines()
            if "(%s)" % tag in line]


def main(usage, checks, prefix):
    """Runs the check sys.argv[1] names (a key of `checks`, each a function of a scratch
    directory named with `prefix`); prints `usage` for any other command line."""
    if len(sys.argv) != 2 or sys.argv[1] not in checks:
        print(usage, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        try:
            checks[sys.argv[1]](tmp)
        except Failure as e:
            print("FAIL: %s" % e)
            return 1
    print("ok: %s" % sys.argv[1])
    return 0
