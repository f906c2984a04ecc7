/*
 * fixed.c — the straggler model "fixed": the workers listed in `slow` are
 * always `factor` times slower, the others never.
 */
#include "config.h"

#include "config/stragglers.h"

typedef struct {
  double factor;   /* slowdown of the slow workers */
  gboolean *slow;  /* (workers) TRUE for a slow worker */
} Fixed;

static const BaseKey keys[] = {
  { .section = "stragglers", .key = "slow", .type = BASE_KEY_INTLIST, .def = "",
    .min = 0, .max = SIM_MAX_HOSTS - 1,
    .doc = "Comma-separated worker indices that are slow (fixed)." },
  { .section = NULL },
};

static gboolean
fixed_validate (const SimConfig *c, GError **error)
{
  const GArray *slow = base_values_list (c->values, "stragglers.slow");
  if (slow->len == 0)
    return sim_key_error (error, c->file, "stragglers", "slow",
                          "model = fixed needs the slow workers; list them, e.g. slow = 0,3");
  return sim_config_check_workers (c, slow, "stragglers", "slow", error);
}

static gpointer
fixed_new (const SimConfig *c)
{
  Fixed *f = g_new0 (Fixed, 1);
  const GArray *slow = base_values_list (c->values, "stragglers.slow");
  f->factor = base_values_double (c->values, "stragglers.factor");
  f->slow = g_new0 (gboolean, c->workers);
  for (guint i = 0; i < slow->len; i++)
    f->slow[g_array_index (slow, int, i)] = TRUE;
  return f;
}

static void
fixed_free (gpointer state)
{
  Fixed *f = state;
  g_free (f->slow);
  g_free (f);
}

static double
fixed_draw (gconstpointer state, EngRng *rng G_GNUC_UNUSED, int worker)
{
  const Fixed *f = state;
  return f->slow[worker] ? f->factor : 1.0;
}

const SimStragglerModel sim_straggler_fixed = {
  .name = "fixed",
  .description = "listed workers are always `factor` times slower",
  .keys = keys,
  .validate = fixed_validate,
  .new = fixed_new,
  .free = fixed_free,
  .draw = fixed_draw,
};
