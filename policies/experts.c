/*
 * experts.c — expert parallelism: the rules of the mesh's expert axis for
 * a mixture-of-experts model (docs/policies.md, "Experts").
 *
 * A model's expert layers (KernLayer.experts = E, a transformer's MLP with
 * [model] experts > 1) hold E expert MLPs, of which each token runs top_k.
 * [policy] experts = EP spreads them over EP ranks of the data axis, E / EP
 * experts on each: the ranks of an expert group (EP consecutive
 * data-parallel ranks) send each token to the ranks of its experts before
 * the experts' layers (the dispatch all-to-all) and take the results back
 * after them (the combine all-to-all); backward runs the same two in
 * reverse.  The router's choices are a share p_i of the token-expert
 * assignments per expert i: 1/E (routing = uniform) or proportional to
 * 1/(i+1)^s (routing = zipf, Zipf's law with exponent s: expert 0 the
 * hottest); an expert takes at most capacity_factor x its even share
 * (Lepikhin et al. 2021; Fedus et al. 2022), the rest of its tokens are
 * dropped.  The rank holding the hot expert computes more tokens than the
 * others, who wait for it at the combine all-to-all; the collective
 * executor's all-to-all moves equal blocks, so every block is priced at
 * the largest one's size.  An expert's parameters are replicated on the
 * D / EP ranks holding it, whose gradients are all-reduced among them; the
 * dense parameters over all D.
 *
 * The chain of compute and collectives that runs this lives in tensor.c
 * (its step also runs the tensor cut); what is here are the keys, their
 * rules, the routing figures and the sizes.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/compress.h"
#include "policies/policy.h"

enum { ROUTING_UNIFORM, ROUTING_ZIPF };

static const BaseChoice routing_choices[] = {
  { "uniform", ROUTING_UNIFORM, FALSE }, { "zipf", ROUTING_ZIPF, FALSE }, { NULL, 0, FALSE },
};

/* The most ranks of an expert group ([policy] experts' bound): the most
 * experts a layer may have ([model] experts). */
#define POL_MAX_EXPERTS 4096

static const BaseKey expert_keys[] = {
  { "policy", "experts", BASE_KEY_INT, 0, "1", 1, POL_MAX_EXPERTS, 0, NULL, 0,
    "Expert-parallel size EP (kind = allreduce, a model with [model] experts > 1; docs/policies.md, \"Experts\"): each mixture-of-experts layer's experts spread over EP data-parallel ranks, E / EP on each, tokens sent to their experts and back by all-to-alls; EP divides [model] experts and the data-parallel ranks.", NULL },
  { "policy", "capacity_factor", BASE_KEY_QUANTITY, BASE_UNIT_NONE, "1.25", 0, 1000, 0, NULL, 0,
    "experts > 1: an expert takes at most this times its even share of the tokens (c x tokens x top_k / E), the rest are dropped; more than 0.", NULL },
  { "policy", "routing", BASE_KEY_ENUM, 0, "uniform", 0, 0, 0, routing_choices, 0,
    "experts > 1: the router's choices: uniform (every expert an even share of the tokens) or zipf (expert i a share proportional to 1 / (i + 1)^zipf: expert 0 the hottest).", NULL },
  { "policy", "zipf", BASE_KEY_QUANTITY, BASE_UNIT_NONE, "1", 0, 100, 0, NULL, 0,
    "routing = zipf: the exponent s of the experts' shares 1 / (i + 1)^s; 0 = uniform.", NULL },
  { .section = NULL },
};

void
pol_experts_keys (GPtrArray *rows)
{
  for (int i = 0; expert_keys[i].section; i++)
    g_ptr_array_add (rows, (gpointer) &expert_keys[i]);
}

/* The experts of the model's expert layers, 0 when it has none. */
static int
model_experts (const KernLayer *layers, int n_layers, int *top_k)
{
  for (int l = 0; l < n_layers; l++)
    if (layers[l].experts > 1)
      {
        if (top_k)
          *top_k = layers[l].top_k;
        return layers[l].experts;
      }
  return 0;
}

