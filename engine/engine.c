/*
 * engine.c — the simulated clock and the pending-event queue.
 *
 * Pending events live in a 4-ary min-heap of compact 16-byte entries
 * {time, key}, where key = (sequence << 32) | slot and the time is kept as
 * its IEEE bit pattern so that (time, key) compares as one 128-bit integer.  Sequence numbers grow
 * with every schedule, so comparing (time, key) orders events by time and
 * then by scheduling order; the slot index in the low bits never decides a
 * comparison because two live entries never share a sequence number.  The
 * handler and its two pointers live in a separate slot pool (recycled through
 * a free list), so the heap moves only 16 bytes per swap and a group of four
 * siblings fills exactly one 64-byte cache line (the heap array is aligned
 * so that index 1, the first child of the root, starts a line).  Removal
 * uses Floyd's bottom-up sift with prefetching of the next level, which is
 * what keeps a queue of a million events fast.
 *
 * Cancellation is lazy: eng_cancel() clears the slot's handler and the entry
 * stays in the heap until it reaches the top, where it is discarded without
 * firing.  When dead entries outnumber live ones the heap is compacted.
 *
 * An event id is (generation << 32) | (slot + 1).  A slot's generation is
 * bumped whenever its event fires or is cancelled, so a stale id (fired,
 * cancelled, or naming a slot that has since been reused) never matches.
 *
 * When the 32-bit sequence space runs out (after 2^32 schedules), the live
 * entries are sorted into firing order and renumbered 0..n-1; a sorted array
 * is a valid heap, and the relative order of all pending events is kept.
 *
 * No allocation happens per event: the heap and the slot pool grow by
 * doubling and are reused.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/engine-private.h"

#define ENG_ARITY 4
#define ENG_NO_SLOT G_MAXUINT32
/* The heap is compacted once cancelled entries outnumber pending ones and
 * are at least this many: one O(heap) pass then costs less than popping
 * each dead entry (O(log heap) each), as when a network cancels the
 * completion events of hundreds of flows that finish at one instant. */
#define ENG_MIN_DEAD_TO_COMPACT 16

#ifdef __GNUC__
#define ENG_PREFETCH(p) __builtin_prefetch (p)
#else
#define ENG_PREFETCH(p) ((void) 0)
#endif

typedef struct {
  guint64 tbits; /* bit pattern of the time (seconds, a double >= +0.0) */
  guint64 key;   /* (sequence << 32) | slot */
} EngEntry;

typedef struct {
  EngHandler handler; /* NULL when the slot is free or its event cancelled */
  gpointer ctx;
  gpointer data;
  guint32 gen;        /* generation, the high half of the event id */
  guint32 next_free;  /* free-list link; meaningful only when free */
} EngSlot;

struct EngSim {
  double now;          /* seconds */
  guint64 events;      /* events fired */
  gsize n_live;        /* entries in the heap whose event is pending */
  gsize n_dead;        /* entries in the heap whose event was cancelled */

  EngEntry *heap;      /* n_heap = n_live + n_dead entries, 64-byte aligned */
  gpointer heap_mem;   /* allocation holding heap */
  gsize n_heap;
  gsize heap_cap;      /* entries */

  EngSlot *slots;      /* slot pool */
  guint32 n_slots;     /* slots ever handed out (the rest are unused) */
  guint32 slots_cap;
  guint32 free_head;   /* first free slot, or ENG_NO_SLOT */

  guint64 next_seq;    /* sequence number of the next schedule */
  guint64 seq_limit;   /* renumber when next_seq reaches this */

  gboolean stop;       /* set by eng_stop(), read by eng_run() */

  GArray *flushes;     /* EngFlushHook, registered end-of-instant hooks */
  gboolean flush_due;  /* some hook asked to run at the instant's end */
};

typedef struct {
  EngFlush fn;
  gpointer ctx;
  gboolean requested;
} EngFlushHook;

/* For doubles >= +0.0 (infinity included) the IEEE bit patterns, read as
 * unsigned integers, sort like the values, so (time, key) compares as one
 * 128-bit integer: no branch to mispredict on the time comparison. */
