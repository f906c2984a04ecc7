/*
 * spell.h — "did you mean": the closest of a list of names to a misspelt
 * one (base/spell.c).
 */
#ifndef DTSIM_BASE_SPELL_H
#define DTSIM_BASE_SPELL_H

#include <glib.h>

G_BEGIN_DECLS

/* Edit distance between a and b, ignoring ASCII case: insertions,
 * deletions, substitutions and swaps of two neighbours (Damerau's
 * optimal string alignment), each one edit. */
int base_spell_distance (const char *a, const char *b);

/* A suggestion being gathered: offer every candidate name, then ask for the
 * best. */
typedef struct {
  const char *word;     /* the misspelt name (borrowed) */
  const char *best;     /* the closest candidate so far (borrowed) */
  int distance;
} BaseSpell;

void base_spell_init (BaseSpell *s, const char *word);
void base_spell_offer (BaseSpell *s, const char *candidate);
/* The closest candidate when it is close enough to be a misspelling (at
 * most one edit in names of up to four characters, two up to eight, three
 * beyond) and not the word itself; NULL otherwise. */
const char *base_spell_best (const BaseSpell *s);

G_END_DECLS

#endif /* DTSIM_BASE_SPELL_H */
