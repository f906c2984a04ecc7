/*
 * collectives.h — collective operations over the simulated network, moving
 * real buffers.
 *
 * A collective runs among p ranks, each on a host of the network, as events:
 * every transfer an algorithm makes goes through net_send() (so the network
 * charges it, with contention), and its payload is a snapshot of the real
 * floats taken when the transfer starts; the receiver combines them into its
 * buffer when the last byte arrives, in the order the algorithm defines.  An
 * optional reduction cost (seconds per byte reduced) delays each reduction.
 *
 * Algorithms are registered by name (CommAlgorithm), each in its own
 * file (comm/NAME.c) and run by one executor (comm/collectives.c).
 * docs/collectives.md gives each one's steps and cost formula with its
 * source.
 *
 * comm/ is a layer of its own: it includes engine/ and netmodel/ only (and
 * base/), knows nothing of training, and any schedule may run its
 * collectives on any group of hosts.
 */
#ifndef DTSIM_COMM_COLLECTIVES_H
#define DTSIM_COMM_COLLECTIVES_H

#include <glib.h>

#include "engine/engine.h"
#include "netmodel/netmodel.h"

G_BEGIN_DECLS

/* Errors of the collectives: an algorithm asked for a kind it does not do. */
#define COMM_ERROR comm_error_quark ()
GQuark comm_error_quark (void);

typedef enum {
  COMM_ERROR_UNSUPPORTED /* the algorithm does not do this kind */
} CommError;

typedef enum {
  COMM_ALLREDUCE,      /* every rank ends with the element-wise sum */
  COMM_REDUCE_SCATTER, /* rank r ends with the sum of its block r */
  COMM_ALLGATHER,      /* rank r contributes block r; all end with all */
  COMM_BROADCAST,      /* every rank ends with root's buffer */
  COMM_REDUCE,         /* root ends with the element-wise sum; the other
                              buffers are scratch (partial sums) */
  COMM_SCATTER,        /* rank r ends with root's block r */
  COMM_GATHER,         /* root ends with rank r's block r, for every r */
  COMM_ALLTOALL        /* a transpose of equal blocks of c = n / p
                              floats: rank x's block y becomes what rank y
                              held in its block x; the last n mod p floats
                              stay as they were */
} CommKind;

#define COMM_N_KINDS (COMM_ALLTOALL + 1)

/* "all-reduce", "reduce-scatter", ... as [policy] operation names them. */
const char *comm_kind_name (CommKind kind);

/* NCCL's kinds of hardware a collective step crosses (its cost model's
 * NCCL_HW_NET, NCCL_HW_NVLINK, NCCL_HW_PCI): which of a protocol's step
 * latencies applies (comm/protocol.c). */
typedef enum {
  COMM_HW_NET,     /* a NIC: InfiniBand or Ethernet (the default) */
  COMM_HW_NVLINK,
  COMM_HW_PCI,
  COMM_N_HW
} CommHw;

/* The row of NCCL's latency tables an algorithm is charged by: its ring's
 * or its tree's (CommAlgorithm.family). */
typedef enum {
  COMM_FAMILY_RING,
  COMM_FAMILY_TREE,
  COMM_N_FAMILIES
} CommFamily;

/* The GPU architecture NCCL reads its bandwidth ceilings by (its
 * compCapIndex; comm/protocol.c): OTHER, a device that is not an NVIDIA
 * GPU dtsim knows (a CPU, a device given by its figures alone), has none. */
typedef enum {
  COMM_ARCH_OTHER,
  COMM_ARCH_VOLTA,           /* and older (P100): NCCL reads them so */
  COMM_ARCH_AMPERE,
  COMM_ARCH_HOPPER,
  COMM_N_ARCH
} CommArch;

/* A wire protocol (comm/protocol.c; docs/collectives.md, "Protocols"):
 * bytes on the wire per byte of data, and NCCL's latencies, which scale
 * the Simple ring figures a scenario gives (CommArgs' overheads). */
