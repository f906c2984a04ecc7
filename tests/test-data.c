/*
 * test-data.c — data sets from files, and their partitioning across workers.
 *
 * IDX loading is checked on small files this program writes itself, plain
 * and gzip-compressed, with known pixels and labels, and on broken ones (bad
 * magic, truncated, count mismatch, trailing bytes, missing), whose errors
 * must name the file.  The Fashion-MNIST loader is checked on a synthetic
 * directory, where the normalisation is compared with its formula, and on
 * the real data set of Debian's dataset-fashion-mnist package, which must be
 * installed: its absence fails the test rather than skipping it.
 *
 * Partitions: `iid` parts cover every sample exactly once; `by-label` parts
 * are disjoint, cover every sample, hold at most classes_per_worker labels
 * each, and depend only on the seed.
 */
#include "config.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "policies/policy.h"

/* --- files ----------------------------------------------------------------- */

typedef struct {
  char *dir;      /* temporary folder, removed with its contents */
} Fixture;

static void
fixture_setup (Fixture *fx, gconstpointer data G_GNUC_UNUSED)
{
  g_autoptr (GError) error = NULL;
  fx->dir = g_dir_make_tmp ("dtsim-test-data-XXXXXX", &error);
  g_assert_no_error (error);
}

static void
fixture_teardown (Fixture *fx, gconstpointer data G_GNUC_UNUSED)
{
  g_autoptr (GDir) d = g_dir_open (fx->dir, 0, NULL);
  const char *name;
  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (fx->dir, name, NULL);
      g_assert_cmpint (g_unlink (path), ==, 0);
    }
  g_assert_cmpint (g_rmdir (fx->dir), ==, 0);
  g_free (fx->dir);
}

/* The bytes of an IDX file: big-endian magic and dims, then len data bytes. */
static GByteArray *
idx_bytes (guint32 magic, const guint32 *dims, int n_dims,
           const guint8 *data, gsize len)
{
  GByteArray *b = g_byte_array_new ();
  guint32 be = GUINT32_TO_BE (magic);
  g_byte_array_append (b, (const guint8 *) &be, 4);
  for (int i = 0; i < n_dims; i++)
    {
      be = GUINT32_TO_BE (dims[i]);
      g_byte_array_append (b, (const guint8 *) &be, 4);
    }
  g_byte_array_append (b, data, (guint) len);
  return b;
}

/* data compressed by GZlibCompressor in gzip format. */
static GBytes *
gzip_bytes (const guint8 *data, gsize len)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GOutputStream) mem = g_memory_output_stream_new_resizable ();
  g_autoptr (GZlibCompressor) z = g_zlib_compressor_new (G_ZLIB_COMPRESSOR_FORMAT_GZIP, -1);
  g_autoptr (GOutputStream) out = g_converter_output_stream_new (mem, G_CONVERTER (z));
  g_assert_true (g_output_stream_write_all (out, data, len, NULL, NULL, &error));
  g_assert_true (g_output_stream_close (out, NULL, &error));
  g_assert_no_error (error);
  return g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (mem));
}

/* Writes len bytes to `name` in the fixture's folder, gzip-compressed if gz;
 * returns the file's path. */
static char *
write_file (Fixture *fx, const char *name, const guint8 *data, gsize len,
            gboolean gz)
{
  g_autoptr (GError) error = NULL;
  char *path = g_build_filename (fx->dir, name, NULL);
  if (gz)
    {
      g_autoptr (GBytes) z = gzip_bytes (data, len);
      gsize zlen;
      const char *zdata = g_bytes_get_data (z, &zlen);
      g_assert_true (g_file_set_contents (path, zdata, (gssize) zlen, &error));
    }
  else
    g_assert_true (g_file_set_contents (path, (const char *) data, (gssize) len, &error));
  g_assert_no_error (error);
  return path;
}

static char *
write_idx (Fixture *fx, const char *name, guint32 magic, const guint32 *dims,
           int n_dims, const guint8 *data, gsize len, gboolean gz)
{
  g_autoptr (GByteArray) b = idx_bytes (magic, dims, n_dims, data, len);
  return write_file (fx, name, b->data, b->len, gz);
}

