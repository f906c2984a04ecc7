/*
 * cuda.c — CUDA for the rest of dtsim: the plugin loader behind cuda.h and
 * kern_backend_cuda_new (backend.h).
 *
 * The CUDA runtime and cuBLAS weigh about 200 MB of resident memory once
 * mapped, so they are not linked into dtsim: the CUDA backend is a plugin,
 * dtsim-cuda.so (cuda_plugin.h), opened here the first time CUDA is asked
 * for and kept for the life of the process.  Until then, and in every run
 * on the CPU backend or timing only, no CUDA library is mapped.
 *
 * The plugin is, in this order (docs/kernels.md):
 *   1. the file $DTSIM_CUDA_PLUGIN names, when set (and then only that);
 *   2. dtsim-cuda.so beside the running executable (the build tree: dtsim
 *      and the plugin are both built at its top);
 *   3. dtsim-cuda.so in $(pkglibdir) (where `make install` puts it).
 * A build without CUDA has no plugin and looks for none.
 */
#include "config.h"

#include "kernels/backend.h"
#include "kernels/cuda.h"
#include "kernels/cuda_plugin.h"

#include <gio/gio.h>
#include <gmodule.h>
#include <string.h>

/* The outcome of the one attempt to load the plugin. */
typedef struct {
  const KernCudaPlugin *plugin; /* NULL when it could not be loaded */
  int code;                     /* then why not: a GIOErrorEnum */
  char *message;                /* and the reason, one line */
} KernCudaLoad;

#ifdef HAVE_CUDA

/* The file to open: $DTSIM_CUDA_PLUGIN, else the first of the places above
 * that holds one.  NULL with *why set (a new string) when there is none. */
static char *
kern_cuda_plugin_find (char **why)
{
  const char *env = g_getenv (KERN_CUDA_PLUGIN_ENV);
  if (env != NULL && env[0] != '\0')
    return g_strdup (env);

  g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
  g_autofree char *exe_dir = exe != NULL ? g_path_get_dirname (exe) : NULL;
  if (exe_dir != NULL)
    {
      char *beside = g_build_filename (exe_dir, KERN_CUDA_PLUGIN_NAME, NULL);
      if (g_file_test (beside, G_FILE_TEST_IS_REGULAR))
        return beside;
      g_free (beside);
    }
  char *installed = g_build_filename (DTSIM_PKGLIBDIR, KERN_CUDA_PLUGIN_NAME, NULL);
  if (g_file_test (installed, G_FILE_TEST_IS_REGULAR))
    return installed;
  g_free (installed);

  *why = g_strdup_printf ("the CUDA plugin %s is neither beside the executable "
                          "(%s) nor in %s; set %s to its path",
                          KERN_CUDA_PLUGIN_NAME, exe_dir != NULL ? exe_dir : "unknown",
                          DTSIM_PKGLIBDIR, KERN_CUDA_PLUGIN_ENV);
  return NULL;
}

/* Opens the plugin and checks that it was built for this dtsim.  Fills
 * either l->plugin or the error fields. */
static void
kern_cuda_plugin_open (KernCudaLoad *l)
{
  char *why = NULL;
  g_autofree char *path = kern_cuda_plugin_find (&why);
  if (path == NULL)
    {
      l->code = G_IO_ERROR_NOT_FOUND;
      l->message = why;
      return;
    }

  /* Every symbol bound now, so that a missing one fails here and not in
   * the middle of a run; local, so that nothing in it interposes on dtsim. */
  GModule *module = g_module_open (path, G_MODULE_BIND_LOCAL);
  if (module == NULL)
    {
      /* dlerror () names the file that failed: the plugin itself (then
       * dropped, it is named already) or a CUDA library it needs. */
      const char *why_not = g_module_error ();
      if (g_str_has_prefix (why_not, path) && g_str_has_prefix (why_not + strlen (path), ": "))
        why_not += strlen (path) + 2;
      l->code = G_IO_ERROR_FAILED;
      l->message = g_strdup_printf ("cannot load the CUDA plugin %s: %s", path, why_not);
      return;
    }

  gpointer sym = NULL;
  const KernCudaPlugin *p = NULL;
  if (g_module_symbol (module, KERN_CUDA_PLUGIN_ENTRY, &sym) && sym != NULL)
    p = ((KernCudaPluginEntry) sym) ();
  if (p == NULL || p->abi != KERN_CUDA_PLUGIN_ABI || p->ops_size != sizeof (KernBackendOps))
    {
      l->code = G_IO_ERROR_FAILED;
      if (p == NULL)
        l->message = g_strdup_printf ("%s is not a dtsim CUDA plugin (no %s)", path,
                                      KERN_CUDA_PLUGIN_ENTRY);
      else
        l->message = g_strdup_printf ("the CUDA plugin %s was built for another "
                                      "dtsim (plugin ABI %u, this dtsim's %u); "
                                      "reinstall it with this dtsim",
                                      path, (unsigned) p->abi,
                                      (unsigned) KERN_CUDA_PLUGIN_ABI);
      g_module_close (module);
      return;
    }

  /* Kept for the life of the process: backends, their ops tables and the
   * plugin's error quark live in it. */
  g_module_make_resident (module);
  l->plugin = p;
}

#endif /* HAVE_CUDA */

/* The plugin, loaded on the first call (from any thread), or the reason it
 * could not be. */
static const KernCudaLoad *
kern_cuda_load (void)
{
  static KernCudaLoad load;
  static gsize done = 0;
  if (g_once_init_enter (&done))
    {
#ifdef HAVE_CUDA
      kern_cuda_plugin_open (&load);
#else
      load.code = G_IO_ERROR_NOT_SUPPORTED;
      load.message = g_strdup ("this dtsim was built without CUDA; reconfigure with "
                               "--with-cuda on a machine with the CUDA toolkit");
#endif
      if (load.message != NULL) /* one line, whatever dlerror () said */
        g_strdelimit (load.message, "\r\n", ' ');
      g_once_init_leave (&done, 1);
    }
  return &load;
}

/* Loads the plugin on the first call; 0 when it cannot be loaded. */
int
kern_cuda_device_count (void)
{
  const KernCudaLoad *l = kern_cuda_load ();
  return l->plugin != NULL ? l->plugin->device_count () : 0;
}

/* Loads the plugin on the first call.  Without it: NULL with
 * G_IO_ERROR_NOT_SUPPORTED (a build without CUDA), G_IO_ERROR_NOT_FOUND
 * (no plugin file) or G_IO_ERROR_FAILED (the plugin or a CUDA library it
 * needs cannot be loaded); with it, the plugin's own errors (no device, a
 * failing CUDA call). */
KernBackend *
kern_backend_cuda_new (GError **error)
{
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  const KernCudaLoad *l = kern_cuda_load ();
  if (l->plugin == NULL)
    {
      g_set_error_literal (error, G_IO_ERROR, l->code, l->message);
      return NULL;
    }
  return l->plugin->backend_new (error);
}

/* Never asked to be reproducible: its entry says it cannot be (cuBLAS
 * picks its algorithms by GPU and may split a sum over threads in any
 * order). */
static KernBackend *
cuda_create (gboolean reproducible G_GNUC_UNUSED, GError **error)
{
  return kern_backend_cuda_new (error);
}

const KernBackendEntry kern_backend_cuda = {
  .name = "cuda",
  .description = "real math on cuBLAS and CUDA kernels (needs a GPU and a CUDA build)",
  .create = cuda_create,
  .can_reproduce = FALSE,
};
