"""python -m ncclshim: the probe, --explain, --doctor, --loaded; --json for JSON."""
import json
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
    if args[:1] in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    if "--help-probe" in args:
        args = ["--help"]
    try:
        return _run(args)
    except (OSError, ValueError) as e:  # the environment, or a text no command line carries
        print("ncclshim: %s" % e, file=sys.stderr)
        return 2


def _run(args):
    if "--loaded" in args:
        found = loaded()
        if "--json" in args:
            print(json.dumps({"loaded": [{"path": x.path, "version": x.version,
                                          "in_program": x.in_program} for x in found]}))
        else:
            print("NCCLs mapped in this interpreter: %d%s" % (len(found), "" if found else
                                                              " (none)"))
            for x in found:
                print("  %-9s %s" % (x.version or "unknown", x.path))
        return 0
    proc = run_probe(*args)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode < 0:  # killed by a signal: the probe could not run
        print("ncclshim: ncclshim-probe was killed by signal %d" % -proc.returncode,
              file=sys.stderr)
        return 2
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
