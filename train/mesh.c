/*
 * mesh.c — ranks on named axes, their groups and hosts.
 *
 * With the axes in TrainAxis order, rank r's coordinate along a is
 * (r / stride[a]) mod size[a], stride[a] being the product of the sizes
 * of the axes after a.  Each axis longer than one keeps its ranks arranged
 * group by group, so that a group is a slice of one array, found in O(1).
 */
#include "config.h"

#include "train/mesh.h"

struct TrainMesh {
  int size[TRAIN_N_AXES];
  int stride[TRAIN_N_AXES];
  int ranks;
  int *ident;                     /* (ranks) r at r: singleton groups */
  int *host;                      /* (ranks) host of rank r */
  int *members[TRAIN_N_AXES];     /* (ranks) group by group; NULL: size 1 */
  int *member_hosts[TRAIN_N_AXES];
};

/* The group number of the group along a holding rank r: its ranks with
 * coordinate a zeroed, the axes before a counted in units of size[a]
 * strides. */
static int
group_of (const TrainMesh *m, TrainAxis a, int r)
{
  int s = m->stride[a], n = m->size[a];
  return r / (n * s) * s + r % s;
}

TrainMesh *
train_mesh_new (const int size[TRAIN_N_AXES], int first_host)
{
  TrainMesh *m = g_new0 (TrainMesh, 1);
  m->ranks = 1;
  for (int a = TRAIN_N_AXES - 1; a >= 0; a--)
    {
      g_return_val_if_fail (size[a] >= 1, NULL);
      m->size[a] = size[a];
      m->stride[a] = m->ranks;
      m->ranks *= size[a];
    }
  m->ident = g_new (int, m->ranks);
  m->host = g_new (int, m->ranks);
  for (int r = 0; r < m->ranks; r++)
    {
      m->ident[r] = r;
      m->host[r] = first_host + r;
    }
  for (int a = 0; a < TRAIN_N_AXES; a++)
    {
      if (m->size[a] == 1)
        continue;
      m->members[a] = g_new (int, m->ranks);
      m->member_hosts[a] = g_new (int, m->ranks);
      for (int r = 0; r < m->ranks; r++)
        {
          int at = group_of (m, a, r) * m->size[a] + train_mesh_coord (m, r, a);
          m->members[a][at] = r;
          m->member_hosts[a][at] = m->host[r];
        }
    }
  return m;
}

TrainMesh *
train_mesh_new_data (int n)
{
  int size[TRAIN_N_AXES] = { [TRAIN_AXIS_DATA] = n, [TRAIN_AXIS_PIPELINE] = 1,
                             [TRAIN_AXIS_EXPERT] = 1, [TRAIN_AXIS_CONTEXT] = 1,
                             [TRAIN_AXIS_TENSOR] = 1 };
  return train_mesh_new (size, 0);
}

void
train_mesh_free (TrainMesh *m)
{
  if (!m)
    return;
  for (int a = 0; a < TRAIN_N_AXES; a++)
    {
      g_free (m->members[a]);
      g_free (m->member_hosts[a]);
    }
  g_free (m->ident);
  g_free (m->host);
  g_free (m);
}

int
train_mesh_ranks (const TrainMesh *m)
{
  return m->ranks;
}

int
train_mesh_size (const TrainMesh *m, TrainAxis a)
{
  return m->size[a];
}

int
train_mesh_coord (const TrainMesh *m, int rank, TrainAxis a)
{
  return rank / m->stride[a] % m->size[a];
}

int
train_mesh_rank_at (const TrainMesh *m, int rank, TrainAxis a, int c)
{
  g_return_val_if_fail (c >= 0 && c < m->size[a], rank);
  return rank + (c - train_mesh_coord (m, rank, a)) * m->stride[a];
}

int
train_mesh_host (const TrainMesh *m, int rank)
{
  return m->host[rank];
}

TrainGroup
train_mesh_group (const TrainMesh *m, TrainAxis a, int rank)
{
  if (!m->members[a])
    return (TrainGroup) { 1, &m->ident[rank], &m->host[rank] };
  int at = group_of (m, a, rank) * m->size[a];
  return (TrainGroup) { m->size[a], &m->members[a][at], &m->member_hosts[a][at] };
}