static inline gboolean
entry_less (const EngEntry *a, const EngEntry *b)
{
#ifdef __SIZEOF_INT128__
  unsigned __int128 x = ((unsigned __int128) a->tbits << 64) | a->key;
  unsigned __int128 y = ((unsigned __int128) b->tbits << 64) | b->key;
  return x < y;
#else
  return a->tbits < b->tbits || (a->tbits == b->tbits && a->key < b->key);
#endif
}

static inline guint64
time_to_bits (double t)
{
  guint64 b;
  memcpy (&b, &t, sizeof b);
  return b;
}

static inline double
bits_to_time (guint64 b)
{
  double t;
  memcpy (&t, &b, sizeof t);
  return t;
}

static inline guint32
entry_slot (const EngEntry *e)
{
  return (guint32) (e->key & G_MAXUINT32);
}

static void
heap_reserve (EngSim *sim, gsize want)
{
  gsize cap;
  gpointer mem;
  guintptr line;
  EngEntry *heap;

  if (want <= sim->heap_cap)
    return;
  cap = MAX (sim->heap_cap * 2, MAX (want, 64));
  /* heap[0] sits 16 bytes before a 64-byte boundary, so heap[1..4] (and
   * every later group of four siblings) fill one cache line; 128 bytes of
   * slack cover the alignment. */
  mem = g_malloc (cap * sizeof (EngEntry) + 128);
  line = ((guintptr) mem + 63) & ~(guintptr) 63;
  heap = (EngEntry *) (line + 64) - 1;
  if (sim->n_heap > 0)
    memcpy (heap, sim->heap, sim->n_heap * sizeof (EngEntry));
  g_free (sim->heap_mem);
  sim->heap_mem = mem;
  sim->heap = heap;
  sim->heap_cap = cap;
}

/* Inserts `e` into the heap (capacity already reserved). */
static inline void
heap_push (EngSim *sim, EngEntry e)
{
  EngEntry *heap = sim->heap;
  gsize i = sim->n_heap++;

  while (i > 0)
    {
      gsize p = (i - 1) / ENG_ARITY;
      if (!entry_less (&e, &heap[p]))
        break;
      heap[i] = heap[p];
      i = p;
    }
  heap[i] = e;
}

/* Removes heap[0]; the heap must not be empty.  Floyd's bottom-up variant:
 * the hole left at the root is moved down along the path of smallest
 * children to a leaf without comparing against the element that will fill
 * it (the old last leaf, which usually belongs near the bottom anyway), and
 * that element is then sifted up from the leaf.  While descending, the
 * grandchildren of the current node (four consecutive cache lines) are
 * prefetched so that the next level's load does not stall on memory. */
static inline void
heap_pop (EngSim *sim)
{
  EngEntry *heap = sim->heap;
  gsize n = --sim->n_heap;
  EngEntry last = heap[n];
  gsize i = 0, c;

  if (n == 0)
    return;
  while ((c = ENG_ARITY * i + 1) + ENG_ARITY <= n)
    {
      gsize g = ENG_ARITY * c + 1, m01, m23, m;
      if (g < n)
        {
          ENG_PREFETCH (&heap[g]);
          ENG_PREFETCH (&heap[g + 4]);
          ENG_PREFETCH (&heap[g + 8]);
          ENG_PREFETCH (&heap[g + 12]);
        }
      m01 = c + entry_less (&heap[c + 1], &heap[c]);
      m23 = c + 2 + entry_less (&heap[c + 3], &heap[c + 2]);
      m = entry_less (&heap[m23], &heap[m01]) ? m23 : m01;
      heap[i] = heap[m];
      i = m;
    }
  if (c < n)
    {
      /* A last, partial group of children. */
      gsize j, m = c;
      for (j = c + 1; j < n; j++)
        if (entry_less (&heap[j], &heap[m]))
          m = j;
      heap[i] = heap[m];
      i = m;
    }
  /* Sift `last` up from the hole at i. */
  while (i > 0)
    {
      gsize p = (i - 1) / ENG_ARITY;
      if (!entry_less (&last, &heap[p]))
        break;
      heap[i] = heap[p];
      i = p;
    }
  heap[i] = last;
}

