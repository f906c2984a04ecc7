/*
 * calibrate.c — `dtsim calibrate` (calibrate.h): fits the dense and the
 * convolution efficiency of each measured device and precision to step
 * times, and writes the catalog with them.
 *
 * Every row becomes a one-worker timing scenario of its device, precision,
 * workload, batch and optimizer (memory unchecked: the run was measured,
 * so it fitted), priced by the same step cost as `dtsim run` (forward,
 * backward, optimizer update).  For each device and precision the two
 * efficiencies minimise the sum over its rows of (log predicted - log
 * measured)^2, by alternate golden-section searches on each (in log space,
 * between 0.005 and 1).  An efficiency that moves no row's time by more
 * than 1% when it changes by a fifth is not determined by the rows (say, a
 * dense efficiency from CNN rows alone): it keeps the catalog's figure.
 */
#include "config.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "sim/calibrate.h"
#include "config/hardware.h"
#include "config/input.h"
#include "device/model.h"
#include "config/scenario.h"
#include "sim/load.h"

#define LOG_LO (-5.298317366548036)   /* log 0.005 */
#define GOLDEN 0.6180339887498949

static const char *const prec_names[] = { "fp32", "tf32", "bf16", "fp16" };

typedef struct {
  int line;
  char *device;
  int precision;
  char *workload;
  gint64 batch;
  double seconds;
  char *optimizer;
  SimConfig *c;
  KernModel *m;
  double before, after;
  double eff, conv;      /* its device and precision's figures in the fit */
  double before_eff, before_conv; /* the catalog's, as dtsim run resolves them */
} Row;

/* The longest step a measurement may report, s (about 11.6 days). */
#define CAL_MAX_STEP 1e6

static void
row_free (Row *r)
{
  g_free (r->device);
  g_free (r->workload);
  g_free (r->optimizer);
  if (r->m)
    kern_model_free (r->m);
  if (r->c)
    sim_config_free (r->c);
  g_free (r);
}

static gboolean
csv_error (GError **error, const char *csv, int line, const char *fmt, ...) G_GNUC_PRINTF (4, 5);

static gboolean
csv_error (GError **error, const char *csv, int line, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  if (line > 0)
    g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s line %d: %s", csv, line, msg);
  else
    g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: %s", csv, msg);
  return FALSE;
}

/* A path the temporary scenario can name: absolute when `p` is a file. */
static char *
absolute (const char *p)
{
  if (g_file_test (p, G_FILE_TEST_IS_REGULAR) && !g_path_is_absolute (p))
    return g_canonicalize_filename (p, NULL);
  return g_strdup (p);
}

/* Builds row r's configuration and model through a one-worker scenario. */
static gboolean
row_load (Row *r, const char *csv, const char *base, GError **error)
{
  g_autofree char *wl = absolute (r->workload);
  g_autofree char *cat = base ? g_strdup_printf ("catalog = %s\n", base) : g_strdup ("");
  g_autofree char *text = g_strdup_printf (
    "[scenario]\nname = calibrate\niterations = 1\n"
    "[cluster]\ndevice = %s\nworkers = 1\n%s"
    "[device]\nprecision = %s\nmemory = 0\n"
    "[model]\nkind = timing\nworkload = %s\nbatch = %" G_GINT64_FORMAT "\noptimizer = %s\n"
    "[policy]\nkind = allreduce\n",
    r->device, cat, prec_names[r->precision], wl, r->batch, r->optimizer);
  g_autofree char *path = NULL;
  int fd = g_file_open_tmp ("dtsim-calibrate-XXXXXX.ini", &path, NULL);
  if (fd < 0)
    return csv_error (error, csv, 0, "cannot create a temporary file");
  gboolean wrote = write (fd, text, strlen (text)) == (ssize_t) strlen (text);
  close (fd);
  GError *local = NULL;
  GPtrArray *configs = wrote ? sim_scenario_load (path, NULL, &local) : NULL;
  g_unlink (path);
  if (!configs)
    {
      /* the message names the temporary file: keep what follows it */
      const char *why = local ? local->message : "cannot write a temporary file";
      const char *colon = local ? strstr (why, ": ") : NULL;
      gboolean ok = csv_error (error, csv, r->line, "%s", colon ? colon + 2 : why);
      g_clear_error (&local);
      return ok;
    }
  r->c = g_ptr_array_steal_index (configs, 0);
  g_ptr_array_unref (configs);
  r->m = sim_model_new (r->c, NULL, &local);
  if (!r->m)
    {
      gboolean ok = csv_error (error, csv, r->line, "workload: %s", local->message);
      g_clear_error (&local);
      return ok;
    }
  return TRUE;
}

