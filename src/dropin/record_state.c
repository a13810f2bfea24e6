/* The recorder's state, at the bottom of the drop-in's recorder: every other file reads it,
 * none defines it. Only record_start.c writes ncs_rec (set when the library loads,
 * cleared when no NCCL is found); the thread's record is record_ring.c's, made afresh in a
 * forked child. */
#include <stddef.h>

#include "record_state.h"

rec_state *ncs_rec;

__thread rec_thread ncs_rec_here NCCLSHIM_THREAD_MODEL;

void ncs_rec_thread_forked(void) {
  ncs_rec_here.tid = 0;
  ncs_rec_here.comm = 0;
  ncs_rec_here.record = NULL;
}