typedef struct {
  const char *name;          /* as in [policy] protocol */
  const char *description;
  const char *source;
  gboolean selector;         /* the selector auto: not a protocol but the
                                choice of one */
  double wire;               /* bytes sent per byte of data, >= 1 */
  double base_lat[COMM_N_FAMILIES];            /* s per collective */
  double hw_lat[COMM_N_FAMILIES][COMM_N_HW];   /* s per step */
  double channel_bytes;      /* a channel is dropped while the collective
                                has fewer bytes than channels x this */
  gboolean channel_bytes_per_rank; /* ring: channel_bytes times the ranks */
  double nic_lat;            /* times CommArgs.nic_latency that a message
                                between host groups adds to its latency */
} CommProtocol;

/* The protocol called `name` (or the selector auto), or NULL. */
const CommProtocol *comm_protocol_lookup (const char *name);
/* The same list, untyped, for [policy] protocol (BaseKey.entries). */
const void *const *comm_protocol_entries (void);
/* The protocols auto tries, NULL-terminated, Simple first (it wins ties). */
const CommProtocol *const *comm_protocol_candidates (void);
/* What `proto` multiplies a step overhead on hardware `hw` by, for an
 * algorithm of `family`: its hwLat over Simple's ring figure on that
 * hardware (1 for NULL, the figures as given). */
double comm_protocol_step_scale (const CommProtocol *proto, CommFamily family,
                                 CommHw hw);
/* The same for the launch overhead: its baseLat over Simple's ring one. */
double comm_protocol_launch_scale (const CommProtocol *proto,
                                   CommFamily family);
/* NCCL's channels for a collective of `bytes` over p ranks under `proto`
 * (NULL: Simple's rule): floor(bytes / channel_bytes) (times p on a ring
 * for LL), between 1 and `most` (>= 1). */
int comm_protocol_channels (const CommProtocol *proto, CommFamily family,
                            int p, double bytes, int most);
/* What CommArgs.net_overhead is multiplied by under `proto`: 3 for Simple
 * (and NULL, the figures as given, which are Simple's), 1 for LL and
 * LL128, as NCCL's cost model charges its network overhead. */
double comm_protocol_net_overhead_scale (const CommProtocol *proto);
/* What CommArgs.nic_latency is multiplied by under `proto` for each
 * message between host groups: 2 for Simple (and NULL, the figures as
 * given, which are Simple's) and 1 for LL128, as NCCL's cost model
 * charges a NIC's declared latency (plus, under Simple, the flush of the
 * received data); 0 for LL, which nccl-tests' small sizes show does not
 * pay it (docs/collectives.md, "Overheads"). */
double comm_protocol_nic_latency_scale (const CommProtocol *proto);
/* What a step overhead on hardware `hw` is multiplied by for NVLS (`tree`
 * FALSE) or NVLSTree: NCCL's latency of the one over Simple's ring step
 * latency on that hardware (25 us against 3.4 on NVLink; 18 and 20.9 against
 * 14 on a network); 1 where NCCL has no figure (PCIe). */
double comm_protocol_nvls_step_scale (gboolean tree, CommHw hw);
/* The same for the launch overhead: 0, NCCL's base latency for both (its
 * step figure above is their whole latency). */
double comm_protocol_nvls_launch_scale (void);
/* NCCL's channels for NVLS on Hopper (NVLS_NCHANNELS_SM90) and its largest
 * NVLS chunk, bytes (NCCL_NVLS_CHUNKSIZE's default). */
#define COMM_NVLS_CHANNELS 16
#define COMM_NVLS_CHUNK_MAX (128.0 * 1024)
/* What each NVLS chunk of an all-reduce in one node costs, s, beyond
 * what the catalog's switch rate (measured with NCCL's largest chunk)
 * already holds: fitted on one point, nccl-tests' 32 MiB all-reduce
 * among the 8 H100 of one server (NCCL 2.29.2: 182.9 us, 32 KiB chunks),
 * docs/collectives.md, "nvls and nvls-tree". */