/* The optimizers' names, "a, b or c". */
static char *
optimizer_names (void)
{
  GString *s = g_string_new (NULL);
  const void *const *e = kern_opt_entries ();
  for (int i = 0; e[i]; i++)
    g_string_append_printf (s, "%s%s", i == 0 ? "" : e[i + 1] ? ", " : " or ",
                            ((const KernOptKind *) e[i])->name);
  return g_string_free (s, FALSE);
}

/* Parses one data line into a row (not yet loaded). */
static Row *
parse_row (const char *csv, int line, char **f, int n, const SimCatalog *cat, GError **error)
{
  if (n < 5 || n > 6)
    {
      csv_error (error, csv, line, "expected 5 or 6 fields device,precision,workload,batch,"
                                   "seconds[,optimizer], found %d", n);
      return NULL;
    }
  Row *r = g_new0 (Row, 1);
  r->line = line;
  r->device = g_strdup (g_strstrip (f[0]));
  const SimDevice *d = sim_catalog_device (cat, r->device);
  if (!d)
    {
      g_autofree char *names = sim_catalog_names (cat, TRUE);
      csv_error (error, csv, line, "device: unknown device '%s'; use one of: %s", r->device,
                 names);
      row_free (r);
      return NULL;
    }
  const char *p = g_strstrip (f[1]);
  r->precision = -1;
  for (int k = 0; k < 4; k++)
    if (g_ascii_strcasecmp (p, prec_names[k]) == 0)
      r->precision = k;
  if (r->precision < 0 || !(sim_device_precision (d, r->precision).peak > 0))
    {
      csv_error (error, csv, line, "precision: '%s' is not fp32, tf32, bf16 or fp16 with a "
                 "peak in the catalog for %s; use one of those", p, d->name);
      row_free (r);
      return NULL;
    }
  r->workload = g_strdup (g_strstrip (f[2]));
  char *end = NULL;
  const char *b = g_strstrip (f[3]);
  r->batch = g_ascii_strtoll (b, &end, 10);
  if (!*b || *end || r->batch < 1 || r->batch > G_MAXINT)
    {
      csv_error (error, csv, line, "batch: expected a whole number of samples per device, "
                 "found '%s'", b);
      row_free (r);
      return NULL;
    }
  const char *s = g_strstrip (f[4]);
  r->seconds = g_ascii_strtod (s, &end);
  if (!*s || *end || !isfinite (r->seconds) || r->seconds <= 0)
    {
      csv_error (error, csv, line, "seconds: expected the measured time of one training "
                 "step in seconds (> 0), found '%s'", s);
      row_free (r);
      return NULL;
    }
  if (r->seconds > CAL_MAX_STEP)
    {
      csv_error (error, csv, line, "seconds: %g s is no plausible training step (at most %g s);"
                 " give one step's time in seconds", r->seconds, CAL_MAX_STEP);
      row_free (r);
      return NULL;
    }
  const char *o = n == 6 ? g_strstrip (f[5]) : kern_opt_default ()->name;
  if (!kern_opt_lookup (o))
    {
      g_autofree char *names = optimizer_names ();
      csv_error (error, csv, line, "optimizer: expected %s, found '%s'", names, o);
      row_free (r);
      return NULL;
    }
  r->optimizer = g_strdup (o);
  return r;
}

/* The rows of `csv`, loaded; NULL on an error. */
static GPtrArray *
read_rows (const char *csv, const char *base, const SimCatalog *cat, GError **error)
{
  g_autofree char *text = sim_input_read_text (csv, "measured steps", error);
  if (!text)
    return NULL;
  g_autoptr (GPtrArray) rows = g_ptr_array_new_with_free_func ((GDestroyNotify) row_free);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  gboolean header = FALSE;
  for (int i = 0; lines[i]; i++)
    {
      char *l = g_strstrip (lines[i]);
      if (!*l || l[0] == '#')
        continue;
      g_auto (GStrv) f = g_strsplit (l, ",", -1);
      int n = (int) g_strv_length (f);
      if (!header)
        {
          /* case and blanks around the commas do not matter */
          g_autofree char *h = g_ascii_strdown (l, -1);
          char *w = h;
          for (const char *r = h; *r; r++)
            if (*r != ' ' && *r != '\t')
              *w++ = *r;
          *w = '\0';
          if (!g_str_has_prefix (h, "device,precision,workload,batch,seconds"))
            {
              csv_error (error, csv, i + 1, "expected the header line "
                         "device,precision,workload,batch,seconds[,optimizer]");
              return NULL;
            }
          header = TRUE;
          continue;
        }
      Row *r = parse_row (csv, i + 1, f, n, cat, error);
      if (!r)
        return NULL;
      g_ptr_array_add (rows, r);
      if (!row_load (r, csv, base, error))
        return NULL;
    }
  if (rows->len == 0)
    {
      csv_error (error, csv, 0, "no measured steps; add lines device,precision,workload,"
                 "batch,seconds after the header");
      return NULL;
    }
  return g_steal_pointer (&rows);
}

