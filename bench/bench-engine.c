/*
 * bench-engine.c — throughput of the event queue on the classic hold model.
 *
 * The hold model (Vaucher and Duval, CACM 1975) keeps P events pending: the
 * queue is prefilled with P events at exponential delays (mean 1 s), and
 * each fired event schedules one new event at now + Exp(mean 1 s).  We time
 * the firing phase only and report events per second for P = 1,000 and
 * P = 1,000,000, beside the same model run on a baseline queue built from
 * GLib's GSequence (a balanced tree: insert sorted, remove first) in the
 * same process.  Figures are printed, never asserted: wall time depends on
 * the machine and its load.
 *
 * Usage: bench-engine [SCALE]   (SCALE multiplies the event counts; 1.0)
 */
#include <math.h>
#include <stdlib.h>

#include "engine/engine.h"

/* --- ours ------------------------------------------------------------------ */

typedef struct {
  EngRng rng;
  guint64 target;  /* stop after this many fired events */
  guint64 fired;
} Hold;

static void
hold_fire (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  Hold *h = ctx;

  eng_schedule (sim, eng_rng_exponential (&h->rng, 1.0), hold_fire, h, NULL);
  if (++h->fired == h->target)
    eng_stop (sim);
}

/* Returns events/s of the firing phase; `checksum` receives the final
 * clock (seconds) so that the two queues can be compared. */
static double
bench_ours (gsize pending, guint64 events, double *checksum)
{
  EngSim *sim = eng_sim_new ();
  Hold h;
  gint64 t0, t1;
  gsize i;

  eng_rng_init (&h.rng, 1, 0);
  h.target = events;
  h.fired = 0;
  for (i = 0; i < pending; i++)
    eng_schedule (sim, eng_rng_exponential (&h.rng, 1.0), hold_fire, &h, NULL);

  t0 = g_get_monotonic_time ();
  eng_run (sim, INFINITY);
  t1 = g_get_monotonic_time ();

  g_assert (h.fired == events && eng_sim_pending (sim) == pending);
  *checksum = eng_sim_now (sim);
  eng_sim_free (sim);
  return events / ((t1 - t0) * 1e-6);
}

/* --- baseline: GSequence as a priority queue ------------------------------ */

typedef struct BaseEvent BaseEvent;
typedef void (*BaseHandler) (gpointer ctx, BaseEvent *ev);

struct BaseEvent {
  double time;      /* seconds */
  guint64 seq;      /* tie-breaker: scheduling order */
  BaseHandler handler;
  gpointer ctx;
};

typedef struct {
  GSequence *queue; /* of BaseEvent *, sorted by (time, seq) */
  double now;       /* seconds */
  guint64 seq;
} BaseSim;

static gint
base_cmp (gconstpointer a, gconstpointer b, gpointer user G_GNUC_UNUSED)
{
  const BaseEvent *x = a, *y = b;

  if (x->time != y->time)
    return x->time < y->time ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Schedules `ev` (caller-owned storage) at now + delay. */
static void
base_schedule (BaseSim *bs, BaseEvent *ev, double delay, BaseHandler handler,
               gpointer ctx)
{
  ev->time = bs->now + delay;
  ev->seq = bs->seq++;
  ev->handler = handler;
  ev->ctx = ctx;
  g_sequence_insert_sorted (bs->queue, ev, base_cmp, NULL);
}

typedef struct {
  BaseSim *bs;
  EngRng rng;
} BaseHold;

static void
base_hold_fire (gpointer ctx, BaseEvent *ev)
{
  BaseHold *h = ctx;
  /* Reuse the fired event's storage for the new one. */
  base_schedule (h->bs, ev, eng_rng_exponential (&h->rng, 1.0),
                 base_hold_fire, h);
}

static double
bench_baseline (gsize pending, guint64 events, double *checksum)
{
  BaseSim bs = { g_sequence_new (NULL), 0.0, 0 };
  BaseEvent *pool = g_new (BaseEvent, pending);
  BaseHold h;
  gint64 t0, t1;
  guint64 k;
  gsize i;

  h.bs = &bs;
  eng_rng_init (&h.rng, 1, 0);
  for (i = 0; i < pending; i++)
    base_schedule (&bs, &pool[i], eng_rng_exponential (&h.rng, 1.0),
                   base_hold_fire, &h);

  t0 = g_get_monotonic_time ();
  for (k = 0; k < events; k++)
    {
      GSequenceIter *first = g_sequence_get_begin_iter (bs.queue);
      BaseEvent *ev = g_sequence_get (first);
      g_sequence_remove (first);
      bs.now = ev->time;
      ev->handler (ev->ctx, ev);
    }
  t1 = g_get_monotonic_time ();

  *checksum = bs.now;
  g_sequence_free (bs.queue);
  g_free (pool);
  return events / ((t1 - t0) * 1e-6);
}

int
main (int argc, char **argv)
{
  static const struct {
    gsize pending;
    guint64 events;        /* ours */
    guint64 base_events;   /* baseline (slower, so fewer) */
    double target;         /* M events/s required of ours */
  } cases[] = {
    { 1000, 20000000, 2000000, 10.0 },
    { 1000000, 10000000, 1000000, 2.0 },
  };
  double scale = argc > 1 ? g_ascii_strtod (argv[1], NULL) : 1.0;
  gsize c;

  if (!(scale > 0.0))
    {
      g_printerr ("usage: %s [SCALE > 0]\n", argv[0]);
      return 2;
    }
  for (c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      guint64 n = MAX (1, (guint64) (cases[c].events * scale));
      guint64 nb = MAX (1, (guint64) (cases[c].base_events * scale));
      double ours_clock, base_clock, ours_small_clock;
      double ours = bench_ours (cases[c].pending, n, &ours_clock);
      double base = bench_baseline (cases[c].pending, nb, &base_clock);

      /* Same model, same stream, same event count: both queues must end at
       * the same simulated time. */
      bench_ours (cases[c].pending, nb, &ours_small_clock);
      g_print ("hold model, %" G_GSIZE_FORMAT " pending: %.1f M events/s "
               "(target >= %.0f M/s; %" G_GUINT64_FORMAT " events)\n",
               cases[c].pending, ours / 1e6, cases[c].target, n);
      g_print ("  baseline GSequence queue: %.1f M events/s "
               "(%" G_GUINT64_FORMAT " events); ours/baseline = %.1fx; "
               "final clocks %s\n",
               base / 1e6, nb, ours / base,
               ours_small_clock == base_clock ? "agree" : "DIFFER");
    }
  return 0;
}