static void
heap_sift_down (EngEntry *heap, gsize n, gsize i)
{
  EngEntry e = heap[i];

  for (;;)
    {
      gsize c = ENG_ARITY * i + 1;
      gsize m, j, end;

      if (c >= n)
        break;
      end = MIN (c + ENG_ARITY, n);
      m = c;
      for (j = c + 1; j < end; j++)
        if (entry_less (&heap[j], &heap[m]))
          m = j;
      if (!entry_less (&heap[m], &e))
        break;
      heap[i] = heap[m];
      i = m;
    }
  heap[i] = e;
}

static inline void
slot_release (EngSim *sim, guint32 slot)
{
  sim->slots[slot].next_free = sim->free_head;
  sim->free_head = slot;
}

/* Drops the dead entries from the heap (returning their slots to the free
 * list) and restores the heap property. */
static void
heap_compact (EngSim *sim)
{
  gsize i, k = 0;

  for (i = 0; i < sim->n_heap; i++)
    {
      guint32 slot = entry_slot (&sim->heap[i]);
      if (sim->slots[slot].handler != NULL)
        sim->heap[k++] = sim->heap[i];
      else
        slot_release (sim, slot);
    }
  sim->n_heap = k;
  sim->n_dead = 0;
  g_assert (k == sim->n_live);
  if (k > 1)
    for (i = (k - 2) / ENG_ARITY + 1; i-- > 0;)
      heap_sift_down (sim->heap, k, i);
}

static int
entry_cmp (gconstpointer a, gconstpointer b)
{
  const EngEntry *x = a, *y = b;
  return entry_less (x, y) ? -1 : entry_less (y, x) ? 1 : 0;
}

/* Gives the pending events sequence numbers 0..n-1 in firing order. */
static void
renumber (EngSim *sim)
{
  gsize i;

  heap_compact (sim);
  qsort (sim->heap, sim->n_heap, sizeof (EngEntry), entry_cmp);
  for (i = 0; i < sim->n_heap; i++)
    sim->heap[i].key = ((guint64) i << 32) | entry_slot (&sim->heap[i]);
  sim->next_seq = sim->n_heap;
  if (sim->next_seq >= sim->seq_limit)
    g_error ("eng: %" G_GSIZE_FORMAT " pending events exceed the sequence "
             "limit %" G_GUINT64_FORMAT, sim->n_heap, sim->seq_limit);
}

static guint32
slot_acquire (EngSim *sim)
{
  guint32 slot = sim->free_head;

  if (slot != ENG_NO_SLOT)
    {
      sim->free_head = sim->slots[slot].next_free;
      return slot;
    }
  if (sim->n_slots == sim->slots_cap)
    {
      guint64 cap = MAX ((guint64) sim->slots_cap * 2, 64);
      /* slot + 1 must fit in 32 bits and differ from 0. */
      cap = MIN (cap, (guint64) G_MAXUINT32 - 1);
      if (cap <= sim->slots_cap)
        g_error ("eng: more than %u pending events", sim->slots_cap);
      sim->slots = g_renew (EngSlot, sim->slots, cap);
      sim->slots_cap = (guint32) cap;
    }
  slot = sim->n_slots++;
  sim->slots[slot].gen = 1;
  sim->slots[slot].handler = NULL;
  return slot;
}

/* Creates an engine at time 0 s with an empty queue.  Free with
 * eng_sim_free(). */
EngSim *
eng_sim_new (void)
{
  EngSim *sim = g_new0 (EngSim, 1);

  sim->free_head = ENG_NO_SLOT;
  sim->seq_limit = G_GUINT64_CONSTANT (1) << 32;
  heap_reserve (sim, 64);
  return sim;
}

/* Frees the engine.  Pending events are dropped without firing; their
 * ctx/data pointers are not touched.  NULL is accepted. */
void
eng_sim_free (EngSim *sim)
{
  if (sim == NULL)
    return;
  g_free (sim->heap_mem);
  g_free (sim->slots);
  if (sim->flushes)
    g_array_free (sim->flushes, TRUE);
  g_free (sim);
}