/* Row r's step time at efficiencies (eff, conv) and kernel overhead t0. */
static double
predict (Row *r, double eff, double conv, double t0)
{
  r->c->efficiency = eff;
  r->c->conv_efficiency = conv;
  r->c->kernel_overhead = t0;
  SimStepCost cost;
  sim_step_cost (r->c, r->m, &cost);
  double t = cost.step + sim_update_seconds (r->c, r->m->ops->n_params (r->m));
  sim_step_cost_clear (&cost);
  return t;
}

/* The figure being searched: the dense or convolution efficiency of the
 * rows of one precision, or the kernel overhead of every row of a device. */
typedef enum { FIT_EFF, FIT_CONV, FIT_T0 } FitWhat;

/* Sum over the rows of (log predicted - log measured)^2 with figure
 * `what` at x and the rows' others as they stand. */
static double
objective (GPtrArray *g, FitWhat what, double x, double t0)
{
  double s = 0;
  for (guint i = 0; i < g->len; i++)
    {
      Row *r = g_ptr_array_index (g, i);
      double e = log (predict (r, what == FIT_EFF ? x : r->eff, what == FIT_CONV ? x : r->conv,
                               what == FIT_T0 ? x : t0) / r->seconds);
      s += e * e;
    }
  return s;
}

/* Whether changing figure `what` from x to x2 moves some row's time by
 * more than 1%. */
static gboolean
determined (GPtrArray *g, FitWhat what, double x, double x2, double t0)
{
  for (guint i = 0; i < g->len; i++)
    {
      Row *r = g_ptr_array_index (g, i);
      double e = what == FIT_EFF ? x : r->eff, c = what == FIT_CONV ? x : r->conv;
      double a = predict (r, e, c, what == FIT_T0 ? x : t0);
      double b = predict (r, what == FIT_EFF ? x2 : e, what == FIT_CONV ? x2 : c,
                          what == FIT_T0 ? x2 : t0);
      if (fabs (log (b / a)) > 0.01)
        return TRUE;
    }
  return FALSE;
}

/* Golden-section search of figure `what`: efficiencies over log x in
 * [LOG_LO, 0], the overhead over [0, 1 ms]. */
static double
search (GPtrArray *g, FitWhat what, double t0)
{
  gboolean lin = what == FIT_T0;
  double a = lin ? 0 : LOG_LO, b = lin ? 1e-3 : 0;
  for (int it = 0; it < 60; it++)
    {
      double x1 = b - GOLDEN * (b - a), x2 = a + GOLDEN * (b - a);
      if (objective (g, what, lin ? x1 : exp (x1), t0)
          <= objective (g, what, lin ? x2 : exp (x2), t0))
        b = x2;
      else
        a = x1;
    }
  return lin ? (a + b) / 2 : exp ((a + b) / 2);
}

/* Whether some workload appears at two batch sizes in one precision among
 * the rows of g: what tells a per-layer overhead from an efficiency. */
static gboolean
two_batches (GPtrArray *g)
{
  for (guint i = 0; i < g->len; i++)
    for (guint j = i + 1; j < g->len; j++)
      {
        Row *a = g_ptr_array_index (g, i), *b = g_ptr_array_index (g, j);
        if (a->precision == b->precision && strcmp (a->workload, b->workload) == 0
            && a->batch != b->batch)
          return TRUE;
      }
  return FALSE;
}