/* Three 2 x 3 images and their labels; the largest label is 4, so k = 5. */
#define SMALL_N 3
#define SMALL_ROWS 2
#define SMALL_COLS 3
static const guint8 small_pixels[SMALL_N * SMALL_ROWS * SMALL_COLS] = {
  0, 255, 51, 102, 1, 254,
  128, 127, 0, 0, 0, 17,
  255, 255, 255, 3, 200, 99,
};
static const guint8 small_labels[SMALL_N] = { 4, 0, 2 };
static const guint32 small_idims[] = { SMALL_N, SMALL_ROWS, SMALL_COLS };
static const guint32 small_ldims[] = { SMALL_N };

static void
write_small (Fixture *fx, gboolean gz, char **images, char **labels)
{
  const char *ext = gz ? ".gz" : "";
  g_autofree char *iname = g_strdup_printf ("images%s", ext);
  g_autofree char *lname = g_strdup_printf ("labels%s", ext);
  *images = write_idx (fx, iname, 0x803, small_idims, 3, small_pixels,
                       sizeof small_pixels, gz);
  *labels = write_idx (fx, lname, 0x801, small_ldims, 1, small_labels,
                       sizeof small_labels, gz);
}

static void
check_small (const KernDataset *ds)
{
  g_assert_nonnull (ds);
  g_assert_cmpint (ds->n, ==, SMALL_N);
  g_assert_cmpint (ds->d, ==, SMALL_ROWS * SMALL_COLS);
  g_assert_cmpint (ds->k, ==, 4 + 1);
  for (int i = 0; i < SMALL_N; i++)
    g_assert_cmpint (ds->y[i], ==, small_labels[i]);
  for (gsize i = 0; i < sizeof small_pixels; i++)
    g_assert_cmpfloat (ds->x[i], ==, (float) (small_pixels[i] / 255.0));
  g_assert_cmpfloat (ds->x[1], ==, 1.0f);
  g_assert_cmpfloat (ds->x[0], ==, 0.0f);
}

static void
test_idx_plain (Fixture *fx, gconstpointer data G_GNUC_UNUSED)
{
  g_autofree char *images = NULL, *labels = NULL;
  write_small (fx, FALSE, &images, &labels);
  g_autoptr (GError) error = NULL;
  KernDataset *ds = kern_dataset_idx_load (images, labels, &error);
  g_assert_no_error (error);
  check_small (ds);
  kern_dataset_free (ds);
}

/* gzip files give the same data set, and plain and gzip files mix. */
static void
test_idx_gzip (Fixture *fx, gconstpointer data G_GNUC_UNUSED)
{
  g_autofree char *images = NULL, *labels = NULL;
  g_autofree char *pimages = NULL, *plabels = NULL;
  write_small (fx, TRUE, &images, &labels);
  write_small (fx, FALSE, &pimages, &plabels);
  /* really compressed: starts with the gzip magic */
  g_autofree char *head = NULL;
  g_assert_true (g_file_get_contents (images, &head, NULL, NULL));
  g_assert_cmpint ((guint8) head[0], ==, 0x1f);
  g_assert_cmpint ((guint8) head[1], ==, 0x8b);

  g_autoptr (GError) error = NULL;
  KernDataset *ds = kern_dataset_idx_load (images, labels, &error);
  g_assert_no_error (error);
  check_small (ds);
  kern_dataset_free (ds);
  ds = kern_dataset_idx_load (images, plabels, &error);
  g_assert_no_error (error);
  check_small (ds);
  kern_dataset_free (ds);
  ds = kern_dataset_idx_load (pimages, labels, &error);
  g_assert_no_error (error);
  check_small (ds);
  kern_dataset_free (ds);
}

/* Loading fails with `code` and a message that contains `path` and `what`. */
static void
expect_error (const char *images, const char *labels, int code,
              const char *path, const char *what)
{
  g_autoptr (GError) error = NULL;
  KernDataset *ds = kern_dataset_idx_load (images, labels, &error);
  g_assert_null (ds);
  g_assert_error (error, G_IO_ERROR, code);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, path));
  g_assert_nonnull (strstr (error->message, what));
}

static void
test_idx_bad_magic (Fixture *fx, gconstpointer data G_GNUC_UNUSED)
{
  g_autofree char *images = NULL, *labels = NULL;
  write_small (fx, FALSE, &images, &labels);
  /* the two files swapped: each has the other's magic */
  expect_error (labels, images, G_IO_ERROR_INVALID_DATA, labels, "magic");
  /* int32 pixels (type 0x0c) */
  g_autofree char *ints = write_idx (fx, "ints.gz", 0xc03, small_idims, 3,
                                     small_pixels, sizeof small_pixels, TRUE);
  expect_error (ints, labels, G_IO_ERROR_INVALID_DATA, ints, "0x00000c03");
  g_autofree char *bad_labels = write_idx (fx, "bad-labels", 0x803, small_idims, 3,
                                           small_pixels, sizeof small_pixels, FALSE);
  expect_error (images, bad_labels, G_IO_ERROR_INVALID_DATA, bad_labels, "0x00000801");
}

