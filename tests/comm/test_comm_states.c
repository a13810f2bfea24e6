/* docs/reference.md, "Calls by communicator state", walked on the fakes: for each call (a row)
 * and each state (a column), a fresh non-blocking communicator is brought to the state and
 * the call made twice over, once with NCCL done (ncclCommGetAsyncError and ncclGroupEnd
 * answer ncclSuccess, the stream is idle, the timeout is 1000 ms) and once with NCCL still in
 * progress (they answer ncclInProgress, the stream is busy, ncclCommAbort does not return,
 * the timeout is 0). A cell names
 * the status of both ("`OK` / `TIMEOUT`") or one for both ("`NCCL_ERROR`"). The table is the
 * specification: a call that answers otherwise, or a row or column this test does not know,
 * fails. STATES_DOC names the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "comm_fakes.h"
#include "comm_fixture.h"
#include "ncclshim/symmem.h"
#include "support.h"

enum { NOT_READY = 600, SECTION_MAX = 1 << 16, CELLS = 16 };

/* ---- The states, as the table's columns name them ------------------------------------ */

static ncclshim_watchdog *dog;

static ncclshim_comm *ready(ncclshim_nccl *nccl) {
  ncclshim_comm *comm = fake_comm(nccl, NCCLSHIM_COMM_NONBLOCKING);
  assert_int_equal(ncclshim_comm_wait(comm, 1000), NCCLSHIM_OK);
  return comm;
}

static ncclshim_comm *make_initializing(ncclshim_nccl *nccl) {
  return fake_comm(nccl, NCCLSHIM_COMM_NONBLOCKING);
}
static ncclshim_comm *make_ready(ncclshim_nccl *nccl) { return ready(nccl); }
static ncclshim_comm *make_finalizing(ncclshim_nccl *nccl) {
  ncclshim_comm *comm = ready(nccl);
  fake_async(-1, ncclSuccess);
  assert_int_equal(ncclshim_comm_destroy(comm, 0), NCCLSHIM_TIMEOUT);
  return comm;
}
static ncclshim_comm *make_failed(ncclshim_nccl *nccl) {
  ncclshim_comm *comm = ready(nccl);
  fake_async(0, ncclRemoteError);
  assert_int_equal(ncclshim_comm_wait(comm, 1000), NCCLSHIM_NCCL_ERROR);
  return comm;
}
/* An operation whose event never fires, past a 1 ms deadline: the watchdog fails it and
 * starts the abort, which the fake finishes at once (waited for). */
static ncclshim_comm *make_failed_by_watchdog(ncclshim_nccl *nccl) {
  ncclshim_comm *comm = ready(nccl);
  int aborts = fake_abort_returns();
  assert_int_equal(ncclshim_comm_watch(comm, dog, 1), NCCLSHIM_OK);
  fake_cuda_event_query(NOT_READY);
  assert_int_equal(ncclshim_comm_record(comm, NULL, "ncclAllReduce", 1, ncclFloat32), NCCLSHIM_OK);
  assert_int_equal(fake_wait_abort_returns(aborts + 1, (int)test_slack_ms(10000)), aborts + 1);
  /* The fake's ncclCommAbort has returned; its thread has yet to say so (slow under
   * valgrind). A call on the failed communicator names how far the abort has gone. */
  WAIT_FOR(ncclshim_comm_record(comm, NULL, "ncclAllReduce", 1, ncclFloat32) != NCCLSHIM_OK &&
               strstr(ncclshim_last_error(), "it has been aborted") != NULL,
           10000);
  assert_non_null(strstr(ncclshim_last_error(), "it has been aborted"));
  fake_cuda_event_query(0);
  cuda_fake()->complete_all(); /* the aborted work is gone: the stream is idle again */
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_FAILED);
  return comm;
}
static ncclshim_comm *make_destroyed(ncclshim_nccl *nccl) {
  ncclshim_comm *comm = ready(nccl);
  assert_int_equal(ncclshim_comm_destroy(comm, 1000), NCCLSHIM_OK);
  return comm;
}
static ncclshim_comm *make_aborting(ncclshim_nccl *nccl) {
  ncclshim_comm *comm = ready(nccl);
  fake_abort_hang(1);
  assert_int_equal(ncclshim_comm_abort(comm, 0), NCCLSHIM_TIMEOUT);
  return comm;
}
static ncclshim_comm *make_aborted(ncclshim_nccl *nccl) {
  ncclshim_comm *comm = ready(nccl);
  assert_int_equal(ncclshim_comm_abort(comm, 1000), NCCLSHIM_OK);
  return comm;
}

