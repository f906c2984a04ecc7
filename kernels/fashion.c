/*
 * fashion.c — IDX image/label files and the Fashion-MNIST data set.
 *
 * IDX (LeCun's MNIST format) is a big-endian header followed by raw values:
 * a 32-bit magic number 0x000008NN (0x08: unsigned bytes, NN: number of
 * dimensions), NN 32-bit dimension sizes, then the product of the sizes in
 * bytes.  Images are idx3 (n, rows, cols), labels idx1 (n).  Files are read
 * through GIO, decompressed by GZlibDecompressor when they start with the
 * gzip magic bytes 1f 8b, and parsed strictly: a wrong magic number, a zero
 * image dimension, a count that differs between the two files, a file that
 * ends early or one with bytes after its data is an error naming the file
 * (GIO's G_IO_ERROR domain: NOT_FOUND for a missing file, INVALID_DATA for a
 * malformed one).
 *
 * Pixels are converted through a 256-entry table computed in double and
 * rounded once to float, so conversion is one load per pixel, and the
 * normalised value of a pixel is the correctly rounded value of the formula
 * in docs/kernels.md, independent of the order of the pixels.  The training
 * mean and standard deviation come from a 256-bin histogram of the training
 * bytes, exact in double.
 *
 * Speed (bench/bench-data.c): decompressing the 26 MB training images is
 * most of the time, so the test split is decompressed on a second thread
 * meanwhile, and the conversion, which writes 220 MB of fresh memory, is
 * spread over up to CONVERT_THREADS threads.  Results do not depend on the
 * number of threads.
 */
#include "kernels/kernels.h"

#include <gio/gio.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <glib/gstdio.h>

/* Read-ahead of the file stream under the decompressor, bytes. */
#define IDX_BUFFER_BYTES (1u << 20)

#define IDX_MAGIC_IMAGES 0x00000803u   /* unsigned bytes, 3 dimensions */
#define IDX_MAGIC_LABELS 0x00000801u   /* unsigned bytes, 1 dimension */

#define FASHION_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
#define FASHION_PACKAGE "dataset-fashion-mnist"
#define FASHION_SIDE 28                /* pixels per image row and column */
#define FASHION_CLASSES 10

/* Opens `path` for reading: a buffered file stream, wrapped in a gzip
 * decompressor when the file starts with 1f 8b.  NULL with an error naming
 * the file when it cannot be opened. */
static GInputStream *
idx_open (const char *path, GError **error)
{
  /* only a regular file: opening a FIFO would wait for a writer, and a
   * device such as /dev/zero never ends */
  GStatBuf st;
  if (g_stat (path, &st) == 0 && !S_ISREG (st.st_mode))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   "%s: not a regular file; give the directory of the IDX files", path);
      return NULL;
    }
  g_autoptr (GFile) file = g_file_new_for_path (path);
  g_autoptr (GFileInputStream) raw = g_file_read (file, NULL, error);
  if (raw == NULL)
    return NULL;

  g_autoptr (GInputStream) buf =
    g_buffered_input_stream_new_sized (G_INPUT_STREAM (raw), IDX_BUFFER_BYTES);
  if (g_buffered_input_stream_fill (G_BUFFERED_INPUT_STREAM (buf), -1, NULL, error) < 0)
    {
      g_prefix_error (error, "%s: ", path);
      return NULL;
    }
  gsize avail = 0;
  const guint8 *head =
    g_buffered_input_stream_peek_buffer (G_BUFFERED_INPUT_STREAM (buf), &avail);
  if (avail >= 2 && head[0] == 0x1f && head[1] == 0x8b)
    {
      g_autoptr (GZlibDecompressor) z =
        g_zlib_decompressor_new (G_ZLIB_COMPRESSOR_FORMAT_GZIP);
      return g_converter_input_stream_new (buf, G_CONVERTER (z));
    }
  return g_steal_pointer (&buf);
}

/* Reads up to `count` bytes of `what` into buf, stopping early only at the
 * end of the stream; *got receives the number read.  Errors name the file. */
static gboolean
idx_read (GInputStream *in, const char *path, const char *what, void *buf,
          gsize count, gsize *got, GError **error)
{
  g_autoptr (GError) local = NULL;
  if (g_input_stream_read_all (in, buf, count, got, NULL, &local))
    return TRUE;
  /* the decompressor's way of saying that the gzip stream ends early */
  if (g_error_matches (local, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT))
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                 "%s: truncated: the gzip stream ends inside %s", path, what);
  else
    g_propagate_prefixed_error (error, g_steal_pointer (&local),
                                "%s: reading %s: ", path, what);
  return FALSE;
}