#define COMM_NVLS_CHUNK_COST 5.9e-6
/* The chunk, bytes, in which NCCL pipelines an NVLS collective of `bytes`
 * among `heads` GPUs of one node (src/enqueue.cc, calcCollChunking, NCCL
 * 2.18 to 2.29): each of its COMM_NVLS_CHANNELS channels takes an equal
 * share s of the bytes and its chunk c, from COMM_NVLS_CHUNK_MAX, drops to
 * 64 KiB while s < 64 heads c, then to 32 KiB while s < 8 heads c, then to
 * 16 KiB while s < 2 heads c.  `heads` >= 1. */
double comm_protocol_nvls_chunk (int heads, double bytes);
/* The loop iterations of each NVLS channel for `bytes` among `heads` GPUs
 * in chunks of `chunk` bytes: ceil(bytes / (COMM_NVLS_CHANNELS heads
 * chunk)), at least 1 (every channel runs once). */
double comm_protocol_nvls_iterations (int heads, double bytes, double chunk);
/* The most data bytes per second one message of a collective may move
 * under `proto` (NULL: Simple) for an algorithm of `family`, on GPUs of
 * `arch` in `nodes` host groups (an AMD host: amd_host) and `channels`
 * channels: NCCL's bandwidth ceiling for that (algorithm, protocol)
 * (tuning.cc: llMaxBws over the channels for LL, the per-channel
 * perChMaxRingLL128Bws, perChMaxTreeBws, perChMaxTreeLL128Bws), INFINITY
 * where NCCL has none (the ring under Simple, COMM_ARCH_OTHER).  A ring or
 * a double tree whose every message is held to it has at most channels x
 * it of bus bandwidth (docs/collectives.md, "Bandwidth ceilings"). */
double comm_protocol_rate_cap (const CommProtocol *proto, CommFamily family,
                               CommArch arch, int nodes, gboolean amd_host,
                               int channels);
/* The architecture of a catalog device by its name: p100 and v100 Volta,
 * a100 and a800 Ampere, h100, h200, h800 and gh200 Hopper (a prefix, any
 * case: a100-40gb is Ampere); anything else COMM_ARCH_OTHER. */
CommArch comm_arch_of_device (const char *name);
/* The hardware of a catalog link kind: "nvlink", "pcie", else the network. */
CommHw comm_hw_of_kind (const char *kind);

/* CommArgs.channels: as many as NCCL would use (docs/collectives.md,
 * "Channels"). */
#define COMM_CHANNELS_AUTO (-1)

/* Called once, when every rank has finished its part (simulated time now). */
typedef void (*CommDone) (EngSim *sim, gpointer ctx, gpointer data);

