"""python -m ncclshim: the probe, --explain, --doctor, --loaded; --json for JSON."""
import json
import os
import sys

from . import loaded, run_probe

USAGE = """usage: python -m ncclshim [--json] [probe options]
       python -m ncclshim --explain TEXT [--json]
       python -m ncclshim --doctor [--json]
       python -m ncclshim --loaded [--json]

Runs ncclshim-probe (its options: --help-probe) with this interpreter's environment added to
--explain and --doctor (--python sys.prefix). --loaded lists the NCCLs mapped in this
interpreter. Exit status: the probe's (--doctor: 0 nothing wrong, 1 a problem found;
--explain: 0 explained, 1 cannot tell; 2 a usage error); --loaded: 0; 2 when the probe cannot
be run (missing, not executable, a text too long or with a NUL byte). Only the package's own
probe is run, or the one NCCLSHIM_PYTHON_PROBE names.
"""


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] in (["-h"], ["--help"]):
            _write(USAGE)
            code = 0
        else:
            code = _run(["--help"] if "--help-probe" in args else args)
        try:
            sys.stdout.flush()
        except OSError as e:
            raise _Unwritable(e) from None
    except _Unwritable as e:  # a full disk, a closed pipe: said once, not again at exit
        return _fail("ncclshim: cannot write the output: %s" % (e.args[0].strerror or
                                                                e.args[0]))
    except (OSError, ValueError) as e:  # the environment, or a text no command line carries
        return _fail("ncclshim: %s" % e)
    return code


class _Unwritable(Exception):
    """Standard output refused what was written (its OSError as the argument)."""


def _write(text):
    try:
        sys.stdout.write(text)
    except OSError as e:
        raise _Unwritable(e) from None


def _fail(line):
    """One line on stderr, exit status 2; stdout's unwritten rest is dropped (pointed at
    /dev/null), so that the interpreter's own flush at exit has nothing to complain of."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    try:
        print(line, file=sys.stderr)
    except OSError:
        pass
    return 2


def _run(args):
    if "--loaded" in args:
        found = loaded()
        if "--json" in args:
            _write(json.dumps({"loaded": [{"path": x.path, "version": x.version,
                                           "in_program": x.in_program} for x in found]}) + "\n")
        else:
            _write("NCCLs mapped in this interpreter: %d%s\n" % (len(found), "" if found else
                                                                 " (none)"))
            for x in found:
                _write("  %-9s %s\n" % (x.version or "unknown", x.path))
        return 0
    proc = run_probe(*args)
    _write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode < 0:  # killed by a signal: the probe could not run
        print("ncclshim: ncclshim-probe was killed by signal %d" % -proc.returncode,
              file=sys.stderr)
        return 2
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