static const struct {
  const char *column;
  ncclshim_comm *(*make)(ncclshim_nccl *nccl);
} states[] = {
    {"INITIALIZING", make_initializing},
    {"READY", make_ready},
    {"FINALIZING", make_finalizing},
    {"FAILED", make_failed},
    {"FAILED by the watchdog", make_failed_by_watchdog},
    {"DESTROYED", make_destroyed},
    {"ABORTING", make_aborting},
    {"ABORTED", make_aborted},
};
#define STATE_COUNT (sizeof(states) / sizeof(states[0]))

/* ---- The calls, as the table's rows name them ---------------------------------------- */

static ncclshim_status call_wait(ncclshim_comm *comm, int ms) {
  return ncclshim_comm_wait(comm, ms);
}
static ncclshim_status call_check(ncclshim_comm *comm, int ms) {
  return ncclshim_comm_check(comm, ncclInProgress, "ncclAllReduce", ms);
}
static ncclshim_status call_group_end(ncclshim_comm *comm, int ms) {
  if (ms == 0) fake_inject("ncclGroupEnd", ncclInProgress, 1);
  return ncclshim_comm_group_end(ncclshim_comm_library(comm), &comm, 1, ms);
}
static ncclshim_status call_wait_stream(ncclshim_comm *comm, int ms) {
  fake_cuda_query(ms == 0 ? NOT_READY : 0);
  ncclshim_status status = ncclshim_comm_wait_stream(comm, NULL, NULL, ms);
  fake_cuda_query(0);
  return status;
}
static ncclshim_status call_destroy(ncclshim_comm *comm, int ms) {
  return ncclshim_comm_destroy(comm, ms);
}
/* In progress: ncclCommAbort does not return. */
static ncclshim_status call_abort(ncclshim_comm *comm, int ms) {
  fake_abort_hang(ms == 0);
  return ncclshim_comm_abort(comm, ms);
}
static ncclshim_status call_symmem_alloc(ncclshim_comm *comm, int ms) {
  ncclshim_symmem *mem = NULL;
  ncclshim_status status = ncclshim_symmem_alloc(comm, 4096, NULL, ms, &mem);
  if (status == NCCLSHIM_OK) assert_int_equal(ncclshim_symmem_free(mem, 1000), NCCLSHIM_OK);
  return status;
}
static ncclshim_status call_has_windows(ncclshim_comm *comm, int ms) {
  ncclshim_answer answer;
  return ncclshim_comm_has(comm, NCCLSHIM_COMM_CAP_SYMMETRIC_WINDOWS, ms, &answer, NULL, 0);
}

static const struct {
  const char *row;
  ncclshim_status (*call)(ncclshim_comm *comm, int timeout_ms);
} calls[] = {
    {"ncclshim_comm_wait", call_wait},
    {"ncclshim_comm_check", call_check},
    {"ncclshim_comm_group_end", call_group_end},
    {"ncclshim_comm_wait_stream", call_wait_stream},
    {"ncclshim_comm_destroy", call_destroy},
    {"ncclshim_comm_abort", call_abort},
    {"ncclshim_symmem_alloc", call_symmem_alloc},
    {"ncclshim_comm_has", call_has_windows},
};
#define CALL_COUNT (sizeof(calls) / sizeof(calls[0]))

/* ---- The table ------------------------------------------------------------------------ */

static char section[SECTION_MAX];

static void read_section(void) {
  const char *path = getenv("STATES_DOC");
  assert_non_null(path);
  FILE *f = fopen(path, "r");
  if (f == NULL) fail_msg("cannot open %s", path);
  static char text[1 << 18];
  size_t n = fread(text, 1, sizeof(text) - 1, f);
  fclose(f);
  text[n] = '\0';
  const char *start = strstr(text, "\n## Calls by communicator state\n");
  if (start == NULL) fail_msg("%s has no section \"## Calls by communicator state\"", path);
  size_t rest = n - (size_t)(start - text);
  const char *end = memmem(start + 1, rest - 1, "\n## ", 4);
  size_t len = end ? (size_t)(end - start) : rest;
  if (len >= sizeof(section)) fail_msg("the section is too long");
  memcpy(section, start, len);
  section[len] = '\0';
}