/* Current simulated time, seconds. */
double
eng_sim_now (const EngSim *sim)
{
  g_return_val_if_fail (sim != NULL, 0.0);
  return sim->now;
}

/* Events fired so far; cancelled events are not counted. */
guint64
eng_sim_events (const EngSim *sim)
{
  g_return_val_if_fail (sim != NULL, 0);
  return sim->events;
}

/* Events scheduled and neither fired nor cancelled. */
gsize
eng_sim_pending (const EngSim *sim)
{
  g_return_val_if_fail (sim != NULL, 0);
  return sim->n_live;
}

/* Schedules `handler` at absolute `time` (seconds, >= now, not NaN).
 * Returns the event's id (never 0), or 0 after a failed precondition. */
EngEventId
eng_schedule_at (EngSim *sim, double time, EngHandler handler,
                 gpointer ctx, gpointer data)
{
  guint32 slot;
  EngSlot *s;
  EngEntry e;

  g_return_val_if_fail (sim != NULL, 0);
  g_return_val_if_fail (handler != NULL, 0);
  g_return_val_if_fail (time >= sim->now, 0); /* also rejects NaN */

  if (G_UNLIKELY (sim->next_seq >= sim->seq_limit))
    renumber (sim);
  if (G_UNLIKELY (sim->n_heap == sim->heap_cap))
    {
      if (sim->n_dead >= sim->n_live && sim->n_dead >= ENG_MIN_DEAD_TO_COMPACT)
        heap_compact (sim);
      else
        heap_reserve (sim, sim->n_heap + 1);
    }

  slot = slot_acquire (sim);
  s = &sim->slots[slot];
  s->handler = handler;
  s->ctx = ctx;
  s->data = data;

  e.tbits = time_to_bits (time + 0.0); /* + 0.0 turns -0.0 into +0.0 */
  e.key = (sim->next_seq++ << 32) | slot;
  heap_push (sim, e);
  sim->n_live++;
  return ((guint64) s->gen << 32) | ((guint64) slot + 1);
}

/* Schedules `handler` at now + `delay` (seconds, >= 0).  Returns the event's
 * id (never 0), or 0 after a failed precondition. */
EngEventId
eng_schedule (EngSim *sim, double delay, EngHandler handler,
              gpointer ctx, gpointer data)
{
  g_return_val_if_fail (sim != NULL, 0);
  g_return_val_if_fail (delay >= 0.0, 0); /* also rejects NaN */
  return eng_schedule_at (sim, sim->now + delay, handler, ctx, data);
}

/* Cancels the pending event `id`.  Returns TRUE if it was pending (it will
 * never fire and is not counted), FALSE if it fired, was cancelled already,
 * or was never issued by this engine. */
gboolean
eng_cancel (EngSim *sim, EngEventId id)
{
  guint64 low;
  EngSlot *s;

  g_return_val_if_fail (sim != NULL, FALSE);
  low = id & G_MAXUINT32;
  if (low == 0 || low > sim->n_slots)
    return FALSE;
  s = &sim->slots[low - 1];
  if (s->handler == NULL || s->gen != (guint32) (id >> 32))
    return FALSE;
  s->handler = NULL;
  s->gen++;
  sim->n_live--;
  sim->n_dead++;
  if (sim->n_dead > sim->n_live && sim->n_dead >= ENG_MIN_DEAD_TO_COMPACT)
    heap_compact (sim);
  return TRUE;
}

/* Discards cancelled entries at the top of the heap.  Returns the top entry
 * (a pending event) or NULL when none is pending. */
static inline const EngEntry *
peek_live (EngSim *sim)
{
  while (sim->n_heap > 0)
    {
      guint32 slot = entry_slot (&sim->heap[0]);
      if (G_LIKELY (sim->slots[slot].handler != NULL))
        return &sim->heap[0];
      heap_pop (sim);
      slot_release (sim, slot);
      sim->n_dead--;
    }
  return NULL;
}

