/*
 * registry.c — the collective algorithms dtsim knows, one line each.
 *
 * Kept apart from the executor (collectives.c), which asks `auto` for its
 * plan, while `auto` walks this list: a file of its own keeps the two from
 * calling each other in a circle.
 */
#include "config.h"

#include "base/keys.h"
#include "comm/program.h"

/* One line per algorithm; each is defined in its own file, comm/NAME.c. */
extern const CommAlgorithm comm_auto;
extern const CommAlgorithm comm_nccl;
extern const CommAlgorithm comm_ring;
extern const CommAlgorithm comm_tree;
extern const CommAlgorithm comm_hd;
extern const CommAlgorithm comm_naive;
extern const CommAlgorithm comm_hier;
extern const CommAlgorithm comm_dbtree;
extern const CommAlgorithm comm_butterfly;
extern const CommAlgorithm comm_nvls;
extern const CommAlgorithm comm_nvls_tree;

static const CommAlgorithm *const coll_algorithms[] = {
  &comm_auto, &comm_nccl, &comm_ring, &comm_tree, &comm_hd,
  &comm_dbtree,
  &comm_butterfly,
  &comm_naive, &comm_hier,
  &comm_nvls, &comm_nvls_tree, NULL,
};

const void *const *
comm_entries (void)
{
  return (const void *const *) coll_algorithms;
}

const CommAlgorithm *
comm_lookup (const char *name)
{
  return base_registry_find ((const void *const *) coll_algorithms, name);
}

const CommAlgorithm *const *
comm_all (void)
{
  return coll_algorithms;
}

