/*
 * util.h — helpers shared by the test programs that run whole simulations.
 */
#ifndef DTSIM_TESTS_UTIL_H
#define DTSIM_TESTS_UTIL_H

#include <glib.h>

#include "policies/policy.h"
#include "views/outfile.h"   /* sim_remove_tree, for temporary folders */
#include "sim/run.h"
#include "config/scenario.h"
#include "sim/trace.h"
#include "views/tracedigest.h"

/* Loads a scenario given as text (plus `sets` overrides, may be NULL) through
 * the real loader, via a temporary file; asserts it is valid.  Returns the
 * configs (GPtrArray of SimConfig*). */
GPtrArray *test_load_scenario_text (const char *text, const char *const *sets);
/* The one config of a scenario text without a sweep (the test fails if it
 * does not load or has several points); free with sim_config_free. */
SimConfig *test_load_one (const char *text);

/* Loads a one-point scenario given as text (plus `sets`, may be NULL), runs it
 * without a trace, reporting to `rec` (may be NULL), and asserts the run
 * succeeded; its summary goes to *sum.  With config_out, *config_out gets the
 * config (free it with sim_config_free). */
void test_run_scenario_text (const char *text, const char *const *sets,
                             const PolRecorder *rec, SimRunSummary *sum,
                             SimConfig **config_out);

/* What a run reports, collected by test_run_collect(): every iteration row
 * and every evaluation, in recording order, the params the policy adds,
 * and the summary. */
typedef struct {
  int worker;
  gint64 iteration;
  double start, end, compute, comm, wait;
  gint64 staleness;
} TestRow;

typedef struct {
  double t;
  gint64 step;
  double loss, accuracy, consensus;
} TestMetric;

typedef struct {
  GArray *rows;          /* TestRow */
  GArray *metrics;       /* TestMetric */
  GHashTable *params;    /* key -> value, the rows the policy added */
  SimRunSummary sum;
} TestRun;

/* test_run_scenario_text() with a recorder that collects into a TestRun. */
TestRun *test_run_collect (const char *text, const char *const *sets);
void test_run_free (TestRun *r);

/* `text` with its first `from` replaced by `to` (asserts there is one). */
char *test_replaced (const char *text, const char *from, const char *to);
/* The same of a text it takes and frees (for a replacement of a
 * replacement). */
char *test_replaced_free (char *text, const char *from, const char *to);

/* Runs the scenario `text` for one iteration at trace detail messages
 * (written to DIR/NAME.ini, the trace to DIR/NAME.db), asserting it ran;
 * returns the database's path. */
char *test_run_messages (const char *dir, const char *text, const char *name);
/* The same, the scenario run as written (its own iterations and detail). */
char *test_run_text (const char *dir, const char *text, const char *name);

/* A scenario edit (the first `from` of a base text becomes `to`) and what
 * the one-line refusal of the result must say. */
typedef struct {
  const char *from, *to;
  const char *want;
} TestRefusal;

/* Asserts each of the n edits of `base` is refused in one line saying its
 * `want`. */
void test_refusals (const char *base, const TestRefusal *cases, gsize n);

/* Loads a scenario given as text, which must fail: asserts a one-line
 * SIM_ERROR_INPUT naming the file and returns its message. */
char *test_load_scenario_error (const char *text);

/* Runs $DTSIM_BIN in folder `cwd` with the arguments (NULL-terminated);
 * returns its exit status, its output in *out and *err (each NULL or a
 * string a previous run left, which is freed first). */
int test_run_dtsim (const char *cwd, char **out, char **err, const char *first, ...)
  G_GNUC_NULL_TERMINATED;

/* The same with the arguments in a NULL-terminated array. */
int test_run_dtsim_argv (const char *cwd, char **out, char **err, const char *const *args);

/* The closed form of an all-reduce of N bytes among p ranks with contention
 * = none, every route of latency alpha (s) and 1/beta bytes/s, gamma s per
 * byte reduced (docs/collectives.md): ring (Patarasuk & Yuan 2009; also
 * hierarchical, whose ranks are each alone on such a network), tree,
 * naive, halving-doubling (Rabenseifner 2004; Thakur et al. 2005 when p is
 * not a power of two), butterfly (Thakur et al. 2005).  Ring and halving-doubling assume the element count
 * divisible by p (resp. by the largest power of two <= p). */
double test_allreduce_closed_form (const char *alg, int p, double N, double alpha,
                                   double beta, double gamma);

/* The number in the first column of the first row `sql` returns from the
 * database file `db`; asserts there is one (not NULL). */
double test_query_number (const char *db, const char *sql);

/* The number of entries of folder `dir` whose names start with `prefix`
 * ("" counts them all). */
guint test_count_entries (const char *dir, const char *prefix);

/* The contents of file `path` (asserts it can be read); its length in *len
 * when len is not NULL. */
char *test_read_file (const char *path, gsize *len);
/* The path of `name` in the test data folder (DTSIM_TEST_DATA); a new
 * string. */
char *test_data_path (const char *name);


/* The rows `emit` writes for run `run` into a trace buffer, as the bytes
 * of their first chunk (sim_trace_chunk_serialize): what a rank sends. */
GBytes *test_chunk_bytes (void (*emit) (SimTrace *t, gint64 run), gint64 run);

/* The harmonic number H_n = 1 + 1/2 + ... + 1/n (H_0 = 0). */
double test_harmonic (int n);

/* Aborts the test unless |a - b| <= rel × max(|a|, |b|). */
void test_assert_close (double a, double b, double rel);

/* "TABLE ROWS SHA256" lines of the database's tables named in `tables`
 * (NULL-terminated), in the digest's table order: what a run filled in
 * those tables, to compare two runs by; fails the test on a bad database. */
char *test_tables_digest (const char *db, const char *const *tables);

/* Asserts that two runs' evaluations (loss, accuracy and time of each),
 * final loss and simulated time are the same bits: what --threads or an
 * identity setting must not change. */
void test_assert_same_runs (const TestRun *a, const TestRun *b);
/* Random symbols (kernels/language.c's rows for kind = gpt): n rows of
 * S + 1 values in [0, V) from `seed`, as floats. */
void test_random_tokens (float *x, int n, int S, int V, guint64 seed);
/* m's initial parameters from `seed` plus N(0, 0.3^2) noise, so that
 * layer-norm gains, biases and attention sit at a generic point with
 * gradients of order 0.01 to 1 (finite-difference tests); g_free it. */
float *test_noisy_params (KernModel *m, guint64 seed);
/* Runs m's layers cut into n_stages pipeline stages of counts[s] layers
 * (kern_stage_new) on a batch x (B, d), y (B) in M micro-batches of B / M
 * (M a power of two dividing B), all forwards then all backwards, at the
 * loss scale 1 / B, and asserts that every micro-batch's loss and the
 * accumulated gradient are the bits of the whole model's loss_grad on
 * each micro-batch, the gradients scaled by 1 / M (exact) and summed in
 * micro-batch order into zeros. */
void test_stages_match (KernModel *m, const float *params, const float *x, const int *y, int B,
                        int M, const int *counts, int n_stages);

#endif