/* Fires the event at the top of the heap, which must be live. */
static inline void
fire_top (EngSim *sim)
{
  EngEntry top = sim->heap[0];
  guint32 slot = entry_slot (&top);
  EngSlot *s = &sim->slots[slot];
  EngHandler handler = s->handler;
  gpointer ctx = s->ctx, data = s->data;

  heap_pop (sim);
  s->handler = NULL;
  s->gen++;
  slot_release (sim, slot);
  sim->n_live--;
  sim->now = bits_to_time (top.tbits);
  sim->events++;
  handler (sim, ctx, data);
}

guint
eng_flush_register (EngSim *sim, EngFlush fn, gpointer ctx)
{
  g_return_val_if_fail (sim != NULL && fn != NULL, 0);
  if (!sim->flushes)
    sim->flushes = g_array_new (FALSE, FALSE, sizeof (EngFlushHook));
  EngFlushHook h = { fn, ctx, FALSE };
  g_array_append_val (sim->flushes, h);
  return sim->flushes->len;
}

void
eng_flush_unregister (EngSim *sim, guint id)
{
  g_return_if_fail (sim != NULL && sim->flushes && id >= 1 && id <= sim->flushes->len);
  EngFlushHook *h = &g_array_index (sim->flushes, EngFlushHook, id - 1);
  h->fn = NULL;
  h->requested = FALSE;
}

void
eng_flush_request (EngSim *sim, guint id)
{
  g_return_if_fail (sim != NULL && sim->flushes && id >= 1 && id <= sim->flushes->len);
  EngFlushHook *h = &g_array_index (sim->flushes, EngFlushHook, id - 1);
  if (h->fn == NULL)
    return;
  h->requested = TRUE;
  sim->flush_due = TRUE;
}

/* Calls every requested end-of-instant hook, in registration order, until
 * none is requested (a hook may request itself or another again). */
static void
run_flushes (EngSim *sim)
{
  while (sim->flush_due)
    {
      sim->flush_due = FALSE;
      for (guint i = 0; i < sim->flushes->len; i++)
        {
          EngFlushHook *h = &g_array_index (sim->flushes, EngFlushHook, i);
          if (!h->requested)
            continue;
          h->requested = FALSE;
          h->fn (sim, h->ctx);
        }
    }
}

/* The next pending event, after running the end-of-instant hooks when the
 * instant is over (no event left at the current time). */
static inline const EngEntry *
peek_next (EngSim *sim)
{
  const EngEntry *top = peek_live (sim);
  while (G_UNLIKELY (sim->flush_due)
         && (top == NULL || bits_to_time (top->tbits) > sim->now))
    {
      run_flushes (sim);
      top = peek_live (sim);
    }
  return top;
}

/* Fires the earliest pending event (ties in scheduling order), advancing the
 * clock to its time.  Returns FALSE if no event was pending. */
gboolean
eng_step (EngSim *sim)
{
  g_return_val_if_fail (sim != NULL, FALSE);
  if (peek_next (sim) == NULL)
    return FALSE;
  fire_top (sim);
  return TRUE;
}

/* Fires events in order until none is pending, eng_stop() is called by a
 * handler, or the next event's time exceeds `until` (seconds).  The clock is
 * left at the last fired event's time.  Returns the number fired. */
guint64
eng_run (EngSim *sim, double until)
{
  guint64 start;
  const EngEntry *top;

  g_return_val_if_fail (sim != NULL, 0);
  start = sim->events;
  sim->stop = FALSE;
  while (!sim->stop && (top = peek_next (sim)) != NULL && bits_to_time (top->tbits) <= until)
    fire_top (sim);
  sim->stop = FALSE;
  return sim->events - start;
}

/* Makes the running eng_run() return once the current handler returns. */
void
eng_stop (EngSim *sim)
{
  g_return_if_fail (sim != NULL);
  sim->stop = TRUE;
}

/* Test hook (engine-private.h): renumbers sequence numbers once `limit`
 * schedules have been made instead of after 2^32.  `limit` must exceed the
 * number of events that will ever be pending at once. */
void
eng_sim_set_seq_limit (EngSim *sim, guint64 limit)
{
  g_return_if_fail (sim != NULL);
  g_return_if_fail (limit > 0 && limit <= (G_GUINT64_CONSTANT (1) << 32));
  sim->seq_limit = limit;
}
