/*
 * units.h — parsing of quantities with units in scenario files.
 *
 * Time `5us`, `2.5 ms`, `1s`; size `64KiB`, `4MB`; bandwidth `10Gbps` (bits/s)
 * or `1.25GBps` (bytes/s); compute `19.5TFLOPS`.  A bare number is taken in
 * the SI base unit of its kind (seconds, bytes, bytes/s, FLOP/s).  Decimal
 * prefixes are powers of 1000, binary prefixes (Ki, Mi, Gi, Ti) powers of 1024.
 */
#ifndef DTSIM_CONFIG_UNITS_H
#define DTSIM_CONFIG_UNITS_H

#include <glib.h>

#include "base/keys.h"

G_BEGIN_DECLS

/* The kinds of quantity are the units of base/keys.h, where the registries
 * declare their keys. */
typedef BaseUnit SimUnitKind;
#define SIM_UNIT_NONE BASE_UNIT_NONE           /* a plain number: no unit allowed */
#define SIM_UNIT_TIME BASE_UNIT_TIME           /* seconds */
#define SIM_UNIT_SIZE BASE_UNIT_SIZE           /* bytes */
#define SIM_UNIT_BANDWIDTH BASE_UNIT_BANDWIDTH /* bytes/s */
#define SIM_UNIT_COMPUTE BASE_UNIT_COMPUTE     /* FLOP/s */

/* Parses `text` as a quantity of `kind` into *out (SI base unit).  On
 * failure returns FALSE and sets *why to a static explanation. */
gboolean sim_parse_quantity (const char *text, SimUnitKind kind, double *out,
                             const char **why);

/* The unit a bare number is read in, e.g. "s" or "bytes/s". */
const char *sim_unit_base_name (SimUnitKind kind);

/* `value` (SI base unit of `kind`) for people: five significant digits and
 * the largest decimal prefix that keeps the number at least 1, e.g.
 * "19.5 TFLOP/s", "2.039 TB/s", "600 ns"; a size that is a whole number of
 * KiB, MiB, GiB or TiB is written with that binary prefix ("80 GiB").
 * Free with g_free. */
char *sim_format_quantity (double value, SimUnitKind kind);

/* Appends finite `v` to s in the fewest significant digits (15 to 17) that
 * read back as the same double, with a '.' whatever the locale: numbers
 * that data files carry exactly. */
void sim_append_double (GString *s, double v);

/* Appends `v` as a JSON string: quoted, " and \\ escaped, control
 * characters as \\u00XX (the caller makes the text valid UTF-8). */
void sim_append_json_string (GString *s, const char *v);

/* The shares of a run's worker time: share[i] = part[i] / (part[0] + ...
 * + part[n-1]) for n parts (seconds, each >= 0), in [0, 1], computed so
 * that no intermediate overflows (the parts are first divided by the
 * largest: parts near DBL_MAX still give finite shares summing to 1).
 * Every share is NAN when a part is not finite or all are 0. */
void sim_time_shares (const double *part, int n, double *share);

G_END_DECLS

#endif
