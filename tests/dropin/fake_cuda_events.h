/* The streams of the fake libcuda of tests/dropin/fake_cuda_events.c. */
#ifndef NCCLSHIM_TEST_FAKE_CUDA_EVENTS_H
#define NCCLSHIM_TEST_FAKE_CUDA_EVENTS_H

#define FAKE_CAPTURING_STREAM 0xca97u /* capturing into a graph */
#define FAKE_HELD_STREAM 0x4e1du      /* its events never complete */
#define FAKE_HELD_STREAM_2 0x4e1eu    /* another such stream */
#define FAKE_LATE_STREAM 0x1a7eu      /* its first event completes, no later one */

#endif