typedef struct {
  EngSim *sim;
  NetNetwork *net;
  int p;                     /* ranks, >= 1 */
  const int *hosts;          /* (p) host id of each rank */
  float *const *bufs;        /* (p) buffers of n floats, updated in place;
                                NULL = timing only, no data moved */
  gsize n;                   /* floats per buffer */
  double elem_bytes;         /* bytes per element on the wire (4 for float32) */
  double reduce_per_byte;    /* s per byte combined at a receiver (0 = free) */
  int root;                  /* broadcast root (and tree/naive driver) */
  int tag;                   /* tag given to every net_send */
  double launch_overhead;    /* s before the first step (a kernel launch) */
  double step_overhead;      /* s: a message between ranks of different host
                                groups takes at least this long before its
                                first byte moves (its latency is the larger
                                of this and its route's) */
  double intra_step_overhead; /* the same between ranks of one host group */
  double net_overhead;       /* s: NCCL's network overhead: with ranks in
                                several host groups, every step of the ring
                                (one_route), inside a group too, takes at
                                least this before its first byte moves
                                (three times this under Simple and with no
                                protocol: the figures as given are Simple's) */
  double nic_latency;        /* s: the latency the NIC between host groups
                                declares (NCCL's latencyInter): every
                                message between host groups adds it times
                                the protocol's figure to its latency
                                (comm_protocol_nic_latency_scale: twice
                                under Simple and with no protocol, once
                                under LL128, not under LL) */
  double cross_latency;      /* s every message between host groups adds
                                to its latency whatever the protocol: what
                                nic_latency comes to once the protocol is
                                chosen (comm_start sets it); callers set 0 */
  CommArch arch;             /* the GPUs' architecture: which of NCCL's
                                bandwidth ceilings hold its messages
                                (comm_protocol_rate_cap); OTHER: none */
  gboolean amd_host;         /* the hosts' CPUs are AMD's: NCCL's ceiling
                                on LL across nodes is theirs */
  double rate_cap;           /* bytes/s on the wire one message may move
                                at most, 0 = no ceiling: what arch comes to
                                once the protocol and channels are chosen
                                (comm_start sets it); callers set 0 */
  gboolean exclusive;        /* the caller promises that no other transfer
                                uses the network until `done`: the
                                collective may then run as flow classes
                                (docs/collectives.md, "Flow classes") */
  gboolean mirrored;         /* the caller promises that the ranks are
                                the copies of a folded network
                                (net_network_fold), rank r on rank 0's host
                                moved by r copies, and that everything else
                                on the network is the same in every copy,
                                moved: rank 0 alone is run, its transfers
                                on folded routes (docs/collectives.md,
                                "Mirrored replicas"); see comm_mirror_ok */
  const CommProtocol *protocol; /* NULL: every message charged with the
                                overheads as given (Simple's); a protocol:
                                scaled by it and its wire bytes; the selector auto: the
                                protocol of least estimated time */
  CommHw hw, intra_hw;       /* the hardware step_overhead and
                                intra_step_overhead are for (a protocol
                                scales each by its figure there) */
  int channels;              /* all-reduce only: COMM_CHANNELS_AUTO = as
                                NCCL picks (comm_plan); 0 = as given, one
                                collective over the ranks in their order;
                                C >= 1 = C concurrent collectives, each over
                                1/C of the buffer (comm_shard_bounds), their
                                ranks in topology order (by host group), the
                                order inside each group rotated by the
                                channel's index (comm_channel_order) */
} CommArgs;

/* Blocks: for reduce-scatter and all-gather, and for the algorithms that cut
 * the buffer, block b of p is [lo, hi) with the sizes of comm_shard_bounds()
 * (comm/shard.h): the first n % p blocks have one element more. */

/* The collective being run, as an algorithm sees it, and one step of a
 * rank's program (comm/program.h, private to comm/). */
typedef struct CommOp CommOp;
typedef struct CommStep CommStep;
typedef struct CommRound CommRound;

/* A two-level network for a cost formula: ranks in groups of `group`
 * (host groups: a node, a rack), routes inside a group of latency
 * alpha_in and s/byte beta_in, across groups alpha_out and beta_out;
 * `shared`: a link's bytes share its bandwidth (max-min), so a link that
 * carries k blocks takes k times one block's time whatever their order
 * (FALSE, contention none: every transfer has its route's bandwidth). */
typedef struct {
  CommKind kind;
  int p, group;
  gsize n;
  double elem_bytes;
  double alpha_in, beta_in, alpha_out, beta_out;
  double reduce_per_byte;
  gboolean shared;
  double wire;     /* bytes on the wire per byte of data, which the betas
                      already hold: for an algorithm that cuts its chunks
                      by the bytes on the wire (double-tree); 0 = 1 */
} CommLevels;

typedef struct CommAlgorithm CommAlgorithm;

/* A collective algorithm: one file, comm/<name>.c, defines it and
 * the registry in collectives.c lists it; nothing else names it. */