static void
set_figure (GKeyFile *kf, const char *group, const char *key, double v, const char *comment,
            const char *unit)
{
  char num[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd (num, sizeof num, "%.3g", v);
  g_autofree char *text = g_strconcat (num, unit, NULL);
  g_key_file_set_string (kf, group, key, text);
  g_key_file_set_comment (kf, group, key, comment, NULL);
}

/* The catalog group of device `name` in kf ("device:NAME", any case). */
static char *
device_group (GKeyFile *kf, const char *name)
{
  g_auto (GStrv) groups = g_key_file_get_groups (kf, NULL);
  for (int i = 0; groups[i]; i++)
    if (g_str_has_prefix (groups[i], "device:") && g_ascii_strcasecmp (groups[i] + 7, name) == 0)
      return g_strdup (groups[i]);
  return NULL;
}

static double
round3 (double x)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd (buf, sizeof buf, "%.3g", x);
  return g_ascii_strtod (buf, NULL);
}

static const char *
key_of (int precision, gboolean conv)
{
  static const char *const dense[] = { "efficiency", "tf32_efficiency", "bf16_efficiency",
                                       "fp16_efficiency" };
  static const char *const convs[] = { "conv_efficiency", "tf32_conv_efficiency",
                                       "bf16_conv_efficiency", "fp16_conv_efficiency" };
  return conv ? convs[precision] : dense[precision];
}

/* Whether some row's step is faster than the catalog's prediction at
 * efficiency 1 and no overhead: no device beats its own peak, so that row
 * is mismeasured (an error naming its line of CSV). */
static gboolean
check_peaks (GPtrArray *rows, const char *csv, GError **error)
{
  for (guint i = 0; i < rows->len; i++)
    {
      Row *r = g_ptr_array_index (rows, i);
      /* predict() sets the figures it prices with: the catalog's come back */
      double e = r->c->efficiency, ce = r->c->conv_efficiency, t0 = r->c->kernel_overhead;
      double peak = predict (r, 1, 1, 0);
      r->c->efficiency = e;
      r->c->conv_efficiency = ce;
      r->c->kernel_overhead = t0;
      if (r->seconds < peak * (1 - 1e-9))
        return csv_error (error, csv, r->line, "seconds: %g s is faster than this step takes "
                          "at the device's peak (%g s at efficiency 1): it implies an "
                          "efficiency above 1; check the row's device, precision, batch and "
                          "unit", r->seconds, peak);
    }
  return TRUE;
}

/* One device's fit: its rows, those rows by precision, which figures the
 * rows determine, and its kernel overhead. */
typedef struct {
  GPtrArray *dev;               /* its rows (not owned by the array) */
  GPtrArray *byprec[4];         /* its rows by precision, NULL for none */
  gboolean fit[4][2];           /* by precision: dense, convolution efficiency fitted */
  gboolean fit_t0;              /* kernel overhead fitted */
  double t0, t00;               /* kernel overhead (seconds): fitted, the catalog's */
} DeviceFit;

/* Starts the fit of the device of row FIRST (index I of ROWS) from the
 * catalog's figures, as `dtsim run` resolves them, and finds which figures
 * its rows determine.  Free f->dev after write_device. */
static void
device_fit_begin (DeviceFit *f, GPtrArray *rows, guint i)
{
  Row *first = g_ptr_array_index (rows, i);
  memset (f, 0, sizeof *f);
  f->dev = g_ptr_array_new ();
  for (guint j = i; j < rows->len; j++)
    {
      Row *r = g_ptr_array_index (rows, j);
      if (g_ascii_strcasecmp (r->device, first->device) == 0)
        g_ptr_array_add (f->dev, r);
    }
  double t0 = f->t0 = f->t00 = first->c->kernel_overhead;
  for (guint j = 0; j < f->dev->len; j++)
    {
      Row *r = g_ptr_array_index (f->dev, j);
      r->before_eff = r->eff = r->c->efficiency;
      r->before_conv = r->c->conv_efficiency;
      r->conv = r->before_conv > 0 ? r->before_conv : r->eff;
      r->before = predict (r, r->before_eff, r->before_conv, t0);
      if (!f->byprec[r->precision])
        f->byprec[r->precision] = g_ptr_array_new ();
      g_ptr_array_add (f->byprec[r->precision], r);
    }
  for (int p = 0; p < 4; p++)
    if (f->byprec[p])
      {
        Row *r = g_ptr_array_index (f->byprec[p], 0);
        f->fit[p][0] = determined (f->byprec[p], FIT_EFF, r->eff, r->eff * 1.2, t0);
        f->fit[p][1] = determined (f->byprec[p], FIT_CONV, r->conv, r->conv * 1.2, t0);
      }
  f->fit_t0 = two_batches (f->dev) && determined (f->dev, FIT_T0, t0, t0 + 2e-5, t0);
}