double
pol_experts_share (const BaseValues *v, int E, int i)
{
  g_return_val_if_fail (E >= 1 && 0 <= i && i < E, 0);
  double s = base_values_int (v, "policy.routing") == ROUTING_ZIPF
             ? base_values_double (v, "policy.zipf") : 0;
  if (s == 0)
    return 1.0 / E;
  double H = 0;
  for (int j = 0; j < E; j++)
    H += pow (j + 1.0, -s);
  return pow (i + 1.0, -s) / H;
}

void
pol_experts_of (const BaseValues *v, const KernLayer *layers, int n_layers, PolExperts *ex)
{
  memset (ex, 0, sizeof *ex);
  ex->ep = (int) MAX (base_values_int (v, "policy.experts"), 1);
  ex->capacity = base_values_double (v, "policy.capacity_factor");
  ex->load = 1;
  ex->experts = model_experts (layers, n_layers, &ex->top_k);
  if (ex->experts <= 1 || ex->ep <= 1 || ex->ep > ex->experts || ex->experts % ex->ep != 0)
    return;
  int E = ex->experts, per = E / ex->ep;
  double cap = ex->capacity / E;     /* an expert's most, a share of the assignments */
  ex->load = 0;
  for (int r = 0; r < ex->ep; r++)
    {
      double taken = 0;
      for (int i = r * per; i < (r + 1) * per; i++)
        {
          double p = pol_experts_share (v, E, i);
          taken += MIN (p, cap);
          ex->dropped += MAX (p - cap, 0.0);
          if (i == 0)
            ex->hot = MIN (p, cap);
        }
      /* the rank's tokens over an even share, 1 / EP of them */
      ex->load = MAX (ex->load, taken * ex->ep);
    }
}

double
pol_experts_alltoall_floats (const KernLayer *layers, int l, const PolExperts *ex)
{
  if (layers[l].experts <= 1 || ex->ep <= 1)
    return 0;
  /* tokens x top_k rows of the experts' input width (the first expert
   * layer's weight rows: the model's width), every block at the busiest
   * rank's */
  while (l > 0 && layers[l - 1].experts > 1)
    l--;
  const KernLayer *ly = &layers[l];
  return ly->tokens * ly->top_k * ly->weight[0].rows * ex->load;
}

const CommAlgorithm *
pol_experts_alltoall_algorithm (const CommAlgorithm *alg)
{
  if (alg && !alg->choose && comm_does (alg, COMM_ALLTOALL))
    return alg;
  const void *const *entries = comm_entries ();
  for (int i = 0; entries[i]; i++)
    {
      const CommAlgorithm *a = entries[i];
      if (!a->choose && comm_does (a, COMM_ALLTOALL))
        return a;
    }
  g_assert_not_reached (); /* the registry holds one that does every kind */
  return NULL;
}

gboolean
pol_experts_first (const KernLayer *layers, int l)
{
  return layers[l].experts > 1 && (l == 0 || layers[l - 1].experts <= 1);
}

gboolean
pol_experts_last (const KernLayer *layers, int n_layers, int l)
{
  return layers[l].experts > 1 && (l + 1 == n_layers || layers[l + 1].experts <= 1);
}

gsize
pol_experts_params_in (const KernLayer *layers, int n_layers, gsize n_params, gsize lo,
                       gsize hi)
{
  gsize n = 0;
  for (int l = 0; l < n_layers; l++)
    {
      if (layers[l].experts <= 1)
        continue;
      gsize a = layers[l].param_offset;
      gsize b = l + 1 < n_layers ? layers[l + 1].param_offset : n_params;
      a = MAX (a, lo);
      b = MIN (b, hi);
      if (b > a)
        n += b - a;
    }
  return n;
}

