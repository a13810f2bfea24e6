"""What abi/check_exports.py and abi/check_layout.py share (imported from this folder, the
scripts' own): their command line, "[--update] LIST BUILT", and the paths they print."""
import os
import sys


def command_line(argv, doc):
    """(update, list_path, built) from argv; None, after printing doc, when it is not that."""
    update = "--update" in argv
    args = [a for a in argv if a != "--update"]
    if len(args) != 2:
        print(doc, file=sys.stderr)
        return None
    return (update, *args)


def from_root(list_path, path):
    """path relative to the checkout (the folder above abi/) when it lies inside it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(list_path)))
    rel = os.path.relpath(os.path.abspath(path), root)
    return path if rel.startswith("..") else rel


def update_command(script, list_path, built):
    """The command that rewrites list_path from `built` (a mismatch prints it to copy)."""
    list_path = os.path.normpath(os.path.abspath(list_path))
    return (f"python3 {os.path.join(os.path.dirname(list_path), script)} --update "
            f"{list_path} {os.path.abspath(built)}")
