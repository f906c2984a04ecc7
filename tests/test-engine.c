/*
 * test-engine.c — tests of the discrete-event engine: event ordering and
 * ties, cancellation, eng_run()'s bound and eng_stop(), run-to-run
 * determinism, the random-number streams and the FIFO resource.
 *
 * Expected values are written as the formula they come from.  Statistical
 * checks use tolerances of several standard errors for the sample size, so
 * with the fixed seeds here they pass deterministically, and a correct
 * generator with any other seed would fail them with negligible probability.
 */
#include <math.h>

#include "engine/engine.h"
#include "engine/engine-private.h"

/* --- helpers --------------------------------------------------------------- */

/* A log of fired events: (time, tag) pairs in firing order. */
typedef struct {
  GArray *times;  /* double, seconds */
  GArray *tags;   /* int */
} Log;

static void
log_init (Log *log)
{
  log->times = g_array_new (FALSE, FALSE, sizeof (double));
  log->tags = g_array_new (FALSE, FALSE, sizeof (int));
}

static void
log_clear (Log *log)
{
  g_array_unref (log->times);
  g_array_unref (log->tags);
}

/* Handler: appends (now, GPOINTER_TO_INT (data)) to the Log in ctx. */
static void
record (EngSim *sim, gpointer ctx, gpointer data)
{
  Log *log = ctx;
  double now = eng_sim_now (sim);
  int tag = GPOINTER_TO_INT (data);

  g_array_append_val (log->times, now);
  g_array_append_val (log->tags, tag);
}

static int
tag_at (const Log *log, guint i)
{
  return g_array_index (log->tags, int, i);
}

static double
time_at (const Log *log, guint i)
{
  return g_array_index (log->times, double, i);
}

/* --- queue ordering -------------------------------------------------------- */

static void
test_equal_times_fifo (void)
{
  const int n = 1000;
  const double t = 2.5; /* seconds */
  EngSim *sim = eng_sim_new ();
  Log log;
  int i;

  log_init (&log);
  /* Interleave the tied events with earlier and later ones so that the heap
   * really has to break the ties. */
  for (i = 0; i < n; i++)
    {
      eng_schedule_at (sim, t, record, &log, GINT_TO_POINTER (i));
      eng_schedule_at (sim, t * (i % 2 == 0 ? 0.5 : 2.0), record, &log,
                       GINT_TO_POINTER (-1));
    }
  g_assert_cmpuint (eng_sim_pending (sim), ==, 2 * n);
  g_assert_cmpuint (eng_run (sim, INFINITY), ==, 2 * n);

  {
    int next = 0;
    guint k;
    for (k = 0; k < log.tags->len; k++)
      if (time_at (&log, k) == t)
        g_assert_cmpint (tag_at (&log, k), ==, next++);
    g_assert_cmpint (next, ==, n);
  }
  log_clear (&log);
  eng_sim_free (sim);
}

/* Zero-delay events scheduled from a handler fire after the events already
 * pending at the same time. */
static void
self_schedule_zero (EngSim *sim, gpointer ctx, gpointer data)
{
  record (sim, ctx, data);
  if (GPOINTER_TO_INT (data) == 0)
    eng_schedule (sim, 0.0, record, ctx, GINT_TO_POINTER (99));
}

static void
test_zero_delay_after_ties (void)
{
  EngSim *sim = eng_sim_new ();
  Log log;
  int i;
  const int n = 4;

  log_init (&log);
  for (i = 0; i < n; i++)
    eng_schedule (sim, 1.0, self_schedule_zero, &log, GINT_TO_POINTER (i));
  eng_run (sim, INFINITY);
  g_assert_cmpuint (log.tags->len, ==, n + 1);
  for (i = 0; i < n; i++)
    g_assert_cmpint (tag_at (&log, i), ==, i);
  g_assert_cmpint (tag_at (&log, n), ==, 99);
  log_clear (&log);
  eng_sim_free (sim);
}

