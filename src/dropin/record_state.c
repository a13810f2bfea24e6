/* The recorder's state, at the bottom of the drop-in's recorder: every other file reads it,
 * none defines it. Only record_start.c writes ncclshim_rec (set when the library loads,
 * cleared when no NCCL is found); the thread's record is record_ring.c's, made afresh in a
 * forked child. */
#include <stddef.h>

#include "record_state.h"

rec_state *ncclshim_rec;

__thread rec_thread ncclshim_rec_here NCCLSHIM_THREAD_MODEL;

void ncclshim_rec_thread_forked(void) {
  ncclshim_rec_here.tid = 0;
  ncclshim_rec_here.comm = 0;
  ncclshim_rec_here.record = NULL;
}
