/*
 * checkpoint.c — whole-job failures, checkpoints and restarts of a
 * synchronous job (checkpoint.h; docs/policies.md, "Job failures and
 * checkpoints").
 *
 * The timeline is composed segment by segment.  A segment is `interval`
 * seconds of useful work followed by a checkpoint write of `write` seconds
 * (the last one, which ends the run, has no write).  An attempt at a
 * segment starts at wall time w and needs len + write seconds; it succeeds
 * when no failure comes before w + len + write.  A failure at f < that
 * undoes [w, f) (lost work, and the part of the write done) and starts a
 * restart of `restart` seconds at f; a failure during a restart starts the
 * restart again.  Then the segment is attempted again from its start.  A
 * failure exactly at the end of an attempt comes after it.
 *
 * Failures are the given wall times and, where the job's MTBF is finite,
 * a Poisson process drawn on its own stream: the gaps are exponential,
 * drawn one at a time as the walk needs them, so that the draws depend
 * only on the seed, never on the run's length.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "engine/engine.h"
#include "device/model.h"
#include "policies/policy.h"
#include "sim/checkpoint.h"

double
sim_young_daly (double write, double mtbf)
{
  return sqrt (2.0 * write * mtbf);
}

double
sim_daly_interval (double write, double mtbf)
{
  if (!(write < 2.0 * mtbf))
    return mtbf;
  double r = write / (2.0 * mtbf);
  return sqrt (2.0 * write * mtbf) * (1.0 + sqrt (r) / 3.0 + r / 9.0) - write;
}

double
sim_ckpt_waste (double write, double interval, double restart, double mtbf)
{
  double w = isfinite (interval) ? write / interval : 0.0;
  if (isfinite (mtbf))
    w += interval / (2.0 * mtbf) + restart / mtbf;
  return w;
}

double
sim_ckpt_expected_attempt (double len, double restart, double mtbf)
{
  return exp (restart / mtbf) * expm1 (len / mtbf) * mtbf;
}

double
sim_ckpt_size (const SimConfig *c, const KernModel *m)
{
  if (c->fail_ckpt_size > 0 || !m)
    return c->fail_ckpt_size;
  SimMemoryTerms t;
  sim_memory_terms (c, m, &t);
  /* one copy of every parameter: its value and its optimizer state (K
   * bytes, the fp32 master copy included under bf16 and fp16) */
  return (double) m->ops->n_params (m) * (t.param_bytes + t.state_bytes);
}

void
sim_ckpt_plan (const SimConfig *c, const KernModel *m, int n_links, SimCkptPlan *p)
{
  g_autoptr (GPtrArray) hosts = pol_lookup (c->policy)->host_names ((int) c->workers,
                                                                    (int) c->servers);
  memset (p, 0, sizeof *p);
  p->on = c->fail_mtbf > 0 || c->fail_link_mtbf > 0
          || (c->fail_job_at && c->fail_job_at->len > 0);
  p->devices = (double) hosts->len;
  p->cables = n_links / 2;
  double rate = (c->fail_mtbf > 0 ? p->devices / c->fail_mtbf : 0.0)
                + (c->fail_link_mtbf > 0 ? p->cables / c->fail_link_mtbf : 0.0);
  p->mtbf = rate > 0 ? 1.0 / rate : INFINITY;
  p->size = sim_ckpt_size (c, m);
  double bw = c->fail_ckpt_bandwidth;
  p->write = bw > 0 ? p->size / bw : 0.0;
  p->restart = MAX (c->fail_reschedule, 0.0) + p->write;
  p->young = sim_young_daly (p->write, p->mtbf);
  p->daly = sim_daly_interval (p->write, p->mtbf);
  p->interval = c->ckpt_interval > 0 ? c->ckpt_interval : p->young;
  p->waste = sim_ckpt_waste (p->write, p->interval, p->restart, p->mtbf);
}