static gint
cmp_double (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

static void
test_time_order (void)
{
  const int n = 20000;
  EngSim *sim = eng_sim_new ();
  EngRng rng;
  GArray *want = g_array_new (FALSE, FALSE, sizeof (double));
  Log log;
  int i;

  log_init (&log);
  eng_rng_init (&rng, 7, 0);
  for (i = 0; i < n; i++)
    {
      double t = eng_rng_uniform (&rng) * 100.0;
      g_array_append_val (want, t);
      eng_schedule_at (sim, t, record, &log, GINT_TO_POINTER (i));
    }
  g_array_sort (want, cmp_double);
  eng_run (sim, INFINITY);
  /* Events fire in the order of their times, each at its own time. */
  g_assert_cmpuint (log.times->len, ==, n);
  for (i = 0; i < n; i++)
    g_assert_cmpfloat (time_at (&log, i), ==, g_array_index (want, double, i));
  g_array_unref (want);
  log_clear (&log);
  eng_sim_free (sim);
}

/* A handler that checks the clock never goes back and reschedules itself
 * with a random delay (exponential, mean 1 s) until `budget` runs out. */
typedef struct {
  EngRng rng;
  double last;      /* seconds */
  int budget;
  gboolean monotone;
} Walker;

static void
walker_step (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  Walker *w = ctx;
  double now = eng_sim_now (sim);

  if (now < w->last)
    w->monotone = FALSE;
  w->last = now;
  if (w->budget-- > 0)
    {
      /* Mix in zero delays to exercise ties. */
      double d = eng_rng_below (&w->rng, 4) == 0 ? 0.0
                 : eng_rng_exponential (&w->rng, 1.0);
      eng_schedule (sim, d, walker_step, w, NULL);
    }
}

static void
test_clock_monotonic (void)
{
  const int walkers = 100, steps = 1000;
  EngSim *sim = eng_sim_new ();
  Walker *w = g_new0 (Walker, walkers);
  int i;

  for (i = 0; i < walkers; i++)
    {
      eng_rng_init (&w[i].rng, 11, i);
      w[i].budget = steps;
      w[i].monotone = TRUE;
      eng_schedule (sim, eng_rng_uniform (&w[i].rng), walker_step, &w[i], NULL);
    }
  {
    double prev = eng_sim_now (sim);
    while (eng_step (sim))
      {
        g_assert_cmpfloat (eng_sim_now (sim), >=, prev);
        prev = eng_sim_now (sim);
      }
  }
  for (i = 0; i < walkers; i++)
    g_assert_true (w[i].monotone);
  /* Each walker fires its first event plus `steps` rescheduled ones. */
  g_assert_cmpuint (eng_sim_events (sim), ==, (guint64) walkers * (steps + 1));
  g_assert_cmpuint (eng_sim_pending (sim), ==, 0);
  g_free (w);
  eng_sim_free (sim);
}

static void
test_step_empty (void)
{
  EngSim *sim = eng_sim_new ();

  g_assert_cmpfloat (eng_sim_now (sim), ==, 0.0);
  g_assert_false (eng_step (sim));
  g_assert_cmpuint (eng_run (sim, INFINITY), ==, 0);
  g_assert_cmpuint (eng_sim_events (sim), ==, 0);
  g_assert_cmpuint (eng_sim_pending (sim), ==, 0);
  eng_sim_free (sim);
}

static void
nop (EngSim *sim G_GNUC_UNUSED, gpointer ctx G_GNUC_UNUSED, gpointer data G_GNUC_UNUSED)
{
}

static void
test_schedule_invalid (void)
{
  EngSim *sim = eng_sim_new ();
  EngEventId id;

  eng_schedule (sim, 5.0, nop, NULL, NULL);
  eng_step (sim);
  g_assert_cmpfloat (eng_sim_now (sim), ==, 5.0);

  g_test_expect_message (NULL, G_LOG_LEVEL_CRITICAL, "*delay >= 0*");
  id = eng_schedule (sim, -1.0, nop, NULL, NULL);
  g_test_assert_expected_messages ();
  g_assert_cmpuint (id, ==, 0);

  g_test_expect_message (NULL, G_LOG_LEVEL_CRITICAL, "*time >= sim->now*");
  id = eng_schedule_at (sim, 4.0, nop, NULL, NULL);
  g_test_assert_expected_messages ();
  g_assert_cmpuint (id, ==, 0);

  g_test_expect_message (NULL, G_LOG_LEVEL_CRITICAL, "*delay >= 0*");
  id = eng_schedule (sim, NAN, nop, NULL, NULL);
  g_test_assert_expected_messages ();
  g_assert_cmpuint (id, ==, 0);

  g_assert_cmpuint (eng_sim_pending (sim), ==, 0);
  /* Scheduling at exactly now is allowed. */
  g_assert_cmpuint (eng_schedule_at (sim, 5.0, nop, NULL, NULL), !=, 0);
  eng_sim_free (sim);
}

/* With a tiny sequence limit the queue renumbers many times; the firing
 * order must be the same as without renumbering. */
static void
run_hold_log (guint64 seq_limit, Log *log)
{
  const int pending = 50, total = 5000;
  EngSim *sim = eng_sim_new ();
  EngRng rng;
  int i;

  if (seq_limit > 0)
    eng_sim_set_seq_limit (sim, seq_limit);
  eng_rng_init (&rng, 3, 0);
  /* Coarse times (multiples of 1/4 s) make ties common. */
  for (i = 0; i < pending; i++)
    eng_schedule (sim, eng_rng_below (&rng, 8) * 0.25, record, log,
                  GINT_TO_POINTER (i));
  for (i = pending; i < total; i++)
    {
      eng_step (sim);
      eng_schedule (sim, eng_rng_below (&rng, 8) * 0.25, record, log,
                    GINT_TO_POINTER (i));
    }
  eng_run (sim, INFINITY);
  eng_sim_free (sim);
}

static void
test_seq_renumber (void)
{
  Log a, b;
  guint i;

  log_init (&a);
  log_init (&b);
  run_hold_log (0, &a);
  run_hold_log (64, &b);
  g_assert_cmpuint (a.tags->len, ==, b.tags->len);
  for (i = 0; i < a.tags->len; i++)
    {
      g_assert_cmpint (tag_at (&a, i), ==, tag_at (&b, i));
      g_assert_cmpfloat (time_at (&a, i), ==, time_at (&b, i));
    }
  log_clear (&a);
  log_clear (&b);
}

/* --- cancellation ---------------------------------------------------------- */

static void
test_cancel_never_fires (void)
{
  const int n = 100;
  EngSim *sim = eng_sim_new ();
  EngEventId ids[100];
  Log log;
  int i, cancelled = 0;

  log_init (&log);
  for (i = 0; i < n; i++)
    ids[i] = eng_schedule (sim, 1.0 + i, record, &log, GINT_TO_POINTER (i));
  for (i = 0; i < n; i += 3)
    {
      g_assert_true (eng_cancel (sim, ids[i]));
      cancelled++;
    }
  g_assert_cmpuint (eng_sim_pending (sim), ==, n - cancelled);
  g_assert_cmpuint (eng_run (sim, INFINITY), ==, n - cancelled);
  g_assert_cmpuint (eng_sim_events (sim), ==, n - cancelled);
  for (i = 0; i < (int) log.tags->len; i++)
    g_assert_cmpint (tag_at (&log, i) % 3, !=, 0);
  log_clear (&log);
  eng_sim_free (sim);
}

static void
test_cancel_stale (void)
{
  EngSim *sim = eng_sim_new ();
  EngEventId fired, cancelled, reused;

  fired = eng_schedule (sim, 1.0, nop, NULL, NULL);
  g_assert_cmpuint (fired, !=, 0);
  g_assert_true (eng_step (sim));
  g_assert_false (eng_cancel (sim, fired));

  cancelled = eng_schedule (sim, 1.0, nop, NULL, NULL);
  g_assert_true (eng_cancel (sim, cancelled));
  g_assert_false (eng_cancel (sim, cancelled));
  g_assert_cmpuint (eng_sim_pending (sim), ==, 0);
  /* The cancelled entry is discarded without firing or moving the clock. */
  g_assert_false (eng_step (sim));
  g_assert_cmpfloat (eng_sim_now (sim), ==, 1.0);
  g_assert_cmpuint (eng_sim_events (sim), ==, 1);

  /* A new event may reuse the slot; the old ids must not cancel it. */
  reused = eng_schedule (sim, 1.0, nop, NULL, NULL);
  g_assert_cmpuint (reused, !=, fired);
  g_assert_cmpuint (reused, !=, cancelled);
  g_assert_false (eng_cancel (sim, fired));
  g_assert_false (eng_cancel (sim, cancelled));
  g_assert_cmpuint (eng_sim_pending (sim), ==, 1);

  /* Ids never issued. */
  g_assert_false (eng_cancel (sim, 0));
  g_assert_false (eng_cancel (sim, G_MAXUINT64));
  g_assert_false (eng_cancel (sim, reused + 1000));

  g_assert_true (eng_cancel (sim, reused));
  eng_sim_free (sim);
}

typedef struct {
  EngEventId victim;
  gboolean result;
} Canceller;

static void
cancel_victim (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  Canceller *c = ctx;
  c->result = eng_cancel (sim, c->victim);
}

static void
test_cancel_from_handler (void)
{
  EngSim *sim = eng_sim_new ();
  Canceller c = { 0, FALSE };
  Log log;

  log_init (&log);
  eng_schedule (sim, 1.0, cancel_victim, &c, NULL);
  /* Same time, scheduled later: still pending when the canceller fires. */
  c.victim = eng_schedule (sim, 1.0, record, &log, GINT_TO_POINTER (1));
  eng_schedule (sim, 2.0, record, &log, GINT_TO_POINTER (2));
  g_assert_cmpuint (eng_run (sim, INFINITY), ==, 2);
  g_assert_true (c.result);
  g_assert_cmpuint (log.tags->len, ==, 1);
  g_assert_cmpint (tag_at (&log, 0), ==, 2);
  log_clear (&log);
  eng_sim_free (sim);
}

/* Cancelling most of a large queue (which compacts the heap) leaves the
 * rest firing in order. */
static void
test_cancel_many (void)
{
  const int n = 10000;
  EngSim *sim = eng_sim_new ();
  EngEventId *ids = g_new (EngEventId, n);
  EngRng rng;
  Log log;
  int i, kept = 0;

  log_init (&log);
  eng_rng_init (&rng, 5, 0);
  for (i = 0; i < n; i++)
    ids[i] = eng_schedule (sim, eng_rng_uniform (&rng), record, &log,
                           GINT_TO_POINTER (i));
  for (i = 0; i < n; i++)
    if (i % 10 != 0)
      g_assert_true (eng_cancel (sim, ids[i]));
    else
      kept++;
  g_assert_cmpuint (eng_sim_pending (sim), ==, kept);
  /* Ids of events kept across compaction still cancel them. */
  g_assert_true (eng_cancel (sim, ids[0]));
  kept--;
  g_assert_cmpuint (eng_run (sim, INFINITY), ==, kept);
  for (i = 0; i < kept; i++)
    {
      g_assert_cmpint (tag_at (&log, i) % 10, ==, 0);
      if (i > 0)
        g_assert_cmpfloat (time_at (&log, i - 1), <=, time_at (&log, i));
    }
  g_free (ids);
  log_clear (&log);
  eng_sim_free (sim);
}

/* --- eng_run bounds and eng_stop ------------------------------------------- */

static void
test_run_until (void)
{
  const int n = 10;
  const double dt = 1.0;    /* seconds between events */
  const double until = 4.5; /* seconds */
  EngSim *sim = eng_sim_new ();
  Log log;
  int i;

  log_init (&log);
  for (i = 1; i <= n; i++)
    eng_schedule_at (sim, i * dt, record, &log, GINT_TO_POINTER (i));
  /* Events at dt, 2 dt, ..., floor(until/dt) dt fire. */
  g_assert_cmpuint (eng_run (sim, until), ==, (guint64) floor (until / dt));
  g_assert_cmpfloat (eng_sim_now (sim), ==, floor (until / dt) * dt);
  g_assert_cmpuint (eng_sim_pending (sim), ==, n - (int) floor (until / dt));
  /* An event exactly at `until` fires. */
  g_assert_cmpuint (eng_run (sim, 5.0 * dt), ==, 1);
  g_assert_cmpfloat (eng_sim_now (sim), ==, 5.0 * dt);
  g_assert_cmpuint (eng_run (sim, INFINITY), ==, n - 5);
  g_assert_cmpfloat (eng_sim_now (sim), ==, n * dt);
  log_clear (&log);
  eng_sim_free (sim);
}

static void
stop_after (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  int *left = ctx;
  if (--*left == 0)
    eng_stop (sim);
}

static void
test_run_stop (void)
{
  const int n = 10, stop_at = 3;
  EngSim *sim = eng_sim_new ();
  int left = stop_at;
  int i;

  for (i = 1; i <= n; i++)
    eng_schedule_at (sim, i, stop_after, &left, NULL);
  g_assert_cmpuint (eng_run (sim, INFINITY), ==, stop_at);
  g_assert_cmpfloat (eng_sim_now (sim), ==, stop_at);
  g_assert_cmpuint (eng_sim_pending (sim), ==, n - stop_at);
  /* The stop applies to one run only. */
  g_assert_cmpuint (eng_run (sim, INFINITY), ==, n - stop_at);
  g_assert_cmpuint (eng_sim_events (sim), ==, n);
  eng_sim_free (sim);
}

/* --- determinism ----------------------------------------------------------- */

/* Hold model: P pending events; each fired event (tag k) records itself and
 * schedules event `next` at now + Exp(mean 1 s) from the model's stream. */
typedef struct {
  EngRng rng;
  Log log;
  GArray *ids;    /* EngEventId of each fired event, in order */
  int next;
  int total;
} Hold;

static void
hold_fire (EngSim *sim, gpointer ctx, gpointer data)
{
  Hold *h = ctx;

  record (sim, &h->log, data);
  if (h->next < h->total)
    {
      EngEventId id = eng_schedule (sim, eng_rng_exponential (&h->rng, 1.0),
                                    hold_fire, h, GINT_TO_POINTER (h->next));
      g_array_append_val (h->ids, id);
      h->next++;
    }
}

static void
hold_run (Hold *h, guint64 seed)
{
  const int pending = 200;
  EngSim *sim = eng_sim_new ();

  eng_rng_init (&h->rng, seed, 0);
  log_init (&h->log);
  h->ids = g_array_new (FALSE, FALSE, sizeof (EngEventId));
  h->total = 20000;
  for (h->next = 0; h->next < pending; h->next++)
    {
      EngEventId id = eng_schedule (sim, eng_rng_exponential (&h->rng, 1.0),
                                    hold_fire, h, GINT_TO_POINTER (h->next));
      g_array_append_val (h->ids, id);
    }
  eng_run (sim, INFINITY);
  g_assert_cmpuint (h->log.tags->len, ==, h->total);
  eng_sim_free (sim);
}

static void
hold_clear (Hold *h)
{
  log_clear (&h->log);
  g_array_unref (h->ids);
}

static void
test_same_seed (void)
{
  Hold a, b;
  guint i;

  hold_run (&a, 42);
  hold_run (&b, 42);
  g_assert_cmpuint (a.log.tags->len, ==, b.log.tags->len);
  for (i = 0; i < a.log.tags->len; i++)
    {
      g_assert_cmpfloat (time_at (&a.log, i), ==, time_at (&b.log, i));
      g_assert_cmpint (tag_at (&a.log, i), ==, tag_at (&b.log, i));
    }
  g_assert_cmpuint (a.ids->len, ==, b.ids->len);
  for (i = 0; i < a.ids->len; i++)
    g_assert_cmpuint (g_array_index (a.ids, EngEventId, i), ==,
                      g_array_index (b.ids, EngEventId, i));
  hold_clear (&a);
  hold_clear (&b);
}

static void
test_different_seed (void)
{
  Hold a, b;
  guint i, same_time = 0, same_tag = 0;

  hold_run (&a, 42);
  hold_run (&b, 43);
  for (i = 0; i < a.log.tags->len; i++)
    {
      same_time += time_at (&a.log, i) == time_at (&b.log, i);
      same_tag += tag_at (&a.log, i) == tag_at (&b.log, i);
    }
  /* Continuous random times never coincide; the firing orders diverge. */
  g_assert_cmpuint (same_time, ==, 0);
  g_assert_cmpuint (same_tag, <, a.log.tags->len);
  hold_clear (&a);
  hold_clear (&b);
}

/* --- random-number streams ------------------------------------------------- */

static void
test_rng_reference (void)
{
  /* xoshiro256** from the state {1, 2, 3, 4}, worked by hand from the
   * reference algorithm: the output is rotl(s1 * 5, 7) * 9, and s1 = 2 gives
   * rotl(10, 7) * 9 = (10 << 7) * 9. */
  EngRng rng = { { 1, 2, 3, 4 } };
  g_assert_cmpuint (eng_rng_u64 (&rng), ==, (guint64) (10 << 7) * 9);
  /* The step sets s2 = 3 ^ 1 = 2, then s1 = 2 ^ s2 = 0, so the second
   * output is rotl(0 * 5, 7) * 9 = 0. */
  g_assert_cmpuint (eng_rng_u64 (&rng), ==, 0);
}

static void
test_rng_same_seed (void)
{
  const int n = 1000;
  EngRng a, b;
  int i;

  eng_rng_init (&a, 123, 9);
  eng_rng_init (&b, 123, 9);
  for (i = 0; i < n; i++)
    g_assert_cmpuint (eng_rng_u64 (&a), ==, eng_rng_u64 (&b));
}

static void
test_rng_streams_differ (void)
{
  const int n = 1000, streams = 64;
  GHashTable *seen = g_hash_table_new (g_int64_hash, g_int64_equal);
  gint64 *vals = g_new (gint64, n * (streams + 1));
  int s, i, k = 0;

  /* 64 streams of one seed plus stream 0 of another: no 64-bit value
   * repeats (a repeat among 65,000 draws has probability ~1e-10). */
  for (s = 0; s <= streams; s++)
    {
      EngRng rng;
      if (s < streams)
        eng_rng_init (&rng, 123, s);
      else
        eng_rng_init (&rng, 124, 0);
      for (i = 0; i < n; i++)
        {
          vals[k] = (gint64) eng_rng_u64 (&rng);
          g_assert_false (g_hash_table_contains (seen, &vals[k]));
          g_hash_table_add (seen, &vals[k]);
          k++;
        }
    }
  g_hash_table_unref (seen);
  g_free (vals);
}

static void
test_rng_uniform (void)
{
  const int n = 1000000;
  EngRng rng;
  double sum = 0.0, min = 1.0, max = 0.0;
  int i;

  eng_rng_init (&rng, 1, 0);
  for (i = 0; i < n; i++)
    {
      double u = eng_rng_uniform (&rng);
      g_assert_cmpfloat (u, >=, 0.0);
      g_assert_cmpfloat (u, <, 1.0);
      sum += u;
      min = MIN (min, u);
      max = MAX (max, u);
    }
  /* Mean 1/2, standard deviation sqrt(1/12); allow 5 standard errors. */
  g_assert_cmpfloat_with_epsilon (sum / n, 0.5, 5.0 * sqrt (1.0 / 12.0) / sqrt (n));
  /* The extremes of n uniforms lie within ~1/n of 0 and 1; allow 20/n. */
  g_assert_cmpfloat (min, <, 20.0 / n);
  g_assert_cmpfloat (max, >, 1.0 - 20.0 / n);
}

static void
test_rng_below (void)
{
  const guint64 bins = 10;
  const int n = 200000;
  guint64 counts[10] = { 0 };
  EngRng rng;
  double chi2 = 0.0, expect = (double) n / bins;
  int i;

  eng_rng_init (&rng, 2, 0);
  for (i = 0; i < n; i++)
    {
      guint64 x = eng_rng_below (&rng, bins);
      g_assert_cmpuint (x, <, bins);
      counts[x]++;
    }
  for (i = 0; i < (int) bins; i++)
    chi2 += (counts[i] - expect) * (counts[i] - expect) / expect;
  /* chi-square with k = bins - 1 degrees of freedom has mean k and standard
   * deviation sqrt(2k); allow mean + 6 standard deviations. */
  g_assert_cmpfloat (chi2, <, (bins - 1) + 6.0 * sqrt (2.0 * (bins - 1)));

  /* Edge cases: n = 1 always gives 0; a huge n stays in range. */
  for (i = 0; i < 1000; i++)
    {
      g_assert_cmpuint (eng_rng_below (&rng, 1), ==, 0);
      g_assert_cmpuint (eng_rng_below (&rng, G_MAXUINT64 / 3 * 2), <,
                        G_MAXUINT64 / 3 * 2);
    }
}

static void
test_rng_exponential (void)
{
  const int n = 1000000;
  const double mean = 2.5; /* any unit */
  EngRng rng;
  double sum = 0.0, sum2 = 0.0;
  int i;

  eng_rng_init (&rng, 3, 0);
  for (i = 0; i < n; i++)
    {
      double x = eng_rng_exponential (&rng, mean);
      g_assert_cmpfloat (x, >=, 0.0);
      g_assert_true (isfinite (x));
      sum += x;
      sum2 += x * x;
    }
  /* Standard deviation = mean, so the sample mean's standard error is
   * mean / sqrt(n); allow 5 of them. */
  g_assert_cmpfloat_with_epsilon (sum / n, mean, 5.0 * mean / sqrt (n));
  /* E[X^2] = 2 mean^2, Var[X^2] = 24 mean^4 - 4 mean^4 = 20 mean^4. */
  g_assert_cmpfloat_with_epsilon (sum2 / n, 2.0 * mean * mean,
                                  5.0 * sqrt (20.0) * mean * mean / sqrt (n));
}

static void
test_rng_normal (void)
{
  const int n = 1000000;
  EngRng rng;
  double sum = 0.0, sum2 = 0.0;
  int i;

  eng_rng_init (&rng, 4, 0);
  for (i = 0; i < n; i++)
    {
      double x = eng_rng_normal (&rng);
      g_assert_true (isfinite (x));
      sum += x;
      sum2 += x * x;
    }
  /* Mean 0 with standard error 1/sqrt(n); E[X^2] = 1 with Var[X^2] = 2. */
  g_assert_cmpfloat_with_epsilon (sum / n, 0.0, 5.0 / sqrt (n));
  g_assert_cmpfloat_with_epsilon (sum2 / n, 1.0, 5.0 * sqrt (2.0) / sqrt (n));
}

static void
test_rng_shuffle (void)
{
  const int n = 100;
  int v[100], seen[100] = { 0 };
  EngRng rng;
  int i, moved = 0;

  for (i = 0; i < n; i++)
    v[i] = i;
  eng_rng_init (&rng, 5, 0);
  eng_rng_shuffle (&rng, v, n);
  for (i = 0; i < n; i++)
    {
      g_assert_cmpint (v[i], >=, 0);
      g_assert_cmpint (v[i], <, n);
      seen[v[i]]++;
      moved += v[i] != i;
    }
  for (i = 0; i < n; i++)
    g_assert_cmpint (seen[i], ==, 1);
  /* A random permutation has 1 fixed point on average. */
  g_assert_cmpint (moved, >, n - 10);
  eng_rng_shuffle (&rng, v, 0); /* empty is fine */

  /* Each of the 3! orders of three elements is equally likely. */
  {
    const int trials = 60000;
    int counts[3][3][3] = { { { 0 } } };
    double expect = trials / 6.0;
    int t;
    for (t = 0; t < trials; t++)
      {
        int w[3] = { 0, 1, 2 };
        eng_rng_shuffle (&rng, w, 3);
        counts[w[0]][w[1]][w[2]]++;
      }
    /* Binomial standard deviation sqrt(trials * 1/6 * 5/6); allow 6. */
    g_assert_cmpfloat_with_epsilon (counts[0][1][2], expect,
                                    6.0 * sqrt (trials * 5.0 / 36.0));
    g_assert_cmpfloat_with_epsilon (counts[2][1][0], expect,
                                    6.0 * sqrt (trials * 5.0 / 36.0));
    g_assert_cmpfloat_with_epsilon (counts[1][2][0], expect,
                                    6.0 * sqrt (trials * 5.0 / 36.0));
  }
}

/* --- FIFO resource --------------------------------------------------------- */

typedef struct {
  GArray *order;   /* int: job index in completion order */
  GArray *starts;  /* double, seconds */
  GArray *ends;    /* double, seconds */
} Jobs;

static void
jobs_init (Jobs *j)
{
  j->order = g_array_new (FALSE, FALSE, sizeof (int));
  j->starts = g_array_new (FALSE, FALSE, sizeof (double));
  j->ends = g_array_new (FALSE, FALSE, sizeof (double));
}

static void
jobs_clear (Jobs *j)
{
  g_array_unref (j->order);
  g_array_unref (j->starts);
  g_array_unref (j->ends);
}

static void
job_done (EngSim *sim, gpointer ctx, gpointer data, double start, double end)
{
  Jobs *j = ctx;
  int k = GPOINTER_TO_INT (data);

  g_assert_cmpfloat (end, ==, eng_sim_now (sim));
  g_array_append_val (j->order, k);
  g_array_append_val (j->starts, start);
  g_array_append_val (j->ends, end);
}

static void
test_resource_closed_form (void)
{
  const int n = 40;
  const double s = 0.3; /* seconds per job */
  EngSim *sim = eng_sim_new ();
  EngResource *res = eng_resource_new (sim);
  Jobs j;
  int k;

  jobs_init (&j);
  for (k = 0; k < n; k++)
    eng_resource_request (res, s, job_done, &j, GINT_TO_POINTER (k));
  g_assert_cmpuint (eng_resource_queued (res), ==, n);
  eng_run (sim, INFINITY);
  g_assert_cmpuint (j.order->len, ==, n);
  for (k = 0; k < n; k++)
    {
      /* FIFO: job k completes k-th, starts at k s and ends at (k+1) s. */
      g_assert_cmpint (g_array_index (j.order, int, k), ==, k);
      g_assert_cmpfloat_with_epsilon (g_array_index (j.starts, double, k),
                                      k * s, 1e-12 * n * s);
      g_assert_cmpfloat_with_epsilon (g_array_index (j.ends, double, k),
                                      (k + 1) * s, 1e-12 * n * s);
    }
  g_assert_cmpfloat_with_epsilon (eng_resource_busy_time (res), n * s,
                                  1e-12 * n * s);
  g_assert_cmpuint (eng_resource_queued (res), ==, 0);
  jobs_clear (&j);
  eng_resource_free (res);
  eng_sim_free (sim);
}

/* An arrival event: requests a job of `service` seconds tagged `tag`. */
typedef struct {
  EngResource *res;
  Jobs *jobs;
  double service; /* seconds */
  int tag;
} Arrival;

static void
arrive (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  Arrival *a = ctx;
  eng_resource_request (a->res, a->service, job_done, a->jobs,
                        GINT_TO_POINTER (a->tag));
}

static void
test_resource_lindley (void)
{
  /* Arrivals at r_k with services s_k: start_k = max(r_k, end_{k-1}),
   * end_k = start_k + s_k.  Job 2 arrives while the server is idle. */
  const double r[] = { 0.0, 0.5, 5.0, 5.1, 5.2 }; /* seconds */
  const double s[] = { 1.0, 2.0, 0.5, 0.0, 1.5 }; /* seconds */
  const int n = G_N_ELEMENTS (r);
  EngSim *sim = eng_sim_new ();
  EngResource *res = eng_resource_new (sim);
  Arrival a[5];
  Jobs j;
  double end = 0.0, busy = 0.0;
  int k;

  jobs_init (&j);
  for (k = 0; k < n; k++)
    {
      a[k] = (Arrival) { res, &j, s[k], k };
      eng_schedule_at (sim, r[k], arrive, &a[k], NULL);
    }
  eng_run (sim, INFINITY);
  g_assert_cmpuint (j.order->len, ==, n);
  for (k = 0; k < n; k++)
    {
      double start = MAX (r[k], end);
      end = start + s[k];
      busy += s[k];
      g_assert_cmpint (g_array_index (j.order, int, k), ==, k);
      g_assert_cmpfloat_with_epsilon (g_array_index (j.starts, double, k),
                                      start, 1e-12);
      g_assert_cmpfloat_with_epsilon (g_array_index (j.ends, double, k),
                                      end, 1e-12);
    }
  g_assert_cmpfloat_with_epsilon (eng_resource_busy_time (res), busy, 1e-12);
  jobs_clear (&j);
  eng_resource_free (res);
  eng_sim_free (sim);
}

/* A done callback that requests a follow-up job: it queues behind the jobs
 * already waiting. */
typedef struct {
  EngResource *res;
  Jobs jobs;
  double service; /* seconds */
} Chain;

static void
chain_done (EngSim *sim, gpointer ctx, gpointer data, double start, double end)
{
  Chain *c = ctx;
  int k = GPOINTER_TO_INT (data);

  job_done (sim, &c->jobs, data, start, end);
  if (k == 0)
    eng_resource_request (c->res, c->service, chain_done, c,
                          GINT_TO_POINTER (100));
}

static void
test_resource_request_from_done (void)
{
  const double s = 1.0; /* seconds per job */
  EngSim *sim = eng_sim_new ();
  Chain c;

  c.res = eng_resource_new (sim);
  c.service = s;
  jobs_init (&c.jobs);
  eng_resource_request (c.res, s, chain_done, &c, GINT_TO_POINTER (0));
  eng_resource_request (c.res, s, chain_done, &c, GINT_TO_POINTER (1));
  /* Busy time counts completed jobs only. */
  eng_run (sim, 0.5 * s);
  g_assert_cmpfloat (eng_resource_busy_time (c.res), ==, 0.0);
  g_assert_cmpuint (eng_resource_queued (c.res), ==, 2);
  eng_run (sim, INFINITY);
  g_assert_cmpuint (c.jobs.order->len, ==, 3);
  g_assert_cmpint (g_array_index (c.jobs.order, int, 0), ==, 0);
  g_assert_cmpint (g_array_index (c.jobs.order, int, 1), ==, 1);
  g_assert_cmpint (g_array_index (c.jobs.order, int, 2), ==, 100);
  g_assert_cmpfloat_with_epsilon (g_array_index (c.jobs.ends, double, 2),
                                  3 * s, 1e-12);
  g_assert_cmpfloat_with_epsilon (eng_resource_busy_time (c.res), 3 * s, 1e-12);
  jobs_clear (&c.jobs);
  eng_resource_free (c.res);
  eng_sim_free (sim);
}

static void
test_resource_free_busy (void)
{
  EngSim *sim = eng_sim_new ();
  EngResource *res = eng_resource_new (sim);
  Jobs j;

  jobs_init (&j);
  eng_resource_request (res, 1.0, job_done, &j, NULL);
  eng_resource_request (res, 1.0, job_done, &j, NULL);
  eng_resource_free (res);
  /* The completion event was cancelled: nothing fires. */
  g_assert_cmpuint (eng_sim_pending (sim), ==, 0);
  g_assert_cmpuint (eng_run (sim, INFINITY), ==, 0);
  g_assert_cmpuint (j.order->len, ==, 0);
  jobs_clear (&j);
  eng_sim_free (sim);
}

/* --- end-of-instant hooks ------------------------------------------------ */

typedef struct {
  GString *log;      /* what happened, in order */
  guint id;          /* the hook's id */
  int requests;      /* events left that request the hook */
  gboolean again;    /* the hook schedules one event at the current time */
} FlushCase;

static void
flush_event (EngSim *sim, gpointer ctx, gpointer data)
{
  FlushCase *fc = ctx;
  g_string_append_printf (fc->log, "e%d@%g ", GPOINTER_TO_INT (data), eng_sim_now (sim));
  if (fc->requests-- > 0)
    eng_flush_request (sim, fc->id);
}

static void
flush_hook (EngSim *sim, gpointer ctx)
{
  FlushCase *fc = ctx;
  g_string_append_printf (fc->log, "F@%g ", eng_sim_now (sim));
  if (fc->again)
    {
      fc->again = FALSE;
      eng_schedule (sim, 0, flush_event, fc, GINT_TO_POINTER (9));
    }
}

/* A requested hook runs once, after the last event of its instant and
 * before the clock moves; it is not an event; it may schedule at the
 * current time; an unregistered hook never runs. */
static void
test_flush_hooks (void)
{
  EngSim *sim = eng_sim_new ();
  FlushCase fc = { g_string_new (NULL), 0, 3, TRUE };
  fc.id = eng_flush_register (sim, flush_hook, &fc);
  g_assert_cmpuint (fc.id, !=, 0);
  for (int i = 0; i < 3; i++)
    eng_schedule_at (sim, 1.0, flush_event, &fc, GINT_TO_POINTER (i));
  eng_schedule_at (sim, 2.0, flush_event, &fc, GINT_TO_POINTER (3));
  g_assert_cmpuint (eng_run (sim, INFINITY), ==, 5);
  /* three requests at t = 1 give one flush, after e2; its event e9 at t = 1
   * runs before t = 2 and requests nothing (requests are used up) */
  g_assert_cmpstr (fc.log->str, ==, "e0@1 e1@1 e2@1 F@1 e9@1 e3@2 ");
  g_assert_cmpuint (eng_sim_events (sim), ==, 5);

  g_string_truncate (fc.log, 0);
  fc.requests = 1;
  eng_schedule_at (sim, 3.0, flush_event, &fc, GINT_TO_POINTER (4));
  eng_flush_unregister (sim, fc.id);
  eng_run (sim, INFINITY);
  g_assert_cmpstr (fc.log->str, ==, "e4@3 ");

  /* a hook requested by the last event still runs before eng_run returns */
  FlushCase fd = { g_string_new (NULL), 0, 1, FALSE };
  fd.id = eng_flush_register (sim, flush_hook, &fd);
  eng_schedule_at (sim, 4.0, flush_event, &fd, GINT_TO_POINTER (5));
  eng_run (sim, INFINITY);
  g_assert_cmpstr (fd.log->str, ==, "e5@4 F@4 ");
  g_string_free (fc.log, TRUE);
  g_string_free (fd.log, TRUE);
  eng_sim_free (sim);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/engine/queue/equal-times-fifo", test_equal_times_fifo);
  g_test_add_func ("/engine/queue/zero-delay-after-ties", test_zero_delay_after_ties);
  g_test_add_func ("/engine/queue/time-order", test_time_order);
  g_test_add_func ("/engine/queue/clock-monotonic", test_clock_monotonic);
  g_test_add_func ("/engine/queue/step-empty", test_step_empty);
  g_test_add_func ("/engine/queue/schedule-invalid", test_schedule_invalid);
  g_test_add_func ("/engine/queue/seq-renumber", test_seq_renumber);
  g_test_add_func ("/engine/cancel/never-fires", test_cancel_never_fires);
  g_test_add_func ("/engine/cancel/stale-ids", test_cancel_stale);
  g_test_add_func ("/engine/cancel/from-handler", test_cancel_from_handler);
  g_test_add_func ("/engine/cancel/many", test_cancel_many);
  g_test_add_func ("/engine/run/until", test_run_until);
  g_test_add_func ("/engine/run/stop", test_run_stop);
  g_test_add_func ("/engine/run/flush-hooks", test_flush_hooks);
  g_test_add_func ("/engine/determinism/same-seed", test_same_seed);
  g_test_add_func ("/engine/determinism/different-seed", test_different_seed);
  g_test_add_func ("/engine/rng/reference", test_rng_reference);
  g_test_add_func ("/engine/rng/same-seed", test_rng_same_seed);
  g_test_add_func ("/engine/rng/streams-differ", test_rng_streams_differ);
  g_test_add_func ("/engine/rng/uniform", test_rng_uniform);
  g_test_add_func ("/engine/rng/below", test_rng_below);
  g_test_add_func ("/engine/rng/exponential", test_rng_exponential);
  g_test_add_func ("/engine/rng/normal", test_rng_normal);
  g_test_add_func ("/engine/rng/shuffle", test_rng_shuffle);
  g_test_add_func ("/engine/resource/closed-form", test_resource_closed_form);
  g_test_add_func ("/engine/resource/lindley", test_resource_lindley);
  g_test_add_func ("/engine/resource/request-from-done", test_resource_request_from_done);
  g_test_add_func ("/engine/resource/free-busy", test_resource_free_busy);

  return g_test_run ();
}