/* Reads exactly `count` bytes of `what` into buf; an error naming the file
 * if the stream fails or ends first. */
static gboolean
idx_read_exact (GInputStream *in, const char *path, const char *what,
                void *buf, gsize count, GError **error)
{
  gsize got = 0;
  if (!idx_read (in, path, what, buf, count, &got, error))
    return FALSE;
  if (got < count)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   "%s: truncated: %s has %" G_GSIZE_FORMAT " of %"
                   G_GSIZE_FORMAT " bytes", path, what, got, count);
      return FALSE;
    }
  return TRUE;
}

/* Checks that the stream has nothing after the data it declared (for a gzip
 * file, that its stream ends there, checksum included). */
static gboolean
idx_expect_end (GInputStream *in, const char *path, GError **error)
{
  guint8 extra;
  gsize got = 0;
  if (!idx_read (in, path, "the trailer after the data", &extra, 1, &got, error))
    return FALSE;
  if (got != 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   "%s: unexpected bytes after the data its header declares",
                   path);
      return FALSE;
    }
  return TRUE;
}

/* Opens an IDX file and reads its header: the magic number must be `magic`
 * (unsigned bytes, n_dims = magic & 0xff dimensions), whose sizes go into
 * dims.  Returns the stream positioned at the data, or NULL with an error. */
static GInputStream *
idx_open_header (const char *path, guint32 magic, guint32 *dims, GError **error)
{
  int n_dims = (int) (magic & 0xffu);
  g_autoptr (GInputStream) in = idx_open (path, error);
  if (in == NULL)
    return NULL;

  guint32 be[3];   /* big-endian: the magic number, then up to 3 sizes */
  g_assert (n_dims >= 1 && n_dims <= 3);
  if (!idx_read_exact (in, path, "the IDX magic number", be, sizeof (guint32), error))
    return NULL;
  guint32 found = GUINT32_FROM_BE (be[0]);
  if (found != magic)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   "%s: IDX magic number 0x%08x, expected 0x%08x (unsigned "
                   "bytes in %d dimension%s)", path, found, magic, n_dims,
                   n_dims == 1 ? "" : "s");
      return NULL;
    }
  if (!idx_read_exact (in, path, "the IDX header", be,
                       sizeof (guint32) * (gsize) n_dims, error))
    return NULL;
  for (int i = 0; i < n_dims; i++)
    dims[i] = GUINT32_FROM_BE (be[i]);
  return g_steal_pointer (&in);
}

/* Reads an images file and a labels file that must describe the same n
 * samples: pixels (n, d) and labels (n) as raw bytes, d = rows x cols
 * (both returned).  Headers are checked before any data is read, so a count
 * mismatch costs no decompression. */
static gboolean
idx_pair_read (const char *images_path, const char *labels_path,
               int *n_out, int *rows_out, int *cols_out,
               guint8 **pixels_out, guint8 **labels_out, GError **error)
{
  guint32 idims[3], ldims[1];
  g_autoptr (GInputStream) images =
    idx_open_header (images_path, IDX_MAGIC_IMAGES, idims, error);
  if (images == NULL)
    return FALSE;
  g_autoptr (GInputStream) labels =
    idx_open_header (labels_path, IDX_MAGIC_LABELS, ldims, error);
  if (labels == NULL)
    return FALSE;

  guint32 n = idims[0], rows = idims[1], cols = idims[2];
  if (rows == 0 || cols == 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   "%s: images of %u x %u pixels, expected at least 1 x 1",
                   images_path, rows, cols);
      return FALSE;
    }
  guint64 d = (guint64) rows * cols;
  if (n > G_MAXINT || d > G_MAXINT || (guint64) n * d > G_MAXSIZE / sizeof (float))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   "%s: %u images of %u x %u pixels is more than dtsim can hold",
                   images_path, n, rows, cols);
      return FALSE;
    }
  if (ldims[0] != n)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   "%s holds %u labels but %s holds %u images",
                   labels_path, ldims[0], images_path, n);
      return FALSE;
    }

  gsize n_pixels = (gsize) n * (gsize) d;
  /* g_try_malloc: a corrupt header may claim far more than the file holds;
   * that must end in the truncation error, not an abort. */
  g_autofree guint8 *pixels = g_try_malloc (MAX (n_pixels, 1));
  g_autofree guint8 *lab = g_try_malloc (MAX ((gsize) n, 1));
  if (pixels == NULL || lab == NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   "%s: cannot allocate %" G_GSIZE_FORMAT " bytes for %u images",
                   images_path, n_pixels, n);
      return FALSE;
    }
  if (!idx_read_exact (images, images_path, "the pixel data", pixels, n_pixels, error)
      || !idx_expect_end (images, images_path, error)
      || !idx_read_exact (labels, labels_path, "the label data", lab, n, error)
      || !idx_expect_end (labels, labels_path, error))
    return FALSE;

  *n_out = (int) n;
  *rows_out = (int) rows;
  *cols_out = (int) cols;
  *pixels_out = g_steal_pointer (&pixels);
  *labels_out = g_steal_pointer (&lab);
  return TRUE;
}

