/*
 * hooks.c — what the policies' hooks share: the form of their key errors,
 * the keys a hook resolves, the rule that a key of one policy keeps its
 * default under another, and the defaults of the `shares` and `work`
 * hooks.  Below the registry and every policy, so that both may use it.
 */
#include "config.h"

#include <stdarg.h>

#include "policies/policy.h"

G_DEFINE_QUARK (pol-error, pol_error)

gboolean
pol_key_error (GError **error, const char *section, const char *key, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, POL_ERROR, 0, "[%s] %s: %s", section, key, msg);
  return FALSE;
}

void
pol_check_resolve_int (PolCheck *chk, const char *name, gint64 v)
{
  base_values_set_int (chk->values, name, v);
  if (chk->resolved)
    chk->resolved (chk->ctx, name, v);
}

gboolean
pol_keys_at_default (const BaseValues *v, const BaseKey *keys, const char *owner,
                     GError **error)
{
  for (const BaseKey *k = keys; k->section; k++)
    {
      g_return_val_if_fail (k->type == BASE_KEY_INT || k->type == BASE_KEY_QUANTITY, FALSE);
      g_autofree char *name = g_strconcat (k->section, ".", k->key, NULL);
      double x = k->type == BASE_KEY_INT ? (double) base_values_int (v, name)
                                         : base_values_double (v, name);
      if (x != g_ascii_strtod (k->def, NULL))
        return pol_key_error (error, k->section, k->key,
                              "applies only to %s; remove it or set %s", owner, owner);
    }
  return TRUE;
}

void
pol_shares_free (PolShares *s)
{
  if (!s)
    return;
  for (int i = 0; i < s->n; i++)
    {
      g_free (s->share[i].chunk_first);
      g_free (s->share[i].chunk_last);
    }
  g_free (s->share);
  g_free (s->note);
  g_free (s->advice);
  g_free (s);
}

char *
pol_share_layers (const PolShare *sh)
{
  g_return_val_if_fail (sh != NULL, NULL);
  if (sh->chunks <= 1 || !sh->chunk_first || !sh->chunk_last)
    return g_strdup_printf ("%d-%d", sh->first, sh->last);
  GString *out = g_string_new (NULL);
  for (int c = 0; c < sh->chunks; c++)
    g_string_append_printf (out, "%s%d-%d", c ? ", " : "", sh->chunk_first[c], sh->chunk_last[c]);
  return g_string_free (out, FALSE);
}

void
pol_work_default (const PolModelInfo *mi, PolWork *out)
{
  double W = (double) mi->workers;
  *out = (PolWork) { .messages = 2 * W, .spans = 4 * W, .iteration_rows = W,
                     .bucket_rows = 0, .in_flight = 2 * W };
}
