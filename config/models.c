/*
 * models.c — the models and data sets a scenario names ([model] kind and
 * dataset): each entry builds its kernel model or loads its data from a
 * resolved point, and the key table lists their names.
 *
 * A model kind is an entry (KernModelKind) in its model's file under
 * kernels/ and one line in model_kinds[]; a data set, one entry in
 * datasets[].  The layer tables of kind = timing are
 * built in (the resource bundle, one NAME.txt each) or read from a file.
 */
#include "config.h"

#include <string.h>
#include <gio/gio.h>

#include "config/input.h"
#include "config/models.h"

/* The resource bundle generated from config/dtsim.gresource.xml. */
GResource *dtsim_get_resource (void);

/* Fashion-MNIST: 28 x 28 pixels, 10 classes. */
#define FMNIST_FEATURES 784
#define FMNIST_CLASSES 10
#define FMNIST_TRAIN_FILE "train-images-idx3-ubyte.gz"

/* The data sets a scenario may name ([model] dataset). */
typedef struct {
  const char *name;
  const char *description;
  int features, classes;   /* of every sample; 0 = [model] features, classes */
  /* Samples (training and test) the run holds in host memory. */
  double (*samples) (const SimConfig *c);
  /* Checks that the data is there for c's workers; sets *n_train to its
   * training samples. */
  gboolean (*check) (const SimConfig *c, const char *file, gint64 *n_train, GError **error);
  gboolean (*load) (const SimConfig *c, KernDataset **train, KernDataset **test,
                    GError **error);
} Dataset;

static double
synthetic_samples (const SimConfig *c)
{
  return (double) c->samples + (double) c->test_samples;
}

static gboolean
synthetic_check (const SimConfig *c, const char *file, gint64 *n_train, GError **error)
{
  *n_train = c->samples;
  if (c->samples >= c->workers)
    return TRUE;
  g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
               "%s: [model] samples: %" G_GINT64_FORMAT " samples cannot be shared among %"
               G_GINT64_FORMAT " workers; give at least one sample per worker",
               file, c->samples, c->workers);
  return FALSE;
}

static gboolean
synthetic_load (const SimConfig *c, KernDataset **train, KernDataset **test,
                GError **error G_GNUC_UNUSED)
{
  const KernModelKind *kind = sim_model_kind (c);
  if (kind->synthetic_draw)
    {
      /* a kind with data of its own (kind = sparse) */
      kind->synthetic_draw (c->values, (int) c->samples, (int) c->test_samples,
                            (guint64) c->seed, train, test);
      return TRUE;
    }
  kern_dataset_blobs ((int) c->samples, (int) c->test_samples, (int) c->features,
                      (int) c->classes, c->separation, (guint64) c->seed, train, test);
  return TRUE;
}

static double
fmnist_samples (const SimConfig *c G_GNUC_UNUSED)
{
  return 70000.0;
}

/* The files are at [model] data_dir and hold an image for every worker. */
static gboolean
fmnist_check (const SimConfig *c, const char *file, gint64 *n_train, GError **error)
{
  g_autofree char *path = g_build_filename (c->data_dir, FMNIST_TRAIN_FILE, NULL);
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [model] data_dir: Fashion-MNIST not found at %s; install it with `apt-get install dataset-fashion-mnist` or set data_dir",
                   file, path);
      return FALSE;
    }
  /* the files' own counts, from their headers: they may hold fewer images
   * than the package's */
  int n_tr = 0, n_te = 0;
  g_autoptr (GError) local = NULL;
  if (!kern_dataset_fashion_mnist_sizes (c->data_dir, &n_tr, &n_te, &local))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: [model] data_dir: %s", file,
                   local->message);
      return FALSE;
    }
  if (n_tr < c->workers || n_te < 1)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [model] data_dir: the files at %s hold %d training and %d test images; "
                   "every one of the %" G_GINT64_FORMAT " workers needs a training image and "
                   "accuracy a test image: use the full data set or fewer workers",
                   file, c->data_dir, n_tr, n_te, c->workers);
      return FALSE;
    }
  *n_train = n_tr;
  return TRUE;
}

static gboolean
fmnist_load (const SimConfig *c, KernDataset **train, KernDataset **test, GError **error)
{
  g_autoptr (GError) local = NULL;
  if (kern_dataset_fashion_mnist (c->data_dir, train, test, &local))
    return TRUE;
  g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: [model] data_dir: %s",
               c->file, local->message);
  return FALSE;
}

static const Dataset synthetic = {
  "synthetic", "seeded Gaussian blobs", 0, 0,
  synthetic_samples, synthetic_check, synthetic_load };