gboolean
sim_ckpt_validate (const SimConfig *c, const SimCkptPlan *p, GError **error)
{
  if (!p->on)
    return TRUE;
  gboolean is_auto = !(c->ckpt_interval > 0);
  if (is_auto && !(p->write > 0))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [failures] checkpoint_interval: auto is sqrt(2 C M), but a checkpoint "
                   "of this model takes no time to write (%g bytes); give a time, or "
                   "[failures] checkpoint_size", c->file, p->size);
      return FALSE;
    }
  if (is_auto && !isfinite (p->mtbf))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [failures] checkpoint_interval: auto is sqrt(2 C M), but the job has "
                   "no failure rate (only [failures] job_at); give a time, or set [failures] "
                   "mtbf", c->file);
      return FALSE;
    }
  if (!(p->write <= 1e12 && p->restart <= 1e12))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [failures] checkpoint_bandwidth: %g bytes at %g bytes/s make a "
                   "checkpoint write of %g s and a restart of %g s, more than 1e12 s; raise "
                   "the bandwidth or lower checkpoint_size or reschedule", c->file, p->size,
                   c->fail_ckpt_bandwidth, p->write, p->restart);
      return FALSE;
    }
  double span = p->interval + p->write + p->restart;
  if (isfinite (p->mtbf) && span > 5.0 * p->mtbf)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [failures] mtbf: the job of %g devices and %g cables fails every %g s "
                   "on average, but %g s of work, a %g s checkpoint write and a %g s restart "
                   "take more than 5 times that, so it would rarely progress; raise mtbf or "
                   "link_mtbf, or lower checkpoint_interval, checkpoint_size or reschedule",
                   c->file, p->devices, p->cables, p->mtbf, p->interval, p->write, p->restart);
      return FALSE;
    }
  return TRUE;
}

/* --- the composed timeline ------------------------------------------------ */

/* The kept execution of one segment. */
typedef struct {
  double useful;         /* s of useful time where it starts */
  double wall;           /* s of wall time where it starts */
  double len;            /* s of useful work in it */
} Segment;

struct SimTimeline {
  double interval, write, restart, mtbf;
  const double *at;      /* (n_at) given failures, sorted */
  int n_at, next_at;
  EngRng rng;
  double next_drawn;     /* the next drawn failure, INFINITY: none */
  double w;              /* s, wall time where the next attempt starts */
  gint64 k;              /* segments composed */
  gboolean finished;
  gboolean truncated;    /* a list reached SIM_CKPT_MAX_ROWS */
  GArray *segments;      /* Segment, in order */
  GArray *outages;       /* SimOutage, in order */
  SimTimelineTotals tot;
};

SimTimeline *
sim_timeline_new (double interval, double write, double restart, const double *at, int n,
                  double mtbf, guint64 seed)
{
  g_return_val_if_fail (interval > 0 && write >= 0 && restart >= 0, NULL);
  SimTimeline *tl = g_new0 (SimTimeline, 1);
  *tl = (SimTimeline) { .interval = interval, .write = write, .restart = restart,
                        .mtbf = mtbf, .at = at, .n_at = n, .next_drawn = INFINITY };
  for (int i = 1; i < n; i++)
    g_return_val_if_fail (at[i - 1] <= at[i], tl);
  if (isfinite (mtbf) && mtbf > 0)
    {
      eng_rng_init (&tl->rng, seed, SIM_CKPT_STREAM);
      tl->next_drawn = eng_rng_exponential (&tl->rng, mtbf);
    }
  tl->segments = g_array_new (FALSE, FALSE, sizeof (Segment));
  tl->outages = g_array_new (FALSE, FALSE, sizeof (SimOutage));
  return tl;
}

void
sim_timeline_free (SimTimeline *tl)
{
  if (!tl)
    return;
  g_array_unref (tl->segments);
  g_array_unref (tl->outages);
  g_free (tl);
}

/* The first failure at or after wall time w, INFINITY for none: given
 * ones and drawn ones before w are passed over (they struck while the job
 * was already down, or they are the failure being handled). */
static double
peek_failure (SimTimeline *tl, double w)
{
  while (tl->next_at < tl->n_at && tl->at[tl->next_at] < w)
    tl->next_at++;
  while (tl->next_drawn < w)
    tl->next_drawn += eng_rng_exponential (&tl->rng, tl->mtbf);
  double g = tl->next_at < tl->n_at ? tl->at[tl->next_at] : INFINITY;
  return MIN (g, tl->next_drawn);
}

