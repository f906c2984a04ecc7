/*
 * wire.c — values as bytes between processes (sim/wire.h).
 */
#include "config.h"

#include <string.h>

#include "sim/wire.h"

void
sim_wire_put_u64 (GByteArray *b, guint64 x)
{
  guint64 le = GUINT64_TO_LE (x);
  g_byte_array_append (b, (const guint8 *) &le, sizeof le);
}

void
sim_wire_put_f64 (GByteArray *b, double d)
{
  guint64 x;
  memcpy (&x, &d, sizeof x);
  sim_wire_put_u64 (b, x);
}

void
sim_wire_put_str (GByteArray *b, const char *s)
{
  gsize n = s ? strlen (s) : 0;
  sim_wire_put_u64 (b, s ? n : G_MAXUINT64);
  if (s)
    g_byte_array_append (b, (const guint8 *) s, (guint) n);
}

guint64
sim_wire_get_u64 (SimWireReader *r)
{
  guint64 x = 0;
  if (r->bad || r->len - r->at < sizeof x)
    {
      r->bad = TRUE;
      return 0;
    }
  memcpy (&x, r->p + r->at, sizeof x);
  r->at += sizeof x;
  return GUINT64_FROM_LE (x);
}

double
sim_wire_get_f64 (SimWireReader *r)
{
  guint64 x = sim_wire_get_u64 (r);
  double d;
  memcpy (&d, &x, sizeof d);
  return d;
}

const char *
sim_wire_get_text (SimWireReader *r, gsize *len)
{
  *len = 0;
  guint64 n = sim_wire_get_u64 (r);
  if (r->bad || n == G_MAXUINT64)
    return NULL;
  if (r->len - r->at < n || memchr (r->p + r->at, '\0', n))
    {
      r->bad = TRUE;
      return NULL;
    }
  const char *s = (const char *) r->p + r->at;
  r->at += n;
  *len = n;
  return s;
}

char *
sim_wire_get_str (SimWireReader *r)
{
  gsize n;
  const char *s = sim_wire_get_text (r, &n);
  return s ? g_strndup (s, n) : NULL;
}
