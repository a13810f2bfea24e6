/* Where Python keeps installed packages, in one order, for every reader: the NCCL search's
 * active-environment step (src/nccl/nccl_places.c), the doctor's Python environments
 * (src/probe/pyenv.c) and, through the doctor, the Python package. Nothing here knows which
 * package is looked for: callers append their own folder ("nvidia/nccl/lib") to each site.
 * The order (docs/loader.md, "Python locations"):
 *   1. VIRTUAL_ENV, unless the program runs from another venv (a stale value);
 *   2. CONDA_PREFIX (a conda environment: its wheels, then its own lib/);
 *   3. the prefix of the program as started (argv[0], through PATH when it has no '/'; a
 *      pyenv shim resolved to the interpreter it runs; outside a venv, its symlinks
 *      resolved, as Python resolves them);
 *   4. the prefix of the program's file (/proc/self/exe): a non-venv interpreter's own;
 *   5. the user site: PYTHONUSERBASE, else ~/.local.
 * Items 3 and 5 are skipped in a setuid or setgid process (AT_SECURE). */
#ifndef NCCLSHIM_LOADER_PYTHON_PLACES_H
#define NCCLSHIM_LOADER_PYTHON_PLACES_H

#include <stddef.h>

#include "list.h"

/* Items 1 to 4 of the order, each prefix once with why it is there. */
void ncshl_python_prefixes(ncshl_list *prefixes);

/* Item 5: the user base (PYTHONUSERBASE, else $HOME/.local) into `base`; 0 when none or in a
 * secure process. */
int ncshl_python_user_base(char *base, size_t size);

/* The site folders of one prefix, in order: lib/python3.N/site-packages for every N, newest
 * first, then Debian's lib/python3.N/dist-packages where they exist and lib/python3/
 * dist-packages; for /usr, /usr/local's first (where Debian's pip installs as root). With
 * `user_base`, only the site-packages folders (pip install --user). */
void ncshl_python_sites(const char *prefix, int user_base, ncshl_list *sites);

/* 1 when `prefix` is a conda environment: it has conda-meta/, or it is CONDA_PREFIX. Conda
 * installs libraries in <prefix>/lib, which its packages' RUNPATH names; a pip wheel inside
 * it (pip-installed torch) is what a Python process there loads first. */
int ncshl_python_is_conda(const char *prefix);

/* A pyenv shim (<root>/shims/<name>, root holding versions/) resolved to the interpreter it
 * runs, <root>/versions/<v>/bin/<name>, the version from PYENV_VERSION, a .python-version
 * file in the current directory or above, else <root>/version. 1 with `real` filled, else 0. */
int ncshl_python_unshim(const char *program, char *real, size_t size);

#endif
