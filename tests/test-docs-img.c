/*
 * test-docs-img.c — the README's figures are what the scenarios draw today.
 *
 * Each image of docs/img/ is one figure of one shipped scenario.  Run as a
 * test (make check), this runs those scenarios, has `dtsim plot` compute
 * the digest of every figure (its template, variables and data at six
 * significant digits: what the figure shows, not the bytes of a PNG, which
 * gnuplot and its fonts change) and fails, naming the images, when one
 * differs from docs/img/digests.txt.  Run with --write (`make docs-img`),
 * it draws the figures and writes the images and digests.txt anew.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <string.h>

#include "views/plot.h"
#include "tests/util.h"

/* The README's images: file in docs/img/, scenario, figure of dtsim plot. */
static const struct {
  const char *image, *scenario, *figure;
} images[] = {
  { "consistency-timeline-bsp.png", "consistency", "timeline-run1" },
  { "consistency-accuracy-time.png", "consistency", "accuracy-time" },
  { "staleness-sweep-loss-time.png", "staleness-sweep", "loss-time" },
  { "amdahl-speedup.png", "amdahl", "speedup" },
  { "stragglers-breakdown.png", "stragglers", "breakdown" },
  { "ring-vs-ps-iteration-time.png", "ring-vs-ps", "iteration-time" },
  { "pipeline-timeline-1f1b.png", "pipeline", "timeline-run8" },
  { "backup-workers-time-to-target.png", "backup-workers", "time-to-target" },
};

static gboolean write_mode;
static char *tmpdir;

typedef struct {
  GHashTable *digest;   /* "scenario/figure" -> digest */
  GHashTable *path;     /* "scenario/figure" -> drawn file */
  const char *scenario;
} Drawn;

static void
on_figure (gpointer ctx, const char *figure, const char *path, const char *digest)
{
  Drawn *d = ctx;
  char *key = g_strdup_printf ("%s/%s", d->scenario, figure);
  g_hash_table_insert (d->digest, key, g_strdup (digest));
  g_hash_table_insert (d->path, g_strdup (key), g_strdup (path));
}

static void
on_other (gpointer ctx G_GNUC_UNUSED, const char *a G_GNUC_UNUSED, const char *b G_GNUC_UNUSED)
{
}

static void
on_note (gpointer ctx G_GNUC_UNUSED, const char *line G_GNUC_UNUSED)
{
}

/* Runs every scenario the images come from and plots it. */
static void
draw_all (Drawn *d)
{
  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_autoptr (GHashTable) done = g_hash_table_new (g_str_hash, g_str_equal);
  for (gsize i = 0; i < G_N_ELEMENTS (images); i++)
    {
      const char *s = images[i].scenario;
      if (g_hash_table_contains (done, s))
        continue;
      g_hash_table_add (done, (gpointer) s);
      g_autofree char *ini = g_strdup_printf ("%s/scenarios/%s.ini", src, s);
      g_autofree char *db = g_strdup_printf ("%s/%s.db", tmpdir, s);
      g_autofree char *dir = g_strdup_printf ("%s/%s", tmpdir, s);
      g_autofree char *o = NULL, *e = NULL;
      if (test_run_dtsim (tmpdir, &o, &e, "run", ini, "-o", db, "-q", NULL) != 0)
        g_error ("%s: %s", ini, e);
      g_assert_cmpint (g_mkdir (dir, 0755), ==, 0);
      SimPlotSink sink = { on_figure, on_other, on_note, d, NULL };
      d->scenario = s;
      g_autoptr (GError) error = NULL;
      g_assert_cmpint (sim_plot_to (db, dir, "png", &sink, &error), ==, 0);
    }
}

static void
test_fresh (void)
{
  Drawn d = { g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free),
              g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free), NULL };
  draw_all (&d);
  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_autofree char *list = g_build_filename (src, "docs", "img", "digests.txt", NULL);
  g_autoptr (GString) fresh = g_string_new ("# docs/img: the README's figures and the digest of"
                                            " what each shows (tests/test-docs-img.c);\n"
                                            "# `make docs-img` redraws them and rewrites this"
                                            " file.\n");
  g_autoptr (GString) stale = g_string_new (NULL);
  g_autofree char *kept = NULL;
  g_file_get_contents (list, &kept, NULL, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS (images); i++)
    {
      g_autofree char *key = g_strdup_printf ("%s/%s", images[i].scenario, images[i].figure);
      const char *digest = g_hash_table_lookup (d.digest, key);
      if (!digest)
        g_error ("scenarios/%s.ini no longer draws %s (docs/img/%s)", images[i].scenario,
                 images[i].figure, images[i].image);
      g_autofree char *line = g_strdup_printf ("%s %s\n", images[i].image, digest);
      g_string_append (fresh, line);
      if (write_mode)
        {
          g_autofree char *png = NULL;
          gsize len = 0;
          g_assert_true (g_file_get_contents (g_hash_table_lookup (d.path, key), &png, &len,
                                              NULL));
          g_autofree char *to = g_build_filename (src, "docs", "img", images[i].image, NULL);
          g_assert_true (g_file_set_contents (to, png, (gssize) len, NULL));
          printf ("%s\n", to);
        }
      else if (!kept || !strstr (kept, line))
        g_string_append_printf (stale, " docs/img/%s", images[i].image);
    }
  if (write_mode)
    g_assert_true (g_file_set_contents (list, fresh->str, (gssize) fresh->len, NULL));
  else if (stale->len)
    g_error ("stale README figures:%s; the scenarios now draw something else: run"
             " `make -C build docs-img` and commit the images", stale->str);
  g_hash_table_unref (d.digest);
  g_hash_table_unref (d.path);
}

int
main (int argc, char **argv)
{
  for (int i = 1; i < argc; i++)
    if (strcmp (argv[i], "--write") == 0)
      {
        write_mode = TRUE;
        memmove (argv + i, argv + i + 1, (gsize) (argc - i) * sizeof *argv);
        argc--;
        break;
      }
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-docs-img-XXXXXX", NULL);
  g_test_add_func ("/docs-img/fresh", test_fresh);
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