/* One slice of a pixel-to-float conversion. */
typedef struct {
  float *x;              /* (len) output */
  const guint8 *p;       /* (len) input bytes */
  gsize len;
  const float *lut;      /* (256) */
} ConvertJob;

static gpointer
convert_run (gpointer data)
{
  const ConvertJob *j = data;
  float *x = j->x;
  const guint8 *p = j->p;
  const float *lut = j->lut;
  for (gsize i = 0; i < j->len; i++)
    x[i] = lut[p[i]];
  return NULL;
}

/* x[i] = lut[p[i]] for i in [0, n), on up to CONVERT_THREADS threads: the
 * cost is writing 4n bytes of freshly allocated memory, whose page faults
 * and stores proceed in parallel on several cores. */
#define CONVERT_THREADS 8
#define CONVERT_MIN_SLICE ((gsize) 1 << 22)   /* bytes per thread, at least */

static void
convert_bytes (float *x, const guint8 *p, gsize n, const float lut[256])
{
  int t = (int) MIN ((gsize) CONVERT_THREADS, n / CONVERT_MIN_SLICE + 1);
  t = MAX (1, MIN (t, (int) g_get_num_processors ()));
  ConvertJob jobs[CONVERT_THREADS];
  GThread *threads[CONVERT_THREADS] = { NULL };
  for (int i = 0; i < t; i++)
    {
      gsize lo = n * (gsize) i / (gsize) t, hi = n * (gsize) (i + 1) / (gsize) t;
      jobs[i] = (ConvertJob) { x + lo, p + lo, hi - lo, lut };
      if (i > 0)
        threads[i] = g_thread_new ("idx-convert", convert_run, &jobs[i]);
    }
  convert_run (&jobs[0]);
  for (int i = 1; i < t; i++)
    g_thread_join (threads[i]);
}

/* A data set of n samples, d features, k classes whose features are
 * lut[pixel] and whose labels are the label bytes. */
static KernDataset *
dataset_from_bytes (int n, int d, int k, const guint8 *pixels,
                    const guint8 *labels, const float lut[256])
{
  KernDataset *ds = kern_dataset_new (n, d, k);
  convert_bytes (ds->x, pixels, (gsize) n * (gsize) d, lut);
  for (int i = 0; i < n; i++)
    ds->y[i] = labels[i];
  return ds;
}

/* Loads one IDX pair as described in kernels.h: images (idx3 unsigned
 * bytes, n x rows x cols) and labels (idx1 unsigned bytes, n), each gzip or
 * plain.  Returns a data set with d = rows x cols, x = pixel / 255 (the float
 * nearest to it) and k = 1 + the largest label (1 when n = 0), owned by the
 * caller; NULL with an error naming the file on any I/O or format problem. */