gsize
pol_experts_rank_params (const KernLayer *layers, int n_layers, gsize n_params, int ep)
{
  gsize expert = pol_experts_params_in (layers, n_layers, n_params, 0, n_params);
  return n_params - expert + expert / (gsize) MAX (ep, 1);
}

gboolean
pol_experts_validate (const PolPolicyOps *ops, PolCheck *chk, GError **error)
{
  const BaseValues *v = chk->values;
  gint64 EP = base_values_int (v, "policy.experts");
  if (EP > 1 && !ops->experts)
    return pol_key_error (error, "policy", "experts",
                          "applies only to kind = allreduce (expert parallelism over its "
                          "data-parallel ranks); remove it or set kind = allreduce");
  if (base_values_double (v, "policy.capacity_factor") <= 0)
    return pol_key_error (error, "policy", "capacity_factor",
                          "%g lets no token through; use a factor above 0 (1.25 is usual)",
                          base_values_double (v, "policy.capacity_factor"));
  if (EP <= 1)
    {
      /* the routing is priced only where experts sit on different ranks */
      static const BaseKey *const applies[] = { &expert_keys[1], &expert_keys[2],
                                                &expert_keys[3] };
      for (guint i = 0; i < G_N_ELEMENTS (applies); i++)
        {
          g_autofree char *name = g_strconcat ("policy.", applies[i]->key, NULL);
          gboolean at_default = applies[i]->type == BASE_KEY_ENUM
                                ? base_values_int (v, name) == ROUTING_UNIFORM
                                : base_values_double (v, name) == g_ascii_strtod (applies[i]->def,
                                                                                  NULL);
          if (!at_default)
            return pol_key_error (error, "policy", applies[i]->key,
                                  "applies only with experts > 1 (expert parallelism); remove "
                                  "it or set [policy] experts");
        }
      return TRUE;
    }
  if (base_values_int (v, "policy.routing") == ROUTING_UNIFORM
      && base_values_double (v, "policy.zipf") != g_ascii_strtod (expert_keys[3].def, NULL))
    return pol_key_error (error, "policy", "zipf",
                          "applies only with routing = zipf; remove it or set routing = zipf");
  gint64 T = MAX (base_values_int (v, "policy.tensor"), 1);
  if (T > 1)
    return pol_key_error (error, "policy", "experts",
                          "%" G_GINT64_FORMAT " is not modelled with tensor > 1; use tensor = 1 "
                          "or experts = 1", EP);
  if (base_values_int (v, "policy.zero") == 3)
    return pol_key_error (error, "policy", "experts",
                          "%" G_GINT64_FORMAT " is not modelled with zero = 3; use zero <= 2 or "
                          "experts = 1", EP);
  if (pol_compress_of (v))
    return pol_key_error (error, "policy", "experts",
                          "%" G_GINT64_FORMAT " is not modelled with compression; set "
                          "compression = none or experts = 1", EP);
  gint64 D = chk->workers / T;
  if (D % EP != 0)
    return pol_key_error (error, "policy", "experts",
                          "%" G_GINT64_FORMAT " does not divide the %" G_GINT64_FORMAT
                          " data-parallel ranks (each expert group is EP of them); choose a "
                          "divisor of %" G_GINT64_FORMAT, EP, D, D);
  return TRUE;
}

gboolean
pol_experts_check_model (const PolModelInfo *mi, GError **error)
{
  gint64 EP = base_values_int (mi->values, "policy.experts");
  if (EP <= 1)
    return TRUE;
  int E = model_experts (mi->model->layers, mi->model->n_layers, NULL);
  if (E <= 1)
    return pol_key_error (error, "policy", "experts",
                          "%" G_GINT64_FORMAT ": the model has no mixture-of-experts layers; "
                          "set [model] experts > 1 (kind = transformer) or experts = 1", EP);
  if (E % EP != 0)
    return pol_key_error (error, "policy", "experts",
                          "%" G_GINT64_FORMAT " does not divide the %d experts of each layer "
                          "([model] experts); choose a divisor of %d", EP, E, E);
  return TRUE;
}
