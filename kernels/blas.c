/*
 * blas.c — the OpenBLAS table of blas.h, filled on first use.
 *
 * One attempt is made, under a GOnce, the first time kern_blas_get is
 * called; its outcome (the table or the reason) is kept for the life of
 * the process, as is the library: the table's pointers live in it.  The
 * library is opened with local binding, so nothing in it interposes on
 * dtsim, and with every symbol bound at once, so that a broken install
 * fails here and not in the middle of a product.
 *
 * The thread count dtsim asks for before the library is open (cli/main.c
 * at start-up, sweep/sweep.c for points run side by side) is remembered and
 * applied the moment it opens, under the same lock, so that the library
 * never runs a product with the count it chose for itself.
 */
#include "config.h"

#include "kernels/blas.h"

#include <gio/gio.h>
#include <gmodule.h>
#include <string.h>

/* The outcome of the one attempt to open the library. */
typedef struct {
  KernBlas table;   /* valid when ok */
  gboolean ok;
  char *message;    /* otherwise why not, one line */
} KernBlasLoad;

static GMutex threads_lock;            /* guards the three below */
static int threads_wanted;             /* 0: none asked for yet */
static gboolean blas_open;             /* the library is open */
static void (*threads_set) (int n);    /* then its openblas_set_num_threads, or NULL */

/* Opens the library and fills l. */
static void
kern_blas_open (KernBlasLoad *l)
{
  const char *env = g_getenv (KERN_BLAS_LIBRARY_ENV);
  const char *path = env != NULL && env[0] != '\0' ? env : DTSIM_BLAS_SONAME;
  l->table.path = g_intern_string (path);

  GModule *module = g_module_open (path, G_MODULE_BIND_LOCAL);
  if (module == NULL)
    {
      /* dlerror () often starts with the file's name: drop it, it is said */
      const char *why = g_module_error ();
      if (g_str_has_prefix (why, path) && g_str_has_prefix (why + strlen (path), ": "))
        why += strlen (path) + 2;
      l->message = g_strdup_printf ("cannot load OpenBLAS (%s): %s; install it "
                                    "(Debian: apt-get install libopenblas0) or set %s to "
                                    "its path",
                                    path, why, KERN_BLAS_LIBRARY_ENV);
      return;
    }
  gpointer sgemm = NULL;
  if (!g_module_symbol (module, "cblas_sgemm", &sgemm) || sgemm == NULL)
    {
      l->message = g_strdup_printf ("%s is not a CBLAS library (no cblas_sgemm); set %s to "
                                    "the path of OpenBLAS (libopenblas.so.0)",
                                    path, KERN_BLAS_LIBRARY_ENV);
      g_module_close (module);
      return;
    }
  l->table.sgemm = (__typeof__ (cblas_sgemm) *) sgemm;
  gpointer sym = NULL;
  if (g_module_symbol (module, "openblas_set_num_threads", &sym))
    l->table.set_num_threads = (void (*) (int)) sym;
  if (g_module_symbol (module, "openblas_get_config", &sym))
    l->table.get_config = (char *(*) (void)) sym;
  if (g_module_symbol (module, "openblas_get_corename", &sym))
    l->table.get_corename = (char *(*) (void)) sym;
  g_module_make_resident (module);
  l->ok = TRUE;

  g_mutex_lock (&threads_lock);
  threads_set = l->table.set_num_threads;
  if (threads_wanted > 0 && threads_set != NULL)
    threads_set (threads_wanted);
  blas_open = TRUE;
  g_mutex_unlock (&threads_lock);
}

static const KernBlasLoad *
kern_blas_load (void)
{
  static KernBlasLoad load;
  static gsize done = 0;
  if (g_once_init_enter (&done))
    {
      kern_blas_open (&load);
      if (load.message != NULL) /* one line, whatever dlerror () said */
        g_strdelimit (load.message, "\r\n", ' ');
      g_once_init_leave (&done, 1);
    }
  return &load;
}

const KernBlas *
kern_blas_get (GError **error)
{
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  const KernBlasLoad *l = kern_blas_load ();
  if (!l->ok)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, l->message);
      return NULL;
    }
  return &l->table;
}

gboolean
kern_blas_loaded (void)
{
  g_mutex_lock (&threads_lock);
  gboolean loaded = blas_open;
  g_mutex_unlock (&threads_lock);
  return loaded;
}

void
kern_blas_set_threads (int n)
{
  g_return_if_fail (n >= 1);
  g_mutex_lock (&threads_lock);
  threads_wanted = n;
  if (threads_set != NULL)
    threads_set (n);
  g_mutex_unlock (&threads_lock);
}