/* Fits the device's figures that its rows determine, in alternate searches
 * until a round improves the fit by nothing measurable (the figures are
 * correlated: a higher overhead trades for a higher efficiency, so this
 * takes tens of rounds); the overhead is then rounded as written. */
static void
device_fit_run (DeviceFit *f)
{
  double last = G_MAXDOUBLE;
  for (int round = 0; round < 400; round++)
    {
      for (int p = 0; p < 4; p++)
        for (int k = 0; k < 2 && f->byprec[p]; k++)
          if (f->fit[p][k])
            {
              double v = search (f->byprec[p], k ? FIT_CONV : FIT_EFF, f->t0);
              for (guint j = 0; j < f->byprec[p]->len; j++)
                {
                  Row *r = g_ptr_array_index (f->byprec[p], j);
                  *(k ? &r->conv : &r->eff) = v;
                }
            }
      if (f->fit_t0)
        f->t0 = search (f->dev, FIT_T0, f->t0);
      double now = objective (f->dev, FIT_T0, f->t0, f->t0);
      if (last - now <= 1e-14 * MAX (now, 1e-300) || now < 1e-20)
        break;
      last = now;
    }
  /* what is written is what is used: the figures rounded to 3 digits */
  f->t0 = f->fit_t0 ? round3 (f->t0) : f->t00;
}

/* Writes the fitted figures of device NAME into its group of KF with a
 * comment naming CSV, prices each row with them (after), and says in FITS
 * what was fitted and what kept.  Frees the rows by precision. */
static void
device_fit_write (DeviceFit *f, GKeyFile *kf, const char *name, const char *csv,
                  GString *fits)
{
  g_autofree char *group = device_group (kf, name);
  g_autofree char *comment = g_strdup_printf (" calibrated by dtsim calibrate on %u "
                                              "measured step%s of %s", f->dev->len,
                                              f->dev->len == 1 ? "" : "s", csv);
  for (int p = 0; p < 4; p++)
    {
      if (!f->byprec[p])
        continue;
      Row *r0 = g_ptr_array_index (f->byprec[p], 0);
      /* not fitted: the catalog's (a convolution efficiency of 0 follows
       * the dense one, as in `dtsim run`) */
      double eff = f->fit[p][0] ? round3 (r0->eff) : r0->before_eff;
      double conv = f->fit[p][1] ? round3 (r0->conv) : r0->before_conv;
      if (f->fit[p][0])
        set_figure (kf, group, key_of (p, FALSE), eff, comment, "");
      if (f->fit[p][1])
        set_figure (kf, group, key_of (p, TRUE), conv, comment, "");
      for (guint j = 0; j < f->byprec[p]->len; j++)
        {
          Row *r = g_ptr_array_index (f->byprec[p], j);
          r->after = predict (r, eff, conv, f->t0);
        }
      g_string_append_printf (fits, "%s %s: dense efficiency %.3g%s, convolution "
                              "efficiency %.3g%s\n", name, prec_names[p], eff,
                              f->fit[p][0] ? "" : " (not determined by these rows: the "
                              "catalog's)", conv > 0 ? conv : eff,
                              f->fit[p][1] ? "" : " (not determined by these rows: the "
                              "catalog's)");
      g_ptr_array_unref (f->byprec[p]);
    }
  if (f->fit_t0)
    set_figure (kf, group, "kernel_overhead", f->t0 * 1e6, comment, "us");
  g_string_append_printf (fits, "%s: kernel overhead %.3g us per layer pass%s\n",
                          name, f->t0 * 1e6,
                          f->fit_t0 ? "" : " (not determined by these rows: the catalog's; "
                          "rows of one workload at two batch sizes determine it)");
}

/* The table of every row's measured, predicted before and after seconds,
 * into REPORT; the sums of the absolute errors (percent) before and after. */
static void
error_table (GString *report, GPtrArray *rows, double *sum_before, double *sum_after)
{
  g_string_append_printf (report, "%-10s %-5s %-16s %6s %12s %12s %8s %12s %8s\n", "device",
                          "prec", "workload", "batch", "measured s", "before s", "error",
                          "after s", "error");
  *sum_before = *sum_after = 0;
  for (guint i = 0; i < rows->len; i++)
    {
      Row *r = g_ptr_array_index (rows, i);
      double eb = 100 * (r->before / r->seconds - 1), ea = 100 * (r->after / r->seconds - 1);
      *sum_before += fabs (eb);
      *sum_after += fabs (ea);
      g_autofree char *wl = g_path_get_basename (r->workload);
      g_string_append_printf (report, "%-10s %-5s %-16s %6" G_GINT64_FORMAT " %12.5g %12.5g "
                              "%+7.1f%% %12.5g %+7.1f%%\n", r->device,
                              prec_names[r->precision], wl, r->batch, r->seconds, r->before,
                              eb, r->after, ea);
    }
}

