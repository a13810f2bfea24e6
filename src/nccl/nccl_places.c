/* The directories of the NCCL search's two directory steps (docs/loader.md, "Search order").
 * The active environment (ACTIVE_ENV), searched before the ld.so cache: the wheel folder
 * nvidia/nccl/lib of every site of every Python prefix, in the one order of
 * loader/python_places.h (VIRTUAL_ENV, CONDA_PREFIX, the program's prefixes, the user site);
 * a conda environment's own lib/ after its wheels. The well-known places (WELL_KNOWN), after
 * the system loader: NCCL_HOME/lib, CUDA_HOME/lib64, CUDA_HOME/lib. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "loader/python_places.h"
#include "nccl_handle.h"

/* An absolute directory from the environment, or NULL: relative values are ignored so that
 * nothing is searched relative to the current directory. */
static const char *env_dir(const char *name) {
  const char *value = secure_getenv(name);
  return value != NULL && value[0] == '/' ? value : NULL;
}

/* The wheel folder of every site of one prefix, then a conda environment's lib/. */
static void add_prefix(ncshl_list *dirs, const char *prefix, int user_base, const char *why) {
  ncshl_list sites = {0};
  ncshl_python_sites(prefix, user_base, &sites);
  for (size_t i = 0; i < sites.count; i++)
    ncshl_list_add2(dirs, sites.items[i].path, "/nvidia/nccl/lib", why);
  dirs->out_of_memory |= sites.out_of_memory;
  ncshl_list_free(&sites);
  if (!user_base && ncshl_python_is_conda(prefix)) ncshl_list_add2(dirs, prefix, "/lib", why);
}

void ncs_nccl_environment_places(ncshl_list *dirs) {
  dirs->none =
      "no Python environment: VIRTUAL_ENV and CONDA_PREFIX are unset, and neither "
      "the program's prefixes nor the user site have a python3.N folder";
  ncshl_list prefixes = {0};
  ncshl_python_prefixes(&prefixes);
  for (size_t i = 0; i < prefixes.count; i++)
    add_prefix(dirs, prefixes.items[i].path, 0, prefixes.items[i].why);
  dirs->out_of_memory |= prefixes.out_of_memory;
  ncshl_list_free(&prefixes);
  char base[PATH_MAX];
  if (ncshl_python_user_base(base, sizeof(base)))
    add_prefix(dirs, base, 1, "the user site (pip install --user)");
}

void ncs_nccl_places(ncshl_list *dirs) {
  dirs->none = "NCCL_HOME and CUDA_HOME are unset (or not absolute paths)";
  const char *dir;
  if ((dir = env_dir("NCCL_HOME"))) ncshl_list_add2(dirs, dir, "/lib", "NCCL_HOME");
  if ((dir = env_dir("CUDA_HOME"))) {
    ncshl_list_add2(dirs, dir, "/lib64", "CUDA_HOME");
    ncshl_list_add2(dirs, dir, "/lib", "CUDA_HOME");
  }
}