static void
test_idx_truncated (Fixture *fx, gconstpointer data G_GNUC_UNUSED)
{
  g_autofree char *images = NULL, *labels = NULL;
  write_small (fx, FALSE, &images, &labels);
  for (int gz = 0; gz <= 1; gz++)
    {
      /* one pixel short */
      g_autofree char *short_images =
        write_idx (fx, gz ? "short.gz" : "short", 0x803, small_idims, 3,
                   small_pixels, sizeof small_pixels - 1, gz);
      expect_error (short_images, labels, G_IO_ERROR_INVALID_DATA, short_images,
                    "truncated");
      /* one label short */
      g_autofree char *short_labels =
        write_idx (fx, gz ? "short-labels.gz" : "short-labels", 0x801, small_ldims,
                   1, small_labels, SMALL_N - 1, gz);
      expect_error (images, short_labels, G_IO_ERROR_INVALID_DATA, short_labels,
                    "truncated");
      /* the header cut after the first dimension */
      g_autoptr (GByteArray) b = idx_bytes (0x803, small_idims, 3, NULL, 0);
      g_autofree char *short_head =
        write_file (fx, gz ? "head.gz" : "head", b->data, 8, gz);
      expect_error (short_head, labels, G_IO_ERROR_INVALID_DATA, short_head,
                    "header");
    }
  /* a gzip stream cut in its middle */
  g_autoptr (GByteArray) b = idx_bytes (0x803, small_idims, 3, small_pixels,
                                        sizeof small_pixels);
  g_autoptr (GBytes) z = gzip_bytes (b->data, b->len);
  gsize zlen;
  const guint8 *zdata = g_bytes_get_data (z, &zlen);
  g_autofree char *cut = write_file (fx, "cut.gz", zdata, zlen / 2, FALSE);
  expect_error (cut, labels, G_IO_ERROR_INVALID_DATA, cut, "truncated");
  /* every pixel there, but not the gzip trailer (CRC-32 and length) */
  g_autofree char *no_trailer = write_file (fx, "no-trailer.gz", zdata, zlen - 8, FALSE);
  expect_error (no_trailer, labels, G_IO_ERROR_INVALID_DATA, no_trailer, "truncated");
  /* the whole stream with one bit of its CRC-32 (the 4 bytes before the
   * 4-byte length that ends a gzip member) flipped: zlib's check fails */
  g_autofree guint8 *bad = g_memdup2 (zdata, zlen);
  bad[zlen - 5] ^= 0x40;
  g_autofree char *corrupt = write_file (fx, "corrupt.gz", bad, zlen, FALSE);
  g_autoptr (GError) error = NULL;
  g_assert_null (kern_dataset_idx_load (corrupt, labels, &error));
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, corrupt));
}

static void
test_idx_count_mismatch (Fixture *fx, gconstpointer data G_GNUC_UNUSED)
{
  g_autofree char *images = NULL, *labels = NULL;
  write_small (fx, TRUE, &images, &labels);
  const guint32 two[] = { SMALL_N - 1 };
  g_autofree char *labels2 = write_idx (fx, "labels2.gz", 0x801, two, 1,
                                        small_labels, SMALL_N - 1, TRUE);
  expect_error (images, labels2, G_IO_ERROR_INVALID_DATA, labels2, "2 labels");
  expect_error (images, labels2, G_IO_ERROR_INVALID_DATA, images, "3 images");
}

/* Bytes after the declared data, and images of zero pixels, are errors. */
static void
test_idx_malformed (Fixture *fx, gconstpointer data G_GNUC_UNUSED)
{
  g_autofree char *images = NULL, *labels = NULL;
  write_small (fx, FALSE, &images, &labels);
  for (int gz = 0; gz <= 1; gz++)
    {
      g_autoptr (GByteArray) b = idx_bytes (0x801, small_ldims, 1, small_labels,
                                            SMALL_N);
      g_byte_array_append (b, small_labels, 1);
      g_autofree char *longer = write_file (fx, gz ? "long.gz" : "long", b->data,
                                            b->len, gz);
      expect_error (images, longer, G_IO_ERROR_INVALID_DATA, longer,
                    "after the data");
    }
  const guint32 flat[] = { SMALL_N, 0, SMALL_COLS };
  g_autofree char *empty = write_idx (fx, "flat", 0x803, flat, 3, NULL, 0, FALSE);
  expect_error (empty, labels, G_IO_ERROR_INVALID_DATA, empty, "0 x 3");
  /* an empty file */
  g_autofree char *nothing = write_file (fx, "nothing", NULL, 0, FALSE);
  expect_error (nothing, labels, G_IO_ERROR_INVALID_DATA, nothing, "truncated");
}