KernDataset *
kern_dataset_idx_load (const char *images_path, const char *labels_path,
                       GError **error)
{
  g_return_val_if_fail (images_path != NULL && labels_path != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  int n, rows, cols;
  g_autofree guint8 *pixels = NULL;
  g_autofree guint8 *labels = NULL;
  if (!idx_pair_read (images_path, labels_path, &n, &rows, &cols,
                      &pixels, &labels, error))
    return NULL;

  int max_label = 0;
  for (int i = 0; i < n; i++)
    max_label = MAX (max_label, labels[i]);
  float lut[256];
  for (int v = 0; v < 256; v++)
    lut[v] = (float) (v / 255.0);
  return dataset_from_bytes (n, rows * cols, max_label + 1, pixels, labels, lut);
}

/* One split of Fashion-MNIST, raw: checks the image shape and label range. */
typedef struct {
  char *images_path, *labels_path;
  int n;
  guint8 *pixels;   /* (n, 784) */
  guint8 *labels;   /* (n) */
} FashionSplit;

static void
fashion_split_clear (FashionSplit *s)
{
  g_free (s->images_path);
  g_free (s->labels_path);
  g_free (s->pixels);
  g_free (s->labels);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (FashionSplit, fashion_split_clear)

/* Sets the split's paths under dir; an error naming the package when a file
 * (or the directory) is missing. */
static gboolean
fashion_split_locate (FashionSplit *s, const char *dir, const char *prefix,
                      GError **error)
{
  g_autofree char *images = g_strdup_printf ("%s-images-idx3-ubyte.gz", prefix);
  g_autofree char *labels = g_strdup_printf ("%s-labels-idx1-ubyte.gz", prefix);
  s->images_path = g_build_filename (dir, images, NULL);
  s->labels_path = g_build_filename (dir, labels, NULL);
  const char *paths[] = { s->images_path, s->labels_path };
  for (gsize i = 0; i < G_N_ELEMENTS (paths); i++)
    {
      g_autoptr (GFile) f = g_file_new_for_path (paths[i]);
      if (!g_file_query_exists (f, NULL))
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                       "Fashion-MNIST not found at %s: install it with "
                       "`apt-get install " FASHION_PACKAGE "`", paths[i]);
          return FALSE;
        }
    }
  return TRUE;
}

static gboolean
fashion_split_read (FashionSplit *s, GError **error)
{
  int rows, cols;
  if (!idx_pair_read (s->images_path, s->labels_path, &s->n, &rows, &cols,
                      &s->pixels, &s->labels, error))
    return FALSE;
  if (rows != FASHION_SIDE || cols != FASHION_SIDE)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   "%s: images of %d x %d pixels, Fashion-MNIST has %d x %d",
                   s->images_path, rows, cols, FASHION_SIDE, FASHION_SIDE);
      return FALSE;
    }
  for (int i = 0; i < s->n; i++)
    if (s->labels[i] >= FASHION_CLASSES)
      {
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                     "%s: label %d of sample %d, Fashion-MNIST has classes "
                     "0 to %d", s->labels_path, s->labels[i], i,
                     FASHION_CLASSES - 1);
        return FALSE;
      }
  return TRUE;
}

/* Thread body: reads the FashionSplit `data`; returns NULL or the error. */
static gpointer
fashion_split_read_thread (gpointer data)
{
  GError *error = NULL;
  fashion_split_read (data, &error);
  return error;
}

/* hist[v] = number of bytes equal to v among p[0..n).  Four interleaved
 * tables, so that runs of equal bytes (the black background of every image)
 * do not serialise on one counter's load-increment-store; their 32-bit
 * counters are added into hist every HISTOGRAM_FLUSH bytes, before they can
 * overflow. */
#define HISTOGRAM_FLUSH ((gsize) 1 << 30)

static void
byte_histogram (const guint8 *p, gsize n, guint64 hist[256])
{
  memset (hist, 0, 256 * sizeof (guint64));
  for (gsize lo = 0; lo < n; lo += HISTOGRAM_FLUSH)
    {
      guint32 part[4][256] = { { 0 } };
      gsize hi = MIN (n, lo + HISTOGRAM_FLUSH), i = lo;
      for (; i + 4 <= hi; i += 4)
        {
          part[0][p[i]]++;
          part[1][p[i + 1]]++;
          part[2][p[i + 2]]++;
          part[3][p[i + 3]]++;
        }
      for (; i < hi; i++)
        part[0][p[i]]++;
      for (int t = 0; t < 4; t++)
        for (int v = 0; v < 256; v++)
          hist[v] += part[t][v];
    }
}

/* Loads Fashion-MNIST as described in kernels.h and docs/kernels.md from
 * `dir` (NULL = /usr/share/datasets/fashion-mnist), which must hold
 * {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz.  On success *train and
 * *test receive new data sets (d = 784, k = 10) owned by the caller; either
 * pointer may be NULL, in which case that split is not returned (the
 * training split is still read, since it fixes the normalisation; the test
 * split is then not read at all).  Every file is looked for before any is
 * read.  On failure nothing is returned and *error names the file. */