struct CommAlgorithm {
  const char *name;          /* as in [policy] algorithm */
  const char *description;
  const char *source;        /* the paper or document its steps and cost
                                formula come from */
  /* Prepares `op` for `kind` (comm/program.h): with `step`, sets op->state
   * if its steps need precomputed data; without, writes every rank's whole
   * program.  Returns FALSE (and sets COMM_ERROR_UNSUPPORTED) for a kind
   * it does not do. */
  gboolean (*build) (CommOp *op, CommKind kind, GError **error);
  /* Writes step `index` of rank `rank`'s program into *out, or returns FALSE
   * when the program has fewer steps; called once per step, in order, as the
   * rank reaches it.  NULL: the programs are the ones `build` stored. */
  gboolean (*step) (const CommOp *op, int rank, guint index,
                    CommStep *out);
  /* Its cost formula, as comm_cost_grouped() documents (`group` ranks
   * per node, dividing p; only a locality-aware algorithm reads it); NaN
   * for a kind it does not do. */
  double (*cost) (CommKind kind, int p, int group, gsize n,
                  double elem_bytes, double alpha, double beta,
                  double reduce_per_byte);
  /* Its formula on a two-level network (NULL: the algorithm is limited by
   * the slower level, and `cost` with alpha_out and beta_out applies). */
  double (*cost_levels) (const CommLevels *l);
  /* It crosses from group to group through one route at a time (the
   * ring): C channels, crossing through C routes, each carry 1/C of the
   * buffer in auto's estimate; the others already use every route. */
  gboolean one_route;
  /* How much max-min sharing can stretch its bandwidth term (1 or 0:
   * not at all): a rank of the double tree receives from two children at
   * once, so its bytes can take up to twice its formula's time.  auto
   * prices it at the worst where links are shared. */
  double shared_beta;
  /* Which of NCCL's latency rows a protocol charges it by: the tree's for
   * the trees, the ring's (0) for the others. */
  CommFamily family;
  /* A teaching baseline (naive): auto picks it only for a kind no other
   * algorithm does, its contention-free formula ignoring the incast at
   * its root that max-min charges. */
  gboolean baseline;
  /* A selector, not an algorithm (auto): picks the registered algorithm
   * that runs `kind` for `a`, or NULL when none does.  comm_start()
   * runs what it picks; build and step are then unused. */
  const CommAlgorithm *(*choose) (const CommArgs *a, CommKind kind);
  /* Transfers one collective `kind` makes among p >= 2 ranks over n
   * elements in one channel, as the executor counts them; NULL: the
   * ring's count, an upper bound (hierarchical, and auto, which picks per
   * collective). */
  double (*messages) (CommKind kind, int p, gsize n);
  /* Every rank's transfers are handed to the network at once (naive: the
   * root as driver), not one per rank and channel at a time. */
  gboolean all_at_once;
  /* Optional (NULL: never): the collective `op` as phases of rounds
   * (comm/program.h, CommRound) when every rank's program is, step after
   * step, an eager send of the block it holds to one rank and a receive of
   * the block another sends, forwarded in the next step.  Writes up to
   * `max` phases into `out` and returns their number; 0 when the programs
   * are not so (a block of no element, groups of unequal sizes, a kind it
   * does not describe). */
  int (*rounds) (const CommOp *op, CommRound *out, int max);
  /* Optional (NULL: never), with `rounds`: how many rounds `rounds` gives
   * in all for p ranks in host groups of `group` ranks each (group divides
   * p) and n elements, 0 where it gives none; for the event estimate. */
  double (*class_rounds) (CommKind kind, int p, int group, gsize n);
  /* Optional (NULL: the executor runs the programs): runs the collective
   * itself, for an algorithm whose transfers end at a switch that reduces
   * rather than at a rank (in-network reduction, comm/nvls.c), as
   * comm_start() documents; `channels` and `mirrored` do not apply.
   * Returns FALSE (and sets COMM_ERROR_UNSUPPORTED) where the network
   * lacks the switch it needs or the kind is not one it does. */
  gboolean (*start) (const CommArgs *a, CommKind kind, CommDone done,
                     gpointer ctx, gpointer data, GError **error);
  /* With `start`: its time for `a` on the network it runs on, by its cost
   * formula, NaN where `start` would refuse; auto prices it so, and only
   * so (its `cost` assumes the switch is there). */
  double (*price) (const CommArgs *a, CommKind kind);
  /* It needs a switch inside each node that reduces ([network] nvswitch
   * = sharp on the nodes topology), and, with `fabric_sharp`, across
   * nodes one between them that does ([network] ib_sharp = true). */
  gboolean in_switch;
  gboolean fabric_sharp;
  /* NCCL implements it (ring, double-tree, nvls, nvls-tree): the selector
   * nccl chooses among these only; on the selector itself, that it does. */
  gboolean nccl;
};

