/*
 * test-data.c — data sets from files.
 *
 * IDX loading is checked on small files this program writes itself, plain
 * and gzip-compressed, with known pixels and labels, and on broken ones (bad
 * magic, truncated, count mismatch, trailing bytes, missing), whose errors
 * must name the file.  The Fashion-MNIST loader is checked on a synthetic
 * directory, where the normalisation is compared with its formula, and on
 * the real data set of Debian's dataset-fashion-mnist package, which must be
 * installed: its absence fails the test rather than skipping it.
 */
#include "config.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"

/* --- files ----------------------------------------------------------------- */

typedef struct {
  char *dir;      /* temporary folder, removed with its contents */
} Fixture;

static void
fixture_setup (Fixture *fx, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  fx->dir = g_dir_make_tmp ("dtsim-test-data-XXXXXX", &error);
  g_assert_no_error (error);
}

static void
fixture_teardown (Fixture *fx, gconstpointer data)
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
test_idx_plain (Fixture *fx, gconstpointer data)
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
test_idx_gzip (Fixture *fx, gconstpointer data)
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
test_idx_bad_magic (Fixture *fx, gconstpointer data)
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
test_idx_truncated (Fixture *fx, gconstpointer data)
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
test_idx_count_mismatch (Fixture *fx, gconstpointer data)
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
test_idx_malformed (Fixture *fx, gconstpointer data)
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
test_idx_missing (Fixture *fx, gconstpointer data)
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
test_fashion_missing (Fixture *fx, gconstpointer data)
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
test_fashion_normalisation (Fixture *fx, gconstpointer data)
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
test_fashion_shape (Fixture *fx, gconstpointer data)
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

  return g_test_run ();
}