/* Split a table line "| a | b |" into its trimmed cells (in place). */
static int cells_of(char *line, char **cells) {
  int count = 0;
  char *p = strchr(line, '|');
  while (p != NULL && count < CELLS) {
    char *next = strchr(p + 1, '|');
    if (next == NULL) break;
    *next = '\0';
    char *cell = p + 1;
    while (*cell == ' ') cell++;
    char *tail = cell + strlen(cell);
    while (tail > cell && tail[-1] == ' ') *--tail = '\0';
    cells[count++] = cell;
    p = next;
  }
  return count;
}

/* "`OK` / `TIMEOUT`" or "`OK`": the statuses done and in progress. */
static void expected(const char *cell, const char *where, char *done, char *pending) {
  char a[64] = "", b[64] = "";
  int n = sscanf(cell, "`%63[A-Z_]` / `%63[A-Z_]`", a, b);
  if (n < 1) fail_msg("%s: cell \"%s\" names no status", where, cell);
  strcpy(done, a);
  strcpy(pending, n == 2 ? b : a);
}

static void clean_up(ncclshim_comm *comm) {
  fake_abort_hang(0);
  fake_async(0, ncclSuccess);
  assert_int_not_equal(ncclshim_comm_abort(comm, 5000), NCCLSHIM_TIMEOUT);
  ncclshim_comm_free(comm);
}

static void test_every_cell(void **state) {
  (void)state;
  read_section();
  ncclshim_nccl *nccl = fake_open("2.28.9");
  ncclshim_watchdog_options options = NCCLSHIM_WATCHDOG_OPTIONS_INIT;
  options.interval_ms = 1;
  assert_int_equal(ncclshim_watchdog_start(&options, &dog), NCCLSHIM_OK);
  int column_of[CELLS] = {0}, columns = 0, rows = 0, mismatches = 0;
  char *line = section;
  while (line != NULL && *line != '\0') {
    char *next = strchr(line, '\n');
    if (next != NULL) *next++ = '\0';
    char *cells[CELLS];
    int n = line[0] == '|' ? cells_of(line, cells) : 0;
    if (n > 1 && strcmp(cells[0], "call") == 0) { /* the header: map columns to states */
      columns = n;
      for (int c = 1; c < n; c++) {
        column_of[c] = -1;
        for (size_t s = 0; s < STATE_COUNT; s++)
          if (strcmp(cells[c], states[s].column) == 0) column_of[c] = (int)s;
        if (column_of[c] < 0) fail_msg("unknown state column \"%s\"", cells[c]);
      }
      assert_int_equal(columns - 1, STATE_COUNT);
    } else if (n > 1 && cells[0][0] == '`') {
      char name[64] = "";
      sscanf(cells[0], "`%63[a-z_]`", name);
      size_t k = 0;
      while (k < CALL_COUNT && strcmp(calls[k].row, name) != 0) k++;
      if (k == CALL_COUNT) fail_msg("unknown call row \"%s\"", cells[0]);
      if (n != columns) fail_msg("row %s has %d cells, the header %d", name, n, columns);
      rows++;
      for (int c = 1; c < n; c++) {
        char where[160], want[2][64];
        snprintf(where, sizeof(where), "%s in %s", name, states[column_of[c]].column);
        expected(cells[c], where, want[0], want[1]);
        for (int pending = 0; pending <= 1; pending++) {
          fake_async(0, ncclSuccess);
          ncclshim_comm *comm = states[column_of[c]].make(nccl);
          fake_async(pending ? -1 : 0, ncclSuccess);
          ncclshim_status got = calls[k].call(comm, pending ? 0 : 1000);
          if (strcmp(ncclshim_status_name(got), want[pending]) != 0) {
            print_error("%s, NCCL %s: %s, the table says %s (%s)\n", where,
                        pending ? "in progress" : "done", ncclshim_status_name(got), want[pending],
                        ncclshim_last_error());
            mismatches++;
          }
          clean_up(comm);
        }
      }
    }
    line = next;
  }
  ncclshim_watchdog_stop(dog);
  ncclshim_nccl_close(nccl);
  assert_int_equal(rows, CALL_COUNT); /* every call has its row */
  assert_int_equal(mismatches, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_cell)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