/* Writes KF to OUT: beside its target, checked as a catalog, then renamed
 * over it; nothing is left behind on failure. */
static gboolean
write_catalog (GKeyFile *kf, const char *out, GError **error)
{
  GError *local = NULL;
  gsize len = 0;
  g_autofree char *data = g_key_file_to_data (kf, &len, NULL);
  g_autofree char *tmp = g_strdup_printf ("%s.calibrate-XXXXXX", out);
  int fd = g_mkstemp (tmp);
  if (fd < 0)
    return csv_error (error, out, 0, "cannot write beside it: %s", g_strerror (errno));
  gboolean ok = write (fd, data, len) == (ssize_t) len;
  ok = close (fd) == 0 && ok;
  g_autoptr (SimCatalog) check = ok ? sim_catalog_load (tmp, &local) : NULL;
  if (!check || g_rename (tmp, out) != 0)
    {
      g_unlink (tmp);
      g_clear_error (&local);
      return csv_error (error, out, 0, "cannot write the calibrated catalog");
    }
  return TRUE;
}

gboolean
sim_calibrate (const char *csv, const char *base, const char *out, gboolean force,
               GString *report, GError **error)
{
  g_return_val_if_fail (csv && out && report, FALSE);
  g_autofree char *base_abs = base ? absolute (base) : NULL;
  GError *local = NULL;
  g_autoptr (SimCatalog) cat = sim_catalog_load (base_abs, &local);
  if (!cat)
    {
      g_propagate_error (error, local);
      return FALSE;
    }
  /* the output replaces only a catalog (or nothing) */
  if (g_file_test (out, G_FILE_TEST_EXISTS))
    {
      g_autoptr (SimCatalog) old = sim_catalog_load (out, &local);
      if (!old)
        {
          g_clear_error (&local);
          return csv_error (error, out, 0, "exists and is not a hardware catalog; calibrate "
                            "writes only a new file or over a catalog: choose another -o");
        }
    }
  g_autoptr (GPtrArray) rows = read_rows (csv, base_abs, cat, error);
  if (!rows || !check_peaks (rows, csv, error))
    return FALSE;

  g_autofree char *text = sim_catalog_text (base_abs, error);
  if (!text)
    return FALSE;
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  if (!g_key_file_load_from_data (kf, text, strlen (text), G_KEY_FILE_KEEP_COMMENTS, &local))
    {
      g_propagate_error (error, local);
      return FALSE;
    }

  /* every device, in order of first appearance: its precisions' efficiencies
   * and its kernel overhead, in alternate searches */
  g_autoptr (GPtrArray) done = g_ptr_array_new_with_free_func (g_free);
  GString *fits = g_string_new (NULL);
  for (guint i = 0; i < rows->len; i++)
    {
      Row *first = g_ptr_array_index (rows, i);
      if (g_ptr_array_find_with_equal_func (done, first->device, g_str_equal, NULL))
        continue;
      g_ptr_array_add (done, g_strdup (first->device));
      DeviceFit f;
      device_fit_begin (&f, rows, i);
      device_fit_run (&f);
      device_fit_write (&f, kf, first->device, csv, fits);
      g_ptr_array_unref (f.dev);
    }

  double sum_before, sum_after;
  error_table (report, rows, &sum_before, &sum_after);
  g_string_append_printf (report, "mean absolute error: %.1f%% before, %.1f%% after\n%s",
                          sum_before / rows->len, sum_after / rows->len, fits->str);
  g_string_free (fits, TRUE);
  /* a fit that predicts the rows worse than the base is no calibration */
  if (!(sum_after <= sum_before) && !force)
    return csv_error (error, csv, 0, "the fit predicts these steps worse than the base catalog"
                      " (mean absolute error %.1f%% before, %.1f%% after), so %s was not"
                      " written; check the measurements, or pass --force to write it anyway",
                      sum_before / rows->len, sum_after / rows->len, out);
  if (!write_catalog (kf, out, error))
    return FALSE;
  g_string_append_printf (report, "wrote %s: use it with [cluster] catalog = %s\n", out, out);
  return TRUE;
}
