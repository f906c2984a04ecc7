/*
 * keys.h — scenario keys that a variant declares, and the values it reads.
 *
 * Every family of variants (topologies, straggler models, collective
 * algorithms, policies, ...) is a registry whose entries declare the scenario
 * keys they read as rows of BaseKey: section, name, type, unit, default,
 * bounds and a one-line description.  config/scenario.c merges those rows into
 * its key table, so parsing, validation, `dtsim keys` and docs/scenarios.md
 * all come from the entry that reads the key.  The resolved values of a run
 * reach the variant as a BaseValues table keyed by "section.key".
 *
 * This header sits below every other folder: engine/, netmodel/, kernels/
 * and policies/ may include it; it includes nothing of theirs.
 */
#ifndef DTSIM_BASE_KEYS_H
#define DTSIM_BASE_KEYS_H

#include <glib.h>

/* The word by which a key leaves its value to dtsim ([policy] channels,
 * [failures] checkpoint_interval, ...); also the collective selector's
 * name, which is why it is spelt once, here. */
#define BASE_KEY_AUTO_NAME "auto"


G_BEGIN_DECLS

typedef enum {
  BASE_KEY_STRING,   /* text; def "" = optional, left empty */
  BASE_KEY_INT,      /* integer in [min, max] */
  BASE_KEY_QUANTITY, /* number with a unit of `unit`, in [min, max] */
  BASE_KEY_ENUM,     /* one of `choices`; the field holds the choice's value */
  BASE_KEY_NAME,     /* a registry entry's name; the field holds the name */
  BASE_KEY_INTLIST,  /* comma-separated integers in [min, max] (GArray of int) */
  BASE_KEY_TIMELIST  /* comma-separated times >= min (GArray of double) */
} BaseKeyType;

/* What a quantity measures; bare numbers are in the base unit. */
typedef enum {
  BASE_UNIT_NONE,      /* a plain number: no unit allowed */
  BASE_UNIT_TIME,      /* seconds */
  BASE_UNIT_SIZE,      /* bytes */
  BASE_UNIT_BANDWIDTH, /* bytes/s */
  BASE_UNIT_COMPUTE    /* FLOP/s */
} BaseUnit;

/* One value of a BASE_KEY_ENUM key.  An alias is accepted but not listed. */
typedef struct {
  const char *name;
  int value;
  gboolean alias;
} BaseChoice;

#define BASE_OPEN_MIN 1 /* `min` itself is refused */
#define BASE_OPEN_MAX 2 /* `max` itself is refused */
#define BASE_BIG 1e300  /* "no upper bound" */

typedef struct {
  const char *section;
  const char *key;
  BaseKeyType type;
  BaseUnit unit;               /* BASE_KEY_QUANTITY, BASE_KEY_TIMELIST */
  const char *def;             /* default as text; NULL = derived (see doc),
                                * or for BASE_KEY_NAME the name of the
                                * first of `entries` */
  double min, max;             /* inclusive bounds (INT, QUANTITY, lists) */
  int open;                    /* BASE_OPEN_MIN | BASE_OPEN_MAX */
  const BaseChoice *choices;   /* BASE_KEY_ENUM: ends with a NULL name */
  gsize offset;                /* config/scenario.c's own rows: the SimConfig
                                * field; registry rows leave it 0 and their
                                * value goes to the run's BaseValues */
  const char *doc;             /* one line for `dtsim keys` */
  /* BASE_KEY_NAME: the registry's entries, NULL-terminated, each beginning
   * with `const char *name, *description`: the names are the key's choices,
   * and `dtsim keys` lists every entry's description after the key's own
   * line. */
  const void *const *(*entries) (void);
} BaseKey;

/* The resolved values of the registry keys of one run, by "section.key".
 *
 * A table knows which names it may hold: those its key rows declare.  Every
 * getter, setter and base_values_has checks its name against them, and a
 * name that no row declares (a misspelt "policy.stalenes") aborts with
 * g_error naming it: it is a mistake in the code, never in a scenario, so it
 * must fail in the first test that reaches it rather than read as 0.  A NULL
 * table is the same kind of mistake and aborts too. */
typedef struct BaseValues BaseValues;

/* A new table holding no value, whose declared names are the "section.key"
 * of those rows of `rows` (const BaseKey *) whose value goes to a BaseValues
 * (offset 0; the rows of config/scenario.c's own SimConfig fields are left
 * out).  `rows` is only read: the caller keeps it. */
BaseValues *base_values_new (const GPtrArray *rows);
void base_values_free (BaseValues *v);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BaseValues, base_values_free)

/* TRUE when one of v's key rows declares `name` (whether or not it holds a
 * value). */
gboolean base_values_declares (const BaseValues *v, const char *name);

/* Setters replace any earlier value of `name`, which must be declared;
 * lists are referenced. */
void base_values_set_int (BaseValues *v, const char *name, gint64 x);
void base_values_set_double (BaseValues *v, const char *name, double x);
void base_values_set_string (BaseValues *v, const char *name, const char *s);
void base_values_set_list (BaseValues *v, const char *name, GArray *a);

/* Getters: the value of `name`, or 0, NULL or an empty list where v holds
 * no value of that declared name (the loader sets every declared key, so
 * only hand-built tables lack one).  An undeclared name or a NULL v aborts.
 * An ENUM key holds its choice's value (read with _int), a NAME or STRING
 * key its text. */
gint64 base_values_int (const BaseValues *v, const char *name);
double base_values_double (const BaseValues *v, const char *name);
const char *base_values_string (const BaseValues *v, const char *name);
const GArray *base_values_list (const BaseValues *v, const char *name);
/* TRUE when the declared `name` holds a value in v. */
gboolean base_values_has (const BaseValues *v, const char *name);

/* The entry of `entries` called `name`, or NULL: `entries` is a
 * NULL-terminated array of pointers to entries whose first member is their
 * `const char *name`. */
gconstpointer base_registry_find (const void *const *entries, const char *name);

/* Appends to `rows` (const BaseKey *) the rows of `shared`, then those of
 * every entry: the `const BaseKey *` member at `keys_offset` of each entry
 * (NULL or ending with a row whose section is NULL).  `shared` may be NULL. */
void base_registry_keys (GPtrArray *rows, const BaseKey *shared,
                         const void *const *entries, gsize keys_offset);

G_END_DECLS

#endif /* DTSIM_BASE_KEYS_H */