static const Dataset fashion_mnist = {
  "fashion-mnist", "Debian's dataset-fashion-mnist (60,000 training, 10,000 test images)", FMNIST_FEATURES, FMNIST_CLASSES,
  fmnist_samples, fmnist_check, fmnist_load };
static const Dataset *const datasets[] = { &synthetic, &fashion_mnist, NULL };

static const Dataset *
dataset_of (const SimConfig *c)
{
  const Dataset *d = base_registry_find ((const void *const *) datasets, c->dataset);
  g_return_val_if_fail (d != NULL, &synthetic); /* the loader took only these names */
  return d;
}

/* The synthetic data of a kind that draws its own, or NULL. */
static const KernModelKind *
own_synthetic (const SimConfig *c)
{
  const KernModelKind *kind = sim_model_kind (c);
  return dataset_of (c) == &synthetic && kind->synthetic_draw ? kind : NULL;
}

int
sim_model_inputs (const SimConfig *c)
{
  const Dataset *d = dataset_of (c);
  const KernModelKind *own = own_synthetic (c);
  if (own)
    return own->synthetic_width (c->values);
  return d->features ? d->features : (int) c->features;
}

int
sim_model_classes (const SimConfig *c)
{
  const Dataset *d = dataset_of (c);
  const KernModelKind *own = own_synthetic (c);
  if (own)
    return own->synthetic_classes ? own->synthetic_classes (c->values) : 2;
  return d->classes ? d->classes : (int) c->classes;
}

/* Where the built-in layer tables are in the resource bundle: one NAME.txt
 * each, listed in config/dtsim.gresource.xml. */
#define WORKLOADS_PATH "/org/dtsim/workloads/"

/* Orders names as strcmp does, except that runs of digits compare by their
 * length first, so resnet-50 comes before resnet-101.  Independent of the
 * locale, and two different names never compare equal. */
static int
workload_name_cmp (const void *a, const void *b)
{
  const char *s = *(char *const *) a, *t = *(char *const *) b;
  while (*s && *t)
    {
      if (g_ascii_isdigit (*s) && g_ascii_isdigit (*t))
        {
          gsize ns = strspn (s, "0123456789"), nt = strspn (t, "0123456789");
          if (ns != nt)
            return ns < nt ? -1 : 1;
          int d = strncmp (s, t, ns);
          if (d != 0)
            return d;
          s += ns;
          t += nt;
          continue;
        }
      if (*s != *t)
        return (unsigned char) *s < (unsigned char) *t ? -1 : 1;
      s++;
      t++;
    }
  return (unsigned char) *s - (unsigned char) *t;
}

/* The names of the built-in layer tables, "a, b, c": the resource
 * bundle's files under WORKLOADS_PATH without ".txt", in workload_name_cmp
 * order, so there is no second list of them to keep. */
static char *
workload_names (void)
{
  g_auto (GStrv) files = g_resource_enumerate_children (dtsim_get_resource (),
                                                        WORKLOADS_PATH,
                                                        G_RESOURCE_LOOKUP_FLAGS_NONE,
                                                        NULL);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  for (int i = 0; files && files[i]; i++)
    if (g_str_has_suffix (files[i], ".txt"))
      g_ptr_array_add (names, g_strndup (files[i], strlen (files[i]) - 4));
  g_ptr_array_sort (names, workload_name_cmp);

  GString *s = g_string_new (NULL);
  for (guint i = 0; i < names->len; i++)
    {
      if (i > 0)
        g_string_append (s, ", ");
      g_string_append (s, g_ptr_array_index (names, i));
    }
  return g_string_free (s, FALSE);
}

/* The text of a layer table: a built-in one by name, else a file. */
static char *
workload_text (const char *name, GError **error)
{
  g_autofree char *res = g_strdup_printf (WORKLOADS_PATH "%s.txt", name);
  GBytes *b = g_resource_lookup_data (dtsim_get_resource (), res,
                                      G_RESOURCE_LOOKUP_FLAGS_NONE, NULL);
  if (b)
    {
      gsize len;
      const char *data = g_bytes_get_data (b, &len);
      char *text = g_strndup (data, len);
      g_bytes_unref (b);
      return text;
    }
  if (g_file_test (name, G_FILE_TEST_EXISTS))
    return sim_input_read_text (name, "layer table", error);
  g_autofree char *names = workload_names ();
  g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
               "no built-in workload '%s' and no such file; use %s or a layer-table file (docs/workloads.md)",
               name, names);
  return NULL;
}

