/*
 * units.c — quantities with units, as written in scenario files.
 *
 * The grammar is: a floating-point number, optional blanks, then an optional
 * unit made of an optional prefix (n u m k K M G T P, or Ki Mi Gi Ti) and the
 * unit symbol of the expected kind.  Units of another kind are rejected with
 * an explanation, so `bandwidth = 5ms` is an error rather than a surprise.
 */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config/units.h"

/* Splits a prefix off `u`; returns the multiplier and advances *u, or 1. */
static double
take_prefix (const char **u)
{
  static const struct { const char *p; double m; } prefixes[] = {
    { "Ki", 1024.0 }, { "Mi", 1048576.0 }, { "Gi", 1073741824.0 },
    { "Ti", 1099511627776.0 },
    { "n", 1e-9 }, { "u", 1e-6 }, { "m", 1e-3 }, { "k", 1e3 }, { "K", 1e3 },
    { "M", 1e6 }, { "G", 1e9 }, { "T", 1e12 }, { "P", 1e15 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (prefixes); i++)
    {
      gsize n = strlen (prefixes[i].p);
      if (strncmp (*u, prefixes[i].p, n) == 0 && (*u)[n] != '\0')
        {
          *u += n;
          return prefixes[i].m;
        }
    }
  return 1.0;
}

const char *
sim_unit_base_name (SimUnitKind kind)
{
  switch (kind)
    {
    case SIM_UNIT_TIME: return "s";
    case SIM_UNIT_SIZE: return "bytes";
    case SIM_UNIT_BANDWIDTH: return "bytes/s";
    case SIM_UNIT_COMPUTE: return "FLOP/s";
    default: return "";
    }
}

/* Multiplier of unit symbol `u` (prefix already removed) for `kind`, or 0. */
static double
unit_factor (const char *u, SimUnitKind kind)
{
  switch (kind)
    {
    case SIM_UNIT_TIME:
      return strcmp (u, "s") == 0 ? 1.0 : 0.0;
    case SIM_UNIT_SIZE:
      if (strcmp (u, "B") == 0) return 1.0;
      if (strcmp (u, "b") == 0 || strcmp (u, "bit") == 0) return 0.125;
      return 0.0;
    case SIM_UNIT_BANDWIDTH:
      if (strcmp (u, "Bps") == 0 || strcmp (u, "B/s") == 0) return 1.0;
      if (strcmp (u, "bps") == 0 || strcmp (u, "b/s") == 0) return 0.125;
      return 0.0;
    case SIM_UNIT_COMPUTE:
      return (strcmp (u, "FLOPS") == 0 || strcmp (u, "FLOP/s") == 0
              || strcmp (u, "flops") == 0) ? 1.0 : 0.0;
    default:
      return 0.0;
    }
}

gboolean
sim_parse_quantity (const char *text, SimUnitKind kind, double *out,
                    const char **why)
{
  const char *expected[] = {
    [SIM_UNIT_NONE] = "a plain number",
    [SIM_UNIT_TIME] = "a time such as 5us, 2.5ms or 1s",
    [SIM_UNIT_SIZE] = "a size such as 512, 64KiB or 4MB",
    [SIM_UNIT_BANDWIDTH] = "a bandwidth such as 10Gbps or 1.25GBps",
    [SIM_UNIT_COMPUTE] = "a compute rate such as 19.5TFLOPS",
  };
  char *end = NULL;
  const char *p = text;

  while (g_ascii_isspace (*p))
    p++;
  double v = g_ascii_strtod (p, &end);
  if (end == p || !isfinite (v))
    {
      *why = expected[kind];
      return FALSE;
    }
  /* a subnormal number passes "> 0" and then divides to infinity */
  if (v != 0 && fabs (v) < DBL_MIN)
    {
      *why = "0 or a number of magnitude from 2.2e-308 to 1.8e308 in the base unit";
      return FALSE;
    }
  while (g_ascii_isspace (*end))
    end++;
  if (*end == '\0')
    {
      *out = v;
      return TRUE;
    }
  if (kind == SIM_UNIT_NONE)
    {
      *why = expected[kind];
      return FALSE;
    }
  g_autofree char *unit = g_strstrip (g_strdup (end));
  const char *u = unit;
  double f = unit_factor (u, kind);
  if (f == 0.0)
    {
      double m = take_prefix (&u);
      f = unit_factor (u, kind) * m;
    }
  if (f == 0.0)
    {
      *why = expected[kind];
      return FALSE;
    }
  double r = v * f;
  if (!isfinite (r) || (r != 0 && fabs (r) < DBL_MIN))
    {
      *why = "0 or a number of magnitude from 2.2e-308 to 1.8e308 in the base unit";
      return FALSE;
    }
  *out = r;
  return TRUE;
}

/* Writes `v` with five significant digits, in the C locale. */
static char *
format_number (double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  return g_strdup (g_ascii_formatd (buf, sizeof buf, "%.5g", v));
}

char *
sim_format_quantity (double value, SimUnitKind kind)
{
  static const char *const decimal[] = { "", "k", "M", "G", "T", "P" };
  static const char *const binary[] = { "", "Ki", "Mi", "Gi", "Ti" };
  const char *symbol = NULL;
  switch (kind)
    {
    case SIM_UNIT_TIME:
      {
        static const struct { double m; const char *u; } times[] = {
          { 1.0, "s" }, { 1e-3, "ms" }, { 1e-6, "us" }, { 1e-9, "ns" },
        };
        gsize i = 0;
        while (i + 1 < G_N_ELEMENTS (times) && fabs (value) < times[i].m)
          i++;
        if (value == 0.0)
          i = 0;
        g_autofree char *n = format_number (value / times[i].m);
        return g_strdup_printf ("%s %s", n, times[i].u);
      }
    case SIM_UNIT_SIZE:
      {
        /* a whole number of the largest binary unit that fits: binary */
        double unit = 1.0;
        gsize k = 0;
        while (k + 1 < G_N_ELEMENTS (binary) && fabs (value) >= unit * 1024.0)
          {
            unit *= 1024.0;
            k++;
          }
        if (k > 0 && fmod (value, unit) == 0.0)
          {
            g_autofree char *n = format_number (value / unit);
            return g_strdup_printf ("%s %sB", n, binary[k]);
          }
        symbol = "B";
        break;
      }
    case SIM_UNIT_BANDWIDTH: symbol = "B/s"; break;
    case SIM_UNIT_COMPUTE: symbol = "FLOP/s"; break;
    default:
      return format_number (value);
    }
  double unit = 1.0;
  gsize k = 0;
  while (k + 1 < G_N_ELEMENTS (decimal) && fabs (value) >= unit * 1000.0)
    {
      unit *= 1000.0;
      k++;
    }
  g_autofree char *n = format_number (value / unit);
  return g_strdup_printf ("%s %s%s", n, decimal[k], symbol);
}

void
sim_append_double (GString *s, double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  for (int digits = 15; digits <= 17; digits++)
    {
      char fmt[8];
      g_snprintf (fmt, sizeof fmt, "%%.%dg", digits);
      g_ascii_formatd (buf, sizeof buf, fmt, v);
      if (digits == 17 || g_ascii_strtod (buf, NULL) == v)
        break;
    }
  g_string_append (s, buf);
}

void
sim_append_json_string (GString *s, const char *v)
{
  g_string_append_c (s, '"');
  for (const char *c = v; *c; c++)
    {
      if (*c == '"' || *c == '\\')
        g_string_append_printf (s, "\\%c", *c);
      else if ((unsigned char) *c < 0x20)
        g_string_append_printf (s, "\\u%04x", (unsigned char) *c);
      else
        g_string_append_c (s, *c);
    }
  g_string_append_c (s, '"');
}

void
sim_time_shares (const double *part, int n, double *share)
{
  double big = 0;
  gboolean ok = TRUE;
  for (int i = 0; i < n; i++)
    {
      ok = ok && isfinite (part[i]) && part[i] >= 0;
      big = MAX (big, part[i]);
    }
  double sum = 0;
  for (int i = 0; ok && big > 0 && i < n; i++)
    sum += part[i] / big;  /* each in [0, 1]: the sum is at most n */
  for (int i = 0; i < n; i++)
    share[i] = ok && big > 0 ? part[i] / big / sum : NAN;
}
