/*
 * mesh.h — a device mesh: the ranks of a run with coordinates on named axes,
 * the process groups along each axis, and the host each rank runs on.
 *
 * A schedule lays its workers out on the mesh (a data-parallel run: one
 * axis; a pipeline: replicas x stages; tensor and expert parallelism add
 * theirs) and asks it who its peers are: the ranks of its group along an
 * axis (whom it all-reduces with, whom it sends activations to), and where
 * they sit on the network.  Ranks are numbered with the axes in a fixed
 * order, the first varying slowest; by default tensor varies fastest, so a
 * tensor group is consecutive ranks, on consecutive hosts, inside one node
 * of a topology of nodes.
 */
#ifndef DTSIM_TRAIN_MESH_H
#define DTSIM_TRAIN_MESH_H

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  TRAIN_AXIS_DATA,       /* replicas of the model, each on its own data */
  TRAIN_AXIS_PIPELINE,   /* stages: the model cut by layers */
  TRAIN_AXIS_EXPERT,     /* experts of a mixture-of-experts layer */
  TRAIN_AXIS_CONTEXT,    /* the sequence cut among ranks */
  TRAIN_AXIS_TENSOR,     /* each layer's weights cut among ranks */
  TRAIN_N_AXES
} TrainAxis;

typedef struct TrainMesh TrainMesh;

/* A mesh of size[a] ranks along each axis a (1 where unused), ranks
 * numbered in the order of the TrainAxis values (data slowest, tensor
 * fastest), rank r on host first_host + r.  Every size must be at least 1;
 * the product is the number of ranks. */
TrainMesh *train_mesh_new (const int size[TRAIN_N_AXES], int first_host);
/* A mesh of one axis: n data-parallel ranks on hosts 0 .. n - 1. */
TrainMesh *train_mesh_new_data (int n);
void train_mesh_free (TrainMesh *m);

int train_mesh_ranks (const TrainMesh *m);
int train_mesh_size (const TrainMesh *m, TrainAxis a);
/* Rank r's coordinate along a, in [0, size(a)). */
int train_mesh_coord (const TrainMesh *m, int rank, TrainAxis a);
/* The rank whose coordinate along a is c, the others those of `rank`. */
int train_mesh_rank_at (const TrainMesh *m, int rank, TrainAxis a, int c);
/* The host rank r runs on. */
int train_mesh_host (const TrainMesh *m, int rank);

/* The ranks that differ from one rank only along an axis, in coordinate
 * order, and their hosts: the process group a collective of that axis
 * runs among. */
typedef struct {
  int n;
  const int *ranks;  /* (n) */
  const int *hosts;  /* (n) */
} TrainGroup;

/* rank's group along a (owned by the mesh). */
TrainGroup train_mesh_group (const TrainMesh *m, TrainAxis a, int rank);

G_END_DECLS

#endif /* DTSIM_TRAIN_MESH_H */