static void
test_idx_missing (Fixture *fx, gconstpointer data G_GNUC_UNUSED)
{
  g_autofree char *images = NULL, *labels = NULL;
  write_small (fx, FALSE, &images, &labels);
  g_autofree char *none = g_build_filename (fx->dir, "no-such-file.gz", NULL);
  expect_error (none, labels, G_IO_ERROR_NOT_FOUND, none, "");
  expect_error (images, none, G_IO_ERROR_NOT_FOUND, none, "");
}

/* --- Fashion-MNIST ---------------------------------------------------------- */

#define SIDE 28
#define FASHION_INSTALL "apt-get install dataset-fashion-mnist"

static void
test_fashion_missing (Fixture *fx, gconstpointer data G_GNUC_UNUSED)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_build_filename (fx->dir, "not-here", NULL);
  g_autofree char *first = g_build_filename (dir, "train-images-idx3-ubyte.gz", NULL);
  KernDataset *train = NULL, *test = NULL;
  g_assert_false (kern_dataset_fashion_mnist (dir, &train, &test, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
  g_test_message ("%s", error->message);
  g_autofree char *expect =
    g_strdup_printf ("Fashion-MNIST not found at %s: install it with `"
                     FASHION_INSTALL "`", first);
  g_assert_cmpstr (error->message, ==, expect);
  g_assert_null (train);
  g_assert_null (test);

  /* only the last file missing: it is the one named */
  const guint32 idims[] = { 1, SIDE, SIDE }, ldims[] = { 1 };
  guint8 pixels[SIDE * SIDE] = { 0 }, label = 0;
  pixels[0] = 1;
  g_free (write_idx (fx, "train-images-idx3-ubyte.gz", 0x803, idims, 3, pixels,
                     sizeof pixels, TRUE));
  g_free (write_idx (fx, "train-labels-idx1-ubyte.gz", 0x801, ldims, 1, &label, 1, TRUE));
  g_free (write_idx (fx, "t10k-images-idx3-ubyte.gz", 0x803, idims, 3, pixels,
                     sizeof pixels, TRUE));
  g_clear_error (&error);
  g_assert_false (kern_dataset_fashion_mnist (fx->dir, &train, &test, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
  g_autofree char *last = g_build_filename (fx->dir, "t10k-labels-idx1-ubyte.gz", NULL);
  g_assert_nonnull (strstr (error->message, last));
  g_assert_nonnull (strstr (error->message, FASHION_INSTALL));
}

/* A synthetic Fashion-MNIST directory: each pixel becomes (p / 255 - mean) /
 * std, mean and std (population) over the training pixels, for both
 * splits. */
static void
test_fashion_normalisation (Fixture *fx, gconstpointer data G_GNUC_UNUSED)
{
  enum { N_TRAIN = 3, N_TEST = 2, D = SIDE * SIDE };
  static guint8 tr[N_TRAIN * D], te[N_TEST * D];
  const guint8 tr_labels[N_TRAIN] = { 3, 9, 0 }, te_labels[N_TEST] = { 7, 7 };
  for (int i = 0; i < N_TRAIN * D; i++)
    tr[i] = (guint8) ((i * 7) % 256 * (i % 3 != 0));
  for (int i = 0; i < N_TEST * D; i++)
    te[i] = (guint8) ((i * 11 + 5) % 256);
  const guint32 tr_dims[] = { N_TRAIN, SIDE, SIDE }, te_dims[] = { N_TEST, SIDE, SIDE };
  const guint32 tr_ldims[] = { N_TRAIN }, te_ldims[] = { N_TEST };
  g_free (write_idx (fx, "train-images-idx3-ubyte.gz", 0x803, tr_dims, 3, tr, sizeof tr, TRUE));
  g_free (write_idx (fx, "train-labels-idx1-ubyte.gz", 0x801, tr_ldims, 1, tr_labels,
                     N_TRAIN, TRUE));
  g_free (write_idx (fx, "t10k-images-idx3-ubyte.gz", 0x803, te_dims, 3, te, sizeof te, TRUE));
  g_free (write_idx (fx, "t10k-labels-idx1-ubyte.gz", 0x801, te_ldims, 1, te_labels,
                     N_TEST, TRUE));

  double mean = 0.0, var = 0.0;
  for (int i = 0; i < N_TRAIN * D; i++)
    mean += tr[i] / 255.0;
  mean /= N_TRAIN * D;
  for (int i = 0; i < N_TRAIN * D; i++)
    var += (tr[i] / 255.0 - mean) * (tr[i] / 255.0 - mean);
  double std = sqrt (var / (N_TRAIN * D));

  KernDataset *train = NULL, *test = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (kern_dataset_fashion_mnist (fx->dir, &train, &test, &error));
  g_assert_no_error (error);
  g_assert_cmpint (train->n, ==, N_TRAIN);
  g_assert_cmpint (test->n, ==, N_TEST);
  g_assert_cmpint (train->d, ==, D);
  g_assert_cmpint (test->d, ==, D);
  g_assert_cmpint (train->k, ==, 10);
  g_assert_cmpint (test->k, ==, 10);
  for (int i = 0; i < N_TRAIN; i++)
    g_assert_cmpint (train->y[i], ==, tr_labels[i]);
  for (int i = 0; i < N_TEST; i++)
    g_assert_cmpint (test->y[i], ==, te_labels[i]);
  /* float rounding of the result only: 1e-6 relative, values are O(1) */
  for (int i = 0; i < N_TRAIN * D; i++)
    g_assert_cmpfloat_with_epsilon (train->x[i], (tr[i] / 255.0 - mean) / std, 1e-6);
  for (int i = 0; i < N_TEST * D; i++)
    g_assert_cmpfloat_with_epsilon (test->x[i], (te[i] / 255.0 - mean) / std, 1e-6);
  kern_dataset_free (train);
  kern_dataset_free (test);

  /* the test split is optional and the training split may be dropped */
  train = NULL;
  g_assert_true (kern_dataset_fashion_mnist (fx->dir, &train, NULL, &error));
  g_assert_cmpint (train->n, ==, N_TRAIN);
  kern_dataset_free (train);
  test = NULL;
  g_assert_true (kern_dataset_fashion_mnist (fx->dir, NULL, &test, &error));
  g_assert_cmpint (test->n, ==, N_TEST);
  kern_dataset_free (test);
}

/* Images other than 28 x 28 and labels outside [0, 10) are errors naming
 * the file. */
static void
test_fashion_shape (Fixture *fx, gconstpointer data G_GNUC_UNUSED)
{
  const guint32 idims[] = { 1, SIDE, SIDE - 1 }, ldims[] = { 1 };
  const guint32 good_dims[] = { 1, SIDE, SIDE };
  static guint8 pixels[SIDE * SIDE];
  guint8 label = 10;
  pixels[5] = 9;
  g_autofree char *images = write_idx (fx, "train-images-idx3-ubyte.gz", 0x803, idims,
                                       3, pixels, SIDE * (SIDE - 1), TRUE);
  g_autofree char *labels = write_idx (fx, "train-labels-idx1-ubyte.gz", 0x801, ldims,
                                       1, &label, 1, TRUE);
  g_free (write_idx (fx, "t10k-images-idx3-ubyte.gz", 0x803, good_dims, 3, pixels,
                     sizeof pixels, TRUE));
  g_free (write_idx (fx, "t10k-labels-idx1-ubyte.gz", 0x801, ldims, 1, &label, 1, TRUE));

  g_autoptr (GError) error = NULL;
  KernDataset *train = NULL, *test = NULL;
  g_assert_false (kern_dataset_fashion_mnist (fx->dir, &train, &test, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, images));
  g_assert_nonnull (strstr (error->message, "28 x 27"));

  g_free (write_idx (fx, "train-images-idx3-ubyte.gz", 0x803, good_dims, 3, pixels,
                     sizeof pixels, TRUE));
  g_clear_error (&error);
  g_assert_false (kern_dataset_fashion_mnist (fx->dir, &train, &test, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, labels));
  g_assert_nonnull (strstr (error->message, "label 10"));
  g_assert_null (train);
  g_assert_null (test);
}

/* The packaged data set (CI installs it; missing, this test fails). */
static void
test_fashion_real (void)
{
  KernDataset *train = NULL, *test = NULL;
  g_autoptr (GError) error = NULL;
  gint64 t0 = g_get_monotonic_time ();
  gboolean ok = kern_dataset_fashion_mnist (NULL, &train, &test, &error);
  g_assert_no_error (error);
  g_assert_true (ok);
  g_test_message ("loaded in %.3f s", (g_get_monotonic_time () - t0) / 1e6);

  g_assert_cmpint (train->n, ==, 60000);
  g_assert_cmpint (test->n, ==, 10000);
  g_assert_cmpint (train->d, ==, 28 * 28);
  g_assert_cmpint (test->d, ==, 28 * 28);
  g_assert_cmpint (train->k, ==, 10);
  g_assert_cmpint (test->k, ==, 10);
  int count_tr[10] = { 0 }, count_te[10] = { 0 };
  for (int i = 0; i < train->n; i++)
    count_tr[train->y[i]]++;
  for (int i = 0; i < test->n; i++)
    count_te[test->y[i]]++;
  for (int c = 0; c < 10; c++)
    {
      g_assert_cmpint (count_tr[c], ==, 60000 / 10);
      g_assert_cmpint (count_te[c], ==, 10000 / 10);
    }

  /* normalised training pixels: mean 0 and standard deviation 1, up to the
   * float rounding of each value (relative 6e-8) */
  gsize np = (gsize) train->n * (gsize) train->d;
  double sum = 0.0, sq = 0.0;
  float lo = INFINITY, lo_test = INFINITY;
  for (gsize i = 0; i < np; i++)
    {
      sum += train->x[i];
      sq += (double) train->x[i] * train->x[i];
      lo = MIN (lo, train->x[i]);
    }
  double mean = sum / (double) np;
  double std = sqrt (sq / (double) np - mean * mean);
  g_test_message ("training pixels after normalisation: mean %.3g, std %.9f", mean, std);
  g_assert_cmpfloat_with_epsilon (mean, 0.0, 1e-6);
  g_assert_cmpfloat_with_epsilon (std, 1.0, 1e-6);
  /* a black pixel is -mean/std of the raw pixels, whose published values
   * are 0.2860 and 0.3530 */
  g_assert_cmpfloat_with_epsilon (lo, -0.2860 / 0.3530, 1e-3);
  /* the test split is scaled with the training statistics */
  for (gsize i = 0; i < (gsize) test->n * (gsize) test->d; i++)
    lo_test = MIN (lo_test, test->x[i]);
  g_assert_cmpfloat (lo_test, ==, lo);

  kern_dataset_free (train);
  kern_dataset_free (test);
}

/* --- partitions ------------------------------------------------------------- */

/* Asserts the parts of s (workers) are non-empty, disjoint and cover
 * [0, n) exactly. */
static void
check_cover (const TrainSampler *s, int workers, int n)
{
  g_autofree int *seen = g_new0 (int, n);
  for (int w = 0; w < workers; w++)
    {
      g_assert_cmpint (s[w].len, >, 0);
      for (int i = 0; i < s[w].len; i++)
        {
          g_assert_cmpint (s[w].idx[i], >=, 0);
          g_assert_cmpint (s[w].idx[i], <, n);
          seen[s[w].idx[i]]++;
        }
    }
  for (int i = 0; i < n; i++)
    g_assert_cmpint (seen[i], ==, 1);
}

/* Distinct labels in worker w's part. */
static int
part_labels (const TrainSampler *s, const int *labels, int k)
{
  g_autofree gboolean *has = g_new0 (gboolean, k);
  int distinct = 0;
  for (int i = 0; i < s->len; i++)
    if (!has[labels[s->idx[i]]])
      has[labels[s->idx[i]]] = TRUE, distinct++;
  return distinct;
}

static void
test_partition_parse (void)
{
  TrainPartition p = TRAIN_PARTITION_BY_LABEL;
  g_assert_true (train_partition_parse ("iid", &p));
  g_assert_cmpint (p, ==, TRAIN_PARTITION_IID);
  g_assert_true (train_partition_parse ("by-label", &p));
  g_assert_cmpint (p, ==, TRAIN_PARTITION_BY_LABEL);
  const char *bad[] = { "", "IID", "by_label", "bylabel", "by-label ", "non-iid" };
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_assert_false (train_partition_parse (bad[i], &p));
      g_assert_cmpint (p, ==, TRAIN_PARTITION_BY_LABEL);   /* untouched */
    }
  g_assert_cmpstr (train_partition_name (TRAIN_PARTITION_IID), ==, "iid");
  g_assert_cmpstr (train_partition_name (TRAIN_PARTITION_BY_LABEL), ==, "by-label");
}

/* iid: parts cover every sample once, worker w holding n (w + 1) / W -
 * n w / W of them; a pass of train_sampler_next draws the part once. */
static void
test_partition_iid (void)
{
  const int sizes[][2] = { { 1000, 4 }, { 1001, 3 }, { 7, 7 }, { 60000, 16 } };
  for (gsize c = 0; c < G_N_ELEMENTS (sizes); c++)
    {
      int n = sizes[c][0], W = sizes[c][1];
      TrainSampler *s = train_samplers_new (n, W, 5);
      check_cover (s, W, n);
      for (int w = 0; w < W; w++)
        g_assert_cmpint (s[w].len, ==, n * (w + 1) / W - n * w / W);

      g_autofree int *draw = g_new (int, s[0].len);
      g_autofree int *part = g_memdup2 (s[0].idx, sizeof (int) * (gsize) s[0].len);
      train_sampler_next (&s[0], s[0].len, draw);
      g_autofree int *seen = g_new0 (int, n);
      for (int i = 0; i < s[0].len; i++)
        seen[draw[i]]++;
      for (int i = 0; i < s[0].len; i++)
        g_assert_cmpint (seen[part[i]], ==, 1);
      train_samplers_free (s, W);
    }
}

/* Labels of n samples, class c having count[c] of them, in an interleaved
 * order (so that the partition's sort has work to do). */
static int *
make_labels (const int *count, int k, int *n_out)
{
  int n = 0;
  for (int c = 0; c < k; c++)
    n += count[c];
  int *labels = g_new (int, n);
  g_autofree int *left = g_memdup2 (count, sizeof (int) * (gsize) k);
  for (int i = 0, c = 0; i < n; c = (c + 1) % k)
    if (left[c] > 0)
      {
        labels[i++] = c;
        left[c]--;
      }
  *n_out = n;
  return labels;
}

/* by-label: for balanced and unbalanced classes (one class absent), parts
 * are disjoint, cover every sample, and hold at most classes_per_worker
 * labels each, the bound the single-label shards guarantee. */
static void
test_partition_by_label_bound (void)
{
  const int balanced[10] = { 100, 100, 100, 100, 100, 100, 100, 100, 100, 100 };
  const int skewed[6] = { 500, 3, 0, 41, 250, 17 };
  const struct { const int *count; int k, workers, per_worker; } cases[] = {
    { balanced, 10, 5, 2 }, { balanced, 10, 10, 1 }, { balanced, 10, 3, 4 },
    { balanced, 10, 7, 3 }, { balanced, 10, 1, 10 }, { balanced, 10, 100, 2 },
    { skewed, 6, 5, 1 }, { skewed, 6, 2, 3 }, { skewed, 6, 4, 2 },
    { skewed, 6, 50, 4 }, { skewed, 6, 5, 12 },
  };
  for (gsize t = 0; t < G_N_ELEMENTS (cases); t++)
    {
      int n, W = cases[t].workers, c = cases[t].per_worker, k = cases[t].k;
      g_autofree int *labels = make_labels (cases[t].count, k, &n);
      for (guint64 seed = 1; seed <= 3; seed++)
        {
          TrainSampler *s = train_samplers_new_by_label (labels, n, k, W, c, seed);
          g_assert_nonnull (s);
          check_cover (s, W, n);
          for (int w = 0; w < W; w++)
            g_assert_cmpint (part_labels (&s[w], labels, k), <=, c);
          train_samplers_free (s, W);
        }
    }
}

/* The McMahan et al. case: 10 balanced classes of 100, 10 workers x 2
 * shards: 20 single-class shards of 1000 / 20 = 50 samples, so every part
 * holds 100 samples of at most 2 labels, 50 of each. */
static void
test_partition_by_label_shards (void)
{
  const int count[10] = { 100, 100, 100, 100, 100, 100, 100, 100, 100, 100 };
  int n;
  g_autofree int *labels = make_labels (count, 10, &n);
  const int W = 10, c = 2;
  TrainSampler *s = train_samplers_new_by_label (labels, n, 10, W, c, 42);
  int two = 0;
  for (int w = 0; w < W; w++)
    {
      g_assert_cmpint (s[w].len, ==, n / W);
      int per[10] = { 0 };
      for (int i = 0; i < s[w].len; i++)
        per[labels[s[w].idx[i]]]++;
      for (int l = 0; l < 10; l++)
        g_assert_true (per[l] == 0 || per[l] == n / (W * c) || per[l] == 2 * n / (W * c));
      two += (part_labels (&s[w], labels, 10) == 2);
    }
  g_test_message ("%d of %d workers hold two classes", two, W);
  g_assert_cmpint (two, >, 0);

  /* batches come from the worker's part only, and a pass draws it all */
  g_autofree int *draw = g_new (int, 3 * s[3].len);
  train_sampler_next (&s[3], 3 * s[3].len, draw);
  for (int p = 0; p < 3; p++)
    {
      g_autofree int *seen = g_new0 (int, n);
      for (int i = 0; i < s[3].len; i++)
        seen[draw[p * s[3].len + i]]++;
      for (int i = 0; i < s[3].len; i++)
        g_assert_cmpint (seen[s[3].idx[i]], ==, 1);
    }
  train_samplers_free (s, W);
}

/* Same seed, same parts (and same batches); another seed, other parts. */
static void
test_partition_by_label_deterministic (void)
{
  const int count[5] = { 300, 120, 77, 300, 203 };
  int n;
  g_autofree int *labels = make_labels (count, 5, &n);
  const int W = 6, c = 2;
  TrainSampler *a = train_samplers_new_by_label (labels, n, 5, W, c, 9);
  TrainSampler *b = train_samplers_new_by_label (labels, n, 5, W, c, 9);
  TrainSampler *other = train_samplers_new_by_label (labels, n, 5, W, c, 10);
  int differ = 0;
  for (int w = 0; w < W; w++)
    {
      g_assert_cmpint (a[w].len, ==, b[w].len);
      g_assert_cmpmem (a[w].idx, sizeof (int) * a[w].len, b[w].idx, sizeof (int) * b[w].len);
      differ += other[w].len != a[w].len
        || memcmp (other[w].idx, a[w].idx, sizeof (int) * a[w].len) != 0;
      int da[64], db[64];
      train_sampler_next (&a[w], 64, da);
      train_sampler_next (&b[w], 64, db);
      g_assert_cmpmem (da, sizeof da, db, sizeof db);
    }
  g_assert_cmpint (differ, >, 0);
  train_samplers_free (a, W);
  train_samplers_free (b, W);
  train_samplers_free (other, W);
}

/* Fewer shards than classes present cannot cover the set with at most
 * classes_per_worker labels a worker: a precondition failure. */
static void
test_partition_by_label_too_few_shards (void)
{
  if (g_test_subprocess ())
    {
      const int count[5] = { 10, 10, 10, 10, 10 };
      int n;
      g_autofree int *labels = make_labels (count, 5, &n);
      g_assert_null (train_samplers_new_by_label (labels, n, 5, 2, 2, 1));
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*present <= S*");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

#define ADD_FX(path, fn) \
  g_test_add (path, Fixture, NULL, fixture_setup, fn, fixture_teardown)
  ADD_FX ("/data/idx/plain", test_idx_plain);
  ADD_FX ("/data/idx/gzip", test_idx_gzip);
  ADD_FX ("/data/idx/bad-magic", test_idx_bad_magic);
  ADD_FX ("/data/idx/truncated", test_idx_truncated);
  ADD_FX ("/data/idx/count-mismatch", test_idx_count_mismatch);
  ADD_FX ("/data/idx/malformed", test_idx_malformed);
  ADD_FX ("/data/idx/missing", test_idx_missing);
  ADD_FX ("/data/fashion-mnist/missing", test_fashion_missing);
  ADD_FX ("/data/fashion-mnist/normalisation", test_fashion_normalisation);
  ADD_FX ("/data/fashion-mnist/shape", test_fashion_shape);
#undef ADD_FX
  g_test_add_func ("/data/fashion-mnist/real", test_fashion_real);
  g_test_add_func ("/data/partition/parse", test_partition_parse);
  g_test_add_func ("/data/partition/iid", test_partition_iid);
  g_test_add_func ("/data/partition/by-label/bound", test_partition_by_label_bound);
  g_test_add_func ("/data/partition/by-label/shards", test_partition_by_label_shards);
  g_test_add_func ("/data/partition/by-label/deterministic",
                   test_partition_by_label_deterministic);
  g_test_add_func ("/data/partition/by-label/too-few-shards",
                   test_partition_by_label_too_few_shards);

  return g_test_run ();
}