/* What comm_start() runs for a collective: the algorithm, the protocol
 * (NULL: the overheads as given) and the channels (0: as given, for the
 * kinds other than all-reduce). */
typedef struct {
  const CommAlgorithm *alg;
  const CommProtocol *protocol;
  int channels;
  double estimate;           /* s, auto's estimate; NaN where none was made */
} CommPlan;

/* Resolves `alg` (or auto's choice), a->protocol (or auto's) and
 * a->channels (or COMM_CHANNELS_AUTO's count) for collective `kind`
 * (comm/auto.c; docs/collectives.md, section auto).  Returns FALSE when no
 * algorithm that alg stands for does the kind. */
gboolean comm_plan (const CommAlgorithm *alg, const CommArgs *a, CommKind kind,
                    CommPlan *out);

/* TRUE when a's ranks sit in more than one host group (node, rack). */
gboolean comm_spans_groups (const CommArgs *a);

/* The most channels NCCL's topology search would lay for `a`: one per
 * distinct bottleneck link (a NIC) on the routes from rank 0's host group
 * to another group, 1 with a single group. */
int comm_channel_paths (const CommArgs *a);

/* Whether comm_start() can run collective `kind` of `alg` for `a` as
 * mirrored (CommArgs.mirrored): the algorithm it resolves to describes it
 * as phases of rounds in which every rank sends to the rank c places
 * further (c fixed per phase) a block of one size, one channel, no data,
 * and the ranks sit one per copy of the folded network, in order. */
gboolean comm_mirror_ok (const CommAlgorithm *alg, const CommArgs *a,
                         CommKind kind);

/* TRUE for the collectives that go from one root to all ranks or back
 * (broadcast, reduce, scatter, gather). */
gboolean comm_kind_one_to_all (CommKind kind);

/* What comm_start() runs for `alg`: alg itself, or what its `choose`
 * picks for `a` and `kind` (NULL when none runs the kind). */
const CommAlgorithm *comm_resolve (const CommAlgorithm *alg,
                                          const CommArgs *a,
                                          CommKind kind);

/* Transfers one collective `kind` of algorithm `name` makes among p ranks
 * over n elements, in `channels` channels: the algorithm's `messages` times
 * channels (0 for p < 2). */
double comm_messages (const char *name, CommKind kind, int p, gsize n, int channels);
const CommAlgorithm *comm_lookup (const char *name);
/* Whether alg runs collectives of `kind` at all (its cost formula is a
 * number for 2 ranks; a selector: whether some algorithm it picks among
 * does). */
gboolean comm_does (const CommAlgorithm *alg, CommKind kind);
/* The ring (comm/ring.c): it runs every kind, so it is what a caller falls
 * back to where the algorithm asked for does not run one. */
extern const CommAlgorithm comm_ring;
/* NULL-terminated list of the registered algorithms. */
const CommAlgorithm *const *comm_all (void);
/* The same, untyped, for [policy] algorithm (BaseKey.entries). */
const void *const *comm_entries (void);

