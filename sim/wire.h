/*
 * wire.h — values as bytes between processes (sim/trace.c's chunks of rows,
 * sweep/mpi.c's messages), and a reader that checks every length.
 *
 * Integers are 8 bytes little-endian, reals their bits as such an integer,
 * texts their length (G_MAXUINT64: NULL) and bytes.  The reader never reads
 * past its end: once something is missing it is `bad` and returns zeros and
 * NULLs from then on.
 */
#ifndef DTSIM_SIM_WIRE_H
#define DTSIM_SIM_WIRE_H

#include <glib.h>

G_BEGIN_DECLS

void sim_wire_put_u64 (GByteArray *b, guint64 x);
void sim_wire_put_f64 (GByteArray *b, double d);
void sim_wire_put_str (GByteArray *b, const char *s);

typedef struct {
  const guint8 *p;
  gsize len, at;
  gboolean bad;
} SimWireReader;

guint64 sim_wire_get_u64 (SimWireReader *r);
double sim_wire_get_f64 (SimWireReader *r);
/* A text in place: its bytes (not NUL-terminated) and length, NULL with
 * *len 0 for NULL; a text holding a NUL byte is damage. */
const char *sim_wire_get_text (SimWireReader *r, gsize *len);
/* The same as a new string. */
char *sim_wire_get_str (SimWireReader *r);

G_END_DECLS

#endif