static void
add_outage (SimTimeline *tl, SimOutageKind kind, double start, double end, double useful,
            gboolean failure)
{
  SimOutage o = { kind, start, end, useful, failure };
  if (tl->outages->len < SIM_CKPT_MAX_ROWS)
    g_array_append_val (tl->outages, o);
  else
    tl->truncated = TRUE;
}

/* Restarts after a failure at wall time f: a failure during the restart
 * starts it again.  Returns the wall time the job runs again. */
static double
restart_after (SimTimeline *tl, double f, double useful)
{
  for (;;)
    {
      double g = peek_failure (tl, nextafter (f, INFINITY));
      if (g >= f + tl->restart)
        {
          add_outage (tl, SIM_OUTAGE_RESTART, f, f + tl->restart, useful, FALSE);
          tl->tot.restart += tl->restart;
          return f + tl->restart;
        }
      add_outage (tl, SIM_OUTAGE_RESTART, f, g, useful, TRUE);
      tl->tot.restart += g - f;
      tl->tot.failures++;
      f = g;
    }
}

/* Composes the next segment: len seconds of work, then a write when
 * `write` is set, attempted until no failure cuts it. */
static void
compose_segment (SimTimeline *tl, double len, gboolean write)
{
  double useful = (double) tl->k * tl->interval;
  double need = len + (write ? tl->write : 0.0);
  for (;;)
    {
      double f = peek_failure (tl, tl->w);
      if (f >= tl->w + need)
        break;
      add_outage (tl, SIM_OUTAGE_LOST, tl->w, f, useful, TRUE);
      tl->tot.lost += f - tl->w;
      tl->tot.failures++;
      tl->w = restart_after (tl, f, useful);
    }
  Segment s = { useful, tl->w, len };
  if (tl->segments->len < SIM_CKPT_MAX_ROWS)
    g_array_append_val (tl->segments, s);
  else
    tl->truncated = TRUE;
  tl->w += len;
  if (write)
    {
      add_outage (tl, SIM_OUTAGE_CHECKPOINT, tl->w, tl->w + tl->write, useful + len, FALSE);
      tl->tot.checkpoint += tl->write;
      tl->tot.checkpoints++;
      tl->w += tl->write;
    }
  tl->k++;
}

void
sim_timeline_settle (SimTimeline *tl, double u)
{
  g_return_if_fail (!tl->finished);
  while (!tl->truncated && (double) (tl->k + 1) * tl->interval < u)
    compose_segment (tl, tl->interval, TRUE);
}

void
sim_timeline_finish (SimTimeline *tl, double end)
{
  g_return_if_fail (!tl->finished);
  sim_timeline_settle (tl, end);
  compose_segment (tl, MAX (end - (double) tl->k * tl->interval, 0.0), FALSE);
  tl->finished = TRUE;
  tl->tot.useful = end;
  tl->tot.elapsed = tl->w;
}

double
sim_timeline_settled (const SimTimeline *tl)
{
  return tl->finished ? INFINITY : (double) tl->k * tl->interval;
}

double
sim_timeline_wall (const SimTimeline *tl, double u, gboolean after)
{
  const Segment *s = (const Segment *) tl->segments->data;
  int n = (int) tl->segments->len;
  if (n == 0)
    return u;
  /* the last segment starting at or before u (after) or strictly before
   * it (!after, u > 0): binary search */
  int lo = 0, hi = n - 1;
  while (lo < hi)
    {
      int mid = (lo + hi + 1) / 2;
      gboolean take = after || u <= 0 ? s[mid].useful <= u : s[mid].useful < u;
      if (take)
        lo = mid;
      else
        hi = mid - 1;
    }
  return s[lo].wall + (u - s[lo].useful);
}

gboolean
sim_timeline_truncated (const SimTimeline *tl)
{
  return tl->truncated;
}

const SimOutage *
sim_timeline_outages (const SimTimeline *tl, int *n)
{
  *n = (int) tl->outages->len;
  return (const SimOutage *) tl->outages->data;
}

void
sim_timeline_totals (const SimTimeline *tl, SimTimelineTotals *out)
{
  *out = tl->tot;
}