/* The sample count of one split from its two headers, which must agree and
 * describe 28 x 28 images. */
static gboolean
fashion_split_count (FashionSplit *s, int *n, GError **error)
{
  guint32 idims[3], ldims[1];
  g_autoptr (GInputStream) images =
    idx_open_header (s->images_path, IDX_MAGIC_IMAGES, idims, error);
  if (images == NULL)
    return FALSE;
  g_autoptr (GInputStream) labels =
    idx_open_header (s->labels_path, IDX_MAGIC_LABELS, ldims, error);
  if (labels == NULL)
    return FALSE;
  if (idims[1] != FASHION_SIDE || idims[2] != FASHION_SIDE)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   "%s: images of %u x %u pixels, Fashion-MNIST has %d x %d",
                   s->images_path, idims[1], idims[2], FASHION_SIDE, FASHION_SIDE);
      return FALSE;
    }
  if (ldims[0] != idims[0] || idims[0] > G_MAXINT)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   "%s holds %u labels but %s holds %u images",
                   s->labels_path, ldims[0], s->images_path, idims[0]);
      return FALSE;
    }
  *n = (int) idims[0];
  return TRUE;
}

gboolean
kern_dataset_fashion_mnist_sizes (const char *dir, int *n_train, int *n_test,
                                  GError **error)
{
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  if (dir == NULL)
    dir = FASHION_DEFAULT_DIR;
  g_auto (FashionSplit) tr = { 0 }, te = { 0 };
  return fashion_split_locate (&tr, dir, "train", error)
         && fashion_split_locate (&te, dir, "t10k", error)
         && fashion_split_count (&tr, n_train, error)
         && fashion_split_count (&te, n_test, error);
}

gboolean
kern_dataset_fashion_mnist (const char *dir, KernDataset **train,
                            KernDataset **test, GError **error)
{
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  if (dir == NULL)
    dir = FASHION_DEFAULT_DIR;

  g_auto (FashionSplit) tr = { 0 }, te = { 0 };
  if (!fashion_split_locate (&tr, dir, "train", error)
      || !fashion_split_locate (&te, dir, "t10k", error))
    return FALSE;
  /* The test split decompresses on a second thread meanwhile. */
  GThread *reader = NULL;
  if (test != NULL)
    reader = g_thread_new ("fashion-mnist-test", fashion_split_read_thread, &te);
  gboolean train_ok = fashion_split_read (&tr, error);
  GError *test_error = reader != NULL ? g_thread_join (reader) : NULL;
  if (!train_ok)
    {
      g_clear_error (&test_error);
      return FALSE;
    }
  if (test_error != NULL)
    {
      g_propagate_error (error, test_error);
      return FALSE;
    }

  /* Mean and (population) standard deviation of p / 255 over every
   * training pixel, from the histogram of byte values. */
  if (tr.n == 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   "%s: no training images", tr.images_path);
      return FALSE;
    }
  gsize n_pixels = (gsize) tr.n * FASHION_SIDE * FASHION_SIDE;
  guint64 hist[256];
  byte_histogram (tr.pixels, n_pixels, hist);
  double mean = 0.0, var = 0.0;
  for (int v = 0; v < 256; v++)
    mean += (double) hist[v] * (v / 255.0);
  mean /= (double) n_pixels;
  for (int v = 0; v < 256; v++)
    var += (double) hist[v] * (v / 255.0 - mean) * (v / 255.0 - mean);
  var /= (double) n_pixels;
  if (!(var > 0.0))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   "%s: every training pixel has the same value, so the "
                   "pixels cannot be scaled to unit variance", tr.images_path);
      return FALSE;
    }
  double std = sqrt (var);

  float lut[256];
  for (int v = 0; v < 256; v++)
    lut[v] = (float) ((v / 255.0 - mean) / std);

  int d = FASHION_SIDE * FASHION_SIDE;
  if (train != NULL)
    *train = dataset_from_bytes (tr.n, d, FASHION_CLASSES, tr.pixels, tr.labels, lut);
  if (test != NULL)
    *test = dataset_from_bytes (te.n, d, FASHION_CLASSES, te.pixels, te.labels, lut);
  return TRUE;
}