/* Starts the collective `kind` of algorithm `alg`; arguments are copied,
 * buffers are borrowed until `done`, which is called once, in an event, when
 * every rank has finished (p = 1: at the current time).  Returns FALSE (and
 * sets error) for a kind the algorithm does not do, scheduling nothing. */
gboolean comm_start (const CommAlgorithm *alg, const CommArgs *a,
                         CommKind kind, CommDone done, gpointer ctx,
                         gpointer data, GError **error);

/* The ranks of channel c, in ring order, into order[p]: ranks sorted by
 * host group (groups in order of their lowest rank), by rank inside a
 * group, the ranks of each group then laid in the order `ring` gives for
 * channel c (the topology's, net_network_group_order; the members' indices
 * in rank order), or, where it gives none (ring NULL or FALSE), rotated by
 * c positions.  With one NIC per GPU, channel c's rotated ring leaves each
 * node from its GPU c - 1 and enters the next at its GPU c: the channels
 * cross nodes through different NICs, as NCCL's rings do.  `group` (p) is
 * each rank's host group. */
void comm_channel_order (int p, const int *group, int c, NetGroupOrder ring,
                             int *order);

/* Whether `out` (p buffers of n floats, after the collective `kind` with
 * root `root`) holds what the kind's definition gives from the inputs `in`:
 * copies exactly, sums to 1e-5 of the sum of the magnitudes added (the
 * algorithms add in different orders); scratch parts (reduce: every rank
 * but the root; reduce-scatter: every block but the rank's own) are not
 * checked.  On a difference, sets *rank and *elem to the first one. */
gboolean comm_check (CommKind kind, int p, gsize n, int root,
                         const float *const *in, const float *const *out,
                         int *rank, gsize *elem);

/* Simulated time of the collective with contention = none on a network whose
 * every route has latency alpha (s) and bandwidth 1/beta (beta in s/byte),
 * from the algorithm's cost formula (docs/collectives.md); reduction cost
 * included.  For tests and for `dtsim check`. */
double comm_cost (const CommAlgorithm *alg, CommKind kind, int p,
                      gsize n, double elem_bytes, double alpha, double beta,
                      double reduce_per_byte);
/* The same when the p ranks form groups of `group` ranks each (hosts
 * sharing a node or rack, net_network_host_group; group >= 1 divides p):
 * routes inside a group and across still all have alpha and beta, so only
 * an algorithm that lays its ranks by group (hierarchical, double-tree)
 * depends on it.
 * comm_cost() is this with group = 1 (every rank alone, as on a star). */
double comm_cost_grouped (const CommAlgorithm *alg, CommKind kind,
                              int p, int group, gsize n, double elem_bytes,
                              double alpha, double beta,
                              double reduce_per_byte);

/* Engine events of one collective of algorithm `name` (a concrete one, not
 * the automatic choice) that runs as flow classes over p ranks in host
 * groups of `group` ranks each (group divides p) and n elements: one per
 * round (docs/collectives.md,
 * "Flow classes"); 0 where the algorithm describes no rounds for it, so
 * that it runs per message.  The network's side (routes of one class, the
 * ranks' lag) is not known here: the estimate assumes it holds. */
double comm_class_events (const char *name, CommKind kind, int p, int group,
                          gsize n);

/* Work counters of the executor (test-only: tests/test-collectives.c
 * bounds the work per transfer with them; nothing in a run reads them).
 * They are sums over every collective of the process, in every thread, added
 * when the collective is freed (just before its `done`, or when its start
 * fails). */
typedef struct {
  guint64 collectives;  /* collectives freed */
  guint64 transfers;    /* messages handed to net_send */
  guint64 examined;     /* times the executor examined a rank's current step */
  guint64 stored_steps; /* steps of the programs stored by builders */
  guint64 classes;      /* collectives of those run as flow classes */
} CommStats;

/* Copies the counters into *out. */
void comm_stats (CommStats *out);

G_END_DECLS

#endif /* DTSIM_COMM_COLLECTIVES_H */