/* The model kinds: one entry in each model's file, one line here. */
extern const KernModelKind kern_model_linear;      /* kernels/mlp.c */
extern const KernModelKind kern_model_softmax;     /* kernels/mlp.c */
extern const KernModelKind kern_model_mlp;         /* kernels/mlp.c */
extern const KernModelKind kern_model_timing;      /* kernels/timing.c */
extern const KernModelKind kern_model_transformer; /* kernels/transformer.c */
extern const KernModelKind kern_model_sparse;      /* kernels/sparse.c */
extern const KernModelKind kern_model_gpt;         /* kernels/gpt.c */
extern const KernModelKind kern_model_cnn;         /* kernels/cnn.c */

static const KernModelKind *const model_kinds[] = {
  &kern_model_linear,
  &kern_model_softmax,
  &kern_model_mlp,
  &kern_model_timing,
  &kern_model_transformer,
  &kern_model_sparse,
  &kern_model_gpt,
  &kern_model_cnn,
  NULL,
};

const void *const *
sim_model_kind_entries (void)
{
  return (const void *const *) model_kinds;
}

const void *const *
sim_dataset_entries (void)
{
  return (const void *const *) datasets;
}

const SimModelKind *
sim_model_kind (const SimConfig *c)
{
  const SimModelKind *k = base_registry_find ((const void *const *) model_kinds, c->model_kind);
  g_return_val_if_fail (k != NULL, model_kinds[0]); /* the loader took only these names */
  return k;
}

KernModel *
sim_model_new (const SimConfig *c, KernBackend *be, GError **error)
{
  KernModelArgs a = {
    .inputs = sim_model_inputs (c),
    .classes = sim_model_classes (c),
    .hidden = c->hidden ? (const int *) c->hidden->data : NULL,
    .n_hidden = c->hidden ? (int) c->hidden->len : 0,
    .workload = c->workload,
    .params = (gsize) c->model_params,
    .flops = c->model_flops,
    .read_workload = workload_text,
    .values = c->values,
  };
  KernModel *m = sim_model_kind (c)->new (&a, be, error);
  if (m)
    m->num = (KernNumerics) {
      .weights = (KernFormat) c->num_weights,
      .gradients = (KernFormat) c->num_gradients,
      .communication = (KernFormat) c->num_communication,
      .activations = (KernFormat) c->num_activations,
      .loss_scale = (float) c->loss_scale,
      .dynamic_scale = c->loss_scale_dynamic,
      .growth_interval = (int) c->growth_interval,
    };
  if (m)
    kern_scaler_reset (&m->scaler, &m->num);
  return m;
}

double
sim_dataset_samples (const SimConfig *c)
{
  return dataset_of (c)->samples (c);
}

gboolean
sim_dataset_check (const SimConfig *c, const char *file, gint64 *n_train, GError **error)
{
  return dataset_of (c)->check (c, file, n_train, error);
}

gboolean
sim_data_load (const SimConfig *c, KernDataset **train, KernDataset **test, GError **error)
{
  return dataset_of (c)->load (c, train, test, error);
}

void
sim_model_kind_keys (GPtrArray *rows)
{
  base_registry_keys (rows, NULL, (const void *const *) model_kinds,
                      G_STRUCT_OFFSET (KernModelKind, keys));
}

/* Whether `kind` declares [model] key. */
static gboolean
declares (const KernModelKind *kind, const char *key)
{
  for (const BaseKey *k = kind->keys; k && k->section; k++)
    if (strcmp (k->key, key) == 0)
      return TRUE;
  return FALSE;
}

/* The key by which a kind says that its sample is a sequence of tokens
 * (docs/trace.md, "Buyer's metrics"): any kind declaring it is counted in
 * tokens, with no list of kinds to keep here. */
#define TOKENS_KEY "sequence"

double
sim_model_tokens (const SimConfig *c)
{
  if (!declares (sim_model_kind (c), TOKENS_KEY))
    return 0;
  return (double) base_values_int (c->values, "model." TOKENS_KEY);
}

/* The params-row text of "section.key" in c, or NULL. */
static char **
param_text (SimConfig *c, const char *dotted)
{
  for (guint i = 0; i < c->param_keys->len; i++)
    if (strcmp (g_ptr_array_index (c->param_keys, i), dotted) == 0)
      return (char **) &g_ptr_array_index (c->param_values, i);
  return NULL;
}

/* The value a shape's text gives key k (an INT or an ENUM key of a model
 * kind; the shapes are the kind's own, so their text always reads). */
static gint64
shape_value (const BaseKey *k, const char *text)
{
  if (k->type == BASE_KEY_ENUM)
    {
      for (const BaseChoice *ch = k->choices; ch->name; ch++)
        if (strcmp (ch->name, text) == 0)
          return ch->value;
      g_return_val_if_reached (0);
    }
  g_return_val_if_fail (k->type == BASE_KEY_INT, 0);
  return g_ascii_strtoll (text, NULL, 10);
}

