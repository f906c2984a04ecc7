/*
 * models.h — the model kinds and data sets a scenario may name.
 */
#ifndef DTSIM_CONFIG_MODELS_H
#define DTSIM_CONFIG_MODELS_H

#include <glib.h>

#include "kernels/backend.h"
#include "kernels/kernels.h"
#include "config/simconfig.h"

G_BEGIN_DECLS

/* The model c describes, without data; math on `be` (NULL = CPU). */
KernModel *sim_model_new (const SimConfig *c, KernBackend *be, GError **error);

/* The model kinds a scenario may name ([model] kind): kernels' entries. */
typedef KernModelKind SimModelKind;

/* The kind c names. */
const SimModelKind *sim_model_kind (const SimConfig *c);
/* The model kinds (SimModelKind *) and the data sets, NULL-terminated
 * ([model] kind and dataset). */
const void *const *sim_model_kind_entries (void);
const void *const *sim_dataset_entries (void);

/* The features of every sample of c's data set, and its classes. */
int sim_model_inputs (const SimConfig *c);
int sim_model_classes (const SimConfig *c);

/* Samples (training and test) c's data set holds in host memory. */
double sim_dataset_samples (const SimConfig *c);
/* Checks that c's data set is there for its workers (errors name `file`
 * and the key to change); sets *n_train to its training samples. */
gboolean sim_dataset_check (const SimConfig *c, const char *file, gint64 *n_train,
                            GError **error);

/* Loads c's training and test sets (math runs only). */
gboolean sim_data_load (const SimConfig *c, KernDataset **train, KernDataset **test,
                        GError **error);

/* Tokens in one sample of c's model: the value of [model] sequence for a
 * kind that declares that key (its sample is one sequence of that many
 * tokens), 0 for any other kind (its sample is not made of tokens). */
double sim_model_tokens (const SimConfig *c);

/* Appends (const BaseKey *) the [model] keys the kinds declare. */
void sim_model_kind_keys (GPtrArray *rows);
/* [model] shape: the values the named shape of c's model kind gives its
 * keys, set in c (and its params rows); a key the file gives with another
 * value, or a name the kind does not know, is refused naming `file` and
 * the key.  Nothing to do for an empty shape or a kind without shapes
 * (sim_model_kind_validate refuses a shape given to one). */
gboolean sim_model_shape_apply (SimConfig *c, const char *file, GError **error);
/* The rules of c's model kind about its keys, and another kind's keys
 * refused when given; errors name `file` and the key. */
gboolean sim_model_kind_validate (const SimConfig *c, const char *file, GError **error);

G_END_DECLS

#endif /* DTSIM_CONFIG_MODELS_H */
