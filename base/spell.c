/*
 * spell.c — "did you mean" (spell.h): the optimal string alignment
 * distance, case-insensitive, and the closest of the names offered.
 */
#include "config.h"

#include <string.h>

#include "base/spell.h"

int
base_spell_distance (const char *a, const char *b)
{
  gsize n = strlen (a), m = strlen (b);
  /* three rows of the table: i - 2, i - 1, i */
  g_autofree int *d = g_new (int, 3 * (m + 1));
  int *r2 = d, *r1 = d + (m + 1), *r0 = d + 2 * (m + 1);
  for (gsize j = 0; j <= m; j++)
    r1[j] = (int) j;
  for (gsize i = 1; i <= n; i++)
    {
      r0[0] = (int) i;
      for (gsize j = 1; j <= m; j++)
        {
          gboolean same = g_ascii_tolower (a[i - 1]) == g_ascii_tolower (b[j - 1]);
          int best = MIN (r1[j] + 1, r0[j - 1] + 1);
          best = MIN (best, r1[j - 1] + (same ? 0 : 1));
          if (i > 1 && j > 1 && g_ascii_tolower (a[i - 1]) == g_ascii_tolower (b[j - 2])
              && g_ascii_tolower (a[i - 2]) == g_ascii_tolower (b[j - 1]))
            best = MIN (best, r2[j - 2] + 1);
          r0[j] = best;
        }
      int *t = r2;
      r2 = r1;
      r1 = r0;
      r0 = t;
    }
  return r1[m];
}

void
base_spell_init (BaseSpell *s, const char *word)
{
  s->word = word;
  s->best = NULL;
  s->distance = G_MAXINT;
}

void
base_spell_offer (BaseSpell *s, const char *candidate)
{
  if (!candidate)
    return;
  int d = base_spell_distance (s->word, candidate);
  if (d < s->distance)
    {
      s->distance = d;
      s->best = candidate;
    }
}

const char *
base_spell_best (const BaseSpell *s)
{
  gsize len = strlen (s->word);
  int allowed = len <= 4 ? 1 : len <= 8 ? 2 : 3;
  return s->best && s->distance > 0 && s->distance <= allowed ? s->best : NULL;
}