/* The kind's own defaults for the keys the scenario leaves out
 * (KernModelKind.defaults), with their params rows. */
static void
kind_defaults (SimConfig *c, const KernModelKind *kind)
{
  for (const char *const *kv = kind->defaults; kv && kv[0]; kv += 2)
    {
      g_autofree char *dotted = g_strconcat ("model.", kv[0], NULL);
      if (g_hash_table_contains (c->given, dotted))
        continue;
      base_values_set_int (c->values, dotted, g_ascii_strtoll (kv[1], NULL, 10));
      char **text = param_text (c, dotted);
      if (text)
        {
          g_free (*text);
          *text = g_strdup (kv[1]);
        }
    }
}

gboolean
sim_model_shape_apply (SimConfig *c, const char *file, GError **error)
{
  const KernModelKind *kind = sim_model_kind (c);
  kind_defaults (c, kind);
  if (!kind->shapes)
    return TRUE;
  const char *name = base_values_string (c->values, "model.shape");
  if (!name || !name[0])
    return TRUE;
  const KernModelShape *shape = NULL;
  GString *names = g_string_new (NULL);
  for (const KernModelShape *sh = kind->shapes; sh->name; sh++)
    {
      g_string_append_printf (names, "%s%s", names->len ? ", " : "", sh->name);
      if (strcmp (sh->name, name) == 0)
        shape = sh;
    }
  g_autofree char *known = g_string_free (names, FALSE);
  if (!shape)
    return sim_key_error (error, file, "model", "shape",
                          "no shape '%s' for kind = %s; use one of %s (docs/workloads.md)",
                          name, kind->name, known);
  for (const char *const *kv = shape->values; kv[0]; kv += 2)
    {
      const BaseKey *k = kind->keys;
      while (k->section && strcmp (k->key, kv[0]) != 0)
        k++;
      g_return_val_if_fail (k->section != NULL, FALSE);
      g_autofree char *dotted = g_strconcat ("model.", kv[0], NULL);
      gint64 v = shape_value (k, kv[1]);
      char **text = param_text (c, dotted);
      if (g_hash_table_contains (c->given, dotted) && base_values_int (c->values, dotted) != v)
        return sim_key_error (error, file, "model", kv[0],
                              "%s disagrees with shape = %s, which sets %s = %s; remove "
                              "%s or shape", text ? *text : "the value", name, kv[0], kv[1],
                              kv[0]);
      base_values_set_int (c->values, dotted, v);
      if (text)
        {
          g_free (*text);
          *text = g_strdup (kv[1]);
        }
    }
  return TRUE;
}

gboolean
sim_model_kind_validate (const SimConfig *c, const char *file, GError **error)
{
  const KernModelKind *mine = sim_model_kind (c);
  for (int i = 0; model_kinds[i]; i++)
    for (const BaseKey *k = model_kinds[i]->keys; k && k->section; k++)
      {
        g_autofree char *dotted = g_strconcat (k->section, ".", k->key, NULL);
        if (model_kinds[i] != mine && !declares (mine, k->key)
            && g_hash_table_contains (c->given, dotted))
          return sim_key_error (error, file, k->section, k->key,
                                "applies only to kind = %s; remove it or set kind = %s",
                                model_kinds[i]->name, model_kinds[i]->name);
      }
  if (mine->cpu_only && c->math && strcmp (c->backend, "cpu") != 0)
    return sim_key_error (error, file, "kernels", "backend",
                          "kind = %s runs its math on the CPU backend only, not %s; set "
                          "backend = cpu (or none for timing alone)", mine->name, c->backend);
  if (mine->synthetic_draw)
    {
      /* its data is its own: the blobs' keys and other data sets do not fit */
      if (dataset_of (c) != &synthetic)
        return sim_key_error (error, file, "model", "dataset",
                              "kind = %s draws its own data; set dataset = synthetic",
                              mine->name);
      static const char *const blobs_keys[] = { "features", "classes", "separation" };
      for (gsize i = 0; i < G_N_ELEMENTS (blobs_keys); i++)
        {
          g_autofree char *dotted = g_strconcat ("model.", blobs_keys[i], NULL);
          if (g_hash_table_contains (c->given, dotted))
            return sim_key_error (error, file, "model", blobs_keys[i],
                                  "does not apply to kind = %s, whose data has its own keys "
                                  "(docs/kernels.md); remove it", mine->name);
        }
    }
  g_autoptr (GError) local = NULL;
  if (!mine->validate || mine->validate (c->values, &local))
    return TRUE;
  g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: %s", file, local->message);
  return FALSE;
}
