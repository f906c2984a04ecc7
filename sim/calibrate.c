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
#include "sim/hardware.h"
#include "sim/input.h"
#include "sim/model.h"
#include "sim/scenario.h"

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
} Row;

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
  double peaks[] = { d->flops, d->tf32_flops, d->bf16_flops, d->fp16_flops };
  if (r->precision < 0 || !(peaks[r->precision] > 0))
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
  const char *o = n == 6 ? g_strstrip (f[5]) : "sgd";
  KernOptKind kind;
  if (!kern_opt_kind_parse (o, &kind))
    {
      csv_error (error, csv, line, "optimizer: expected sgd, momentum or adam, found '%s'", o);
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

/* Row r's step time at efficiencies (eff, conv). */
static double
predict (Row *r, double eff, double conv)
{
  r->c->efficiency = eff;
  r->c->conv_efficiency = conv;
  SimStepCost cost;
  sim_step_cost (r->c, r->m, &cost);
  double t = cost.step + sim_update_seconds (r->c, r->m->ops->n_params (r->m));
  sim_step_cost_clear (&cost);
  return t;
}

static double
objective (GPtrArray *g, double eff, double conv)
{
  double s = 0;
  for (guint i = 0; i < g->len; i++)
    {
      Row *r = g_ptr_array_index (g, i);
      double e = log (predict (r, eff, conv) / r->seconds);
      s += e * e;
    }
  return s;
}

/* Whether a fifth more of the efficiency `which` (0 dense, 1 conv) moves
 * some row's time by more than 1%. */
static gboolean
determined (GPtrArray *g, double eff, double conv, int which)
{
  for (guint i = 0; i < g->len; i++)
    {
      Row *r = g_ptr_array_index (g, i);
      double a = predict (r, eff, conv);
      double b = which == 0 ? predict (r, eff * 1.2, conv) : predict (r, eff, conv * 1.2);
      if (fabs (log (b / a)) > 0.01)
        return TRUE;
    }
  return FALSE;
}

/* Golden-section search of log x in [LOG_LO, 0] for the efficiency
 * `which`, the other held. */
static double
search (GPtrArray *g, double eff, double conv, int which)
{
  double a = LOG_LO, b = 0;
  for (int it = 0; it < 60; it++)
    {
      double x1 = b - GOLDEN * (b - a), x2 = a + GOLDEN * (b - a);
      double f1 = which == 0 ? objective (g, exp (x1), conv) : objective (g, eff, exp (x1));
      double f2 = which == 0 ? objective (g, exp (x2), conv) : objective (g, eff, exp (x2));
      if (f1 <= f2)
        b = x2;
      else
        a = x1;
    }
  return exp ((a + b) / 2);
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

gboolean
sim_calibrate (const char *csv, const char *base, const char *out, GString *report,
               GError **error)
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
  if (!rows)
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

  /* every device and precision, in order of first appearance */
  g_autoptr (GPtrArray) done = g_ptr_array_new_with_free_func (g_free);
  GString *fits = g_string_new (NULL);
  for (guint i = 0; i < rows->len; i++)
    {
      Row *first = g_ptr_array_index (rows, i);
      g_autofree char *id = g_strdup_printf ("%s/%d", first->device, first->precision);
      if (g_ptr_array_find_with_equal_func (done, id, g_str_equal, NULL))
        continue;
      g_ptr_array_add (done, g_strdup (id));
      g_autoptr (GPtrArray) g = g_ptr_array_new ();
      for (guint j = i; j < rows->len; j++)
        {
          Row *r = g_ptr_array_index (rows, j);
          if (g_ascii_strcasecmp (r->device, first->device) == 0
              && r->precision == first->precision)
            g_ptr_array_add (g, r);
        }
      /* the catalog's figures, as `dtsim run` resolves them */
      double eff0 = first->c->efficiency, conv0 = first->c->conv_efficiency;
      double conv_start = conv0 > 0 ? conv0 : eff0;
      for (guint j = 0; j < g->len; j++)
        {
          Row *r = g_ptr_array_index (g, j);
          r->before = predict (r, eff0, conv0);
        }
      gboolean fit_eff = determined (g, eff0, conv_start, 0);
      gboolean fit_conv = determined (g, eff0, conv_start, 1);
      double eff = eff0, conv = conv_start;
      for (int round = 0; round < 6; round++)
        {
          if (fit_eff)
            eff = search (g, eff, conv, 0);
          if (fit_conv)
            conv = search (g, eff, conv, 1);
        }
      /* what is written is what is used: the figures rounded to 3 digits */
      eff = round3 (eff);
      conv = round3 (conv);
      for (guint j = 0; j < g->len; j++)
        {
          Row *r = g_ptr_array_index (g, j);
          r->after = predict (r, eff, fit_conv ? conv : conv0);
        }
      g_autofree char *group = device_group (kf, first->device);
      g_autofree char *comment = g_strdup_printf (" calibrated by dtsim calibrate on %u "
                                                  "measured step%s of %s", g->len,
                                                  g->len == 1 ? "" : "s", csv);
      const char *pname = prec_names[first->precision];
      if (fit_eff)
        {
          char v[G_ASCII_DTOSTR_BUF_SIZE];
          g_ascii_formatd (v, sizeof v, "%.3g", eff);
          g_key_file_set_string (kf, group, key_of (first->precision, FALSE), v);
          g_key_file_set_comment (kf, group, key_of (first->precision, FALSE), comment, NULL);
        }
      if (fit_conv)
        {
          char v[G_ASCII_DTOSTR_BUF_SIZE];
          g_ascii_formatd (v, sizeof v, "%.3g", conv);
          g_key_file_set_string (kf, group, key_of (first->precision, TRUE), v);
          g_key_file_set_comment (kf, group, key_of (first->precision, TRUE), comment, NULL);
        }
      g_string_append_printf (fits, "%s %s: dense efficiency %.3g%s, convolution efficiency "
                              "%.3g%s\n", first->device, pname, fit_eff ? eff : eff0,
                              fit_eff ? "" : " (not determined by these rows: the catalog's)",
                              fit_conv ? conv : (conv0 > 0 ? conv0 : eff0),
                              fit_conv ? "" : " (not determined by these rows: the catalog's)");
    }

  g_string_append_printf (report, "%-10s %-5s %-16s %6s %12s %12s %8s %12s %8s\n", "device",
                          "prec", "workload", "batch", "measured s", "before s", "error",
                          "after s", "error");
  double sum_before = 0, sum_after = 0;
  for (guint i = 0; i < rows->len; i++)
    {
      Row *r = g_ptr_array_index (rows, i);
      double eb = 100 * (r->before / r->seconds - 1), ea = 100 * (r->after / r->seconds - 1);
      sum_before += fabs (eb);
      sum_after += fabs (ea);
      g_autofree char *wl = g_path_get_basename (r->workload);
      g_string_append_printf (report, "%-10s %-5s %-16s %6" G_GINT64_FORMAT " %12.5g %12.5g "
                              "%+7.1f%% %12.5g %+7.1f%%\n", r->device,
                              prec_names[r->precision], wl, r->batch, r->seconds, r->before,
                              eb, r->after, ea);
    }
  g_string_append_printf (report, "mean absolute error: %.1f%% before, %.1f%% after\n%s",
                          sum_before / rows->len, sum_after / rows->len, fits->str);
  g_string_free (fits, TRUE);

  /* written beside its target, checked, then renamed over it */
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
  g_string_append_printf (report, "wrote %s: use it with [cluster] catalog = %s\n", out, out);
  return TRUE;
}
