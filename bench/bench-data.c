/*
 * bench-data.c — time to load Fashion-MNIST, beside the time GIO and zlib
 * alone take to decompress the same four files.
 *
 * The second figure is what a loader that reads the packaged gzip files one
 * after another through GIO cannot go below; dtsim's loader decompresses the
 * test split on a second thread meanwhile, so the difference between the two
 * is roughly what the statistics and the conversion to normalised floats
 * cost beyond decompression.  Each figure
 * is the best and the median of REPEATS runs in this process.  Printed,
 * never asserted: wall time depends on the machine and its load.
 *
 * Usage: bench-data [DIR]   (DIR defaults to /usr/share/datasets/fashion-mnist)
 */
#include <gio/gio.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/kernels.h"

#define REPEATS 5

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* Seconds to decompress every file of the data set into a scratch buffer;
 * *bytes receives the decompressed size. */
static double
decompress_only (const char *dir, gsize *bytes)
{
  static const char *const names[] = {
    "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"
  };
  gsize scratch_len = 1u << 20;
  g_autofree guint8 *scratch = g_malloc (scratch_len);
  gint64 t0 = g_get_monotonic_time ();
  *bytes = 0;
  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *path = g_build_filename (dir, names[i], NULL);
      g_autoptr (GFile) file = g_file_new_for_path (path);
      g_autoptr (GError) error = NULL;
      g_autoptr (GFileInputStream) raw = g_file_read (file, NULL, &error);
      if (raw == NULL)
        g_error ("%s", error->message);
      g_autoptr (GInputStream) buf =
        g_buffered_input_stream_new_sized (G_INPUT_STREAM (raw), 1u << 20);
      g_autoptr (GZlibDecompressor) z =
        g_zlib_decompressor_new (G_ZLIB_COMPRESSOR_FORMAT_GZIP);
      g_autoptr (GInputStream) in = g_converter_input_stream_new (buf, G_CONVERTER (z));
      gssize got;
      while ((got = g_input_stream_read (in, scratch, scratch_len, NULL, &error)) > 0)
        *bytes += (gsize) got;
      if (got < 0)
        g_error ("%s: %s", path, error->message);
    }
  return (g_get_monotonic_time () - t0) / 1e6;
}

static double
load (const char *dir, int *n_train, int *n_test)
{
  KernDataset *train = NULL, *test = NULL;
  g_autoptr (GError) error = NULL;
  gint64 t0 = g_get_monotonic_time ();
  if (!kern_dataset_fashion_mnist (dir, &train, &test, &error))
    g_error ("%s", error->message);
  double s = (g_get_monotonic_time () - t0) / 1e6;
  *n_train = train->n;
  *n_test = test->n;
  kern_dataset_free (train);
  kern_dataset_free (test);
  return s;
}

int
main (int argc, char **argv)
{
  const char *dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  double t_load[REPEATS], t_zlib[REPEATS];
  int n_train = 0, n_test = 0;
  gsize bytes = 0;

  for (int r = 0; r < REPEATS; r++)
    {
      t_load[r] = load (dir, &n_train, &n_test);
      t_zlib[r] = decompress_only (dir, &bytes);
    }
  qsort (t_load, REPEATS, sizeof (double), cmp_double);
  qsort (t_zlib, REPEATS, sizeof (double), cmp_double);

  printf ("Fashion-MNIST (%d train + %d test images, %.1f MB decompressed), "
          "best / median of %d:\n", n_train, n_test, bytes / 1e6, REPEATS);
  printf ("  kern_dataset_fashion_mnist        %.3f s / %.3f s\n",
          t_load[0], t_load[REPEATS / 2]);
  printf ("  GIO + zlib decompression only     %.3f s / %.3f s\n",
          t_zlib[0], t_zlib[REPEATS / 2]);
  return 0;
}
