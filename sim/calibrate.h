/*
 * calibrate.h — `dtsim calibrate`: fits a catalog's device efficiencies to
 * step times measured on a user's own hardware (docs/validation.md,
 * "Calibrating to your cluster").
 */
#ifndef DTSIM_SIM_CALIBRATE_H
#define DTSIM_SIM_CALIBRATE_H

#include <glib.h>

G_BEGIN_DECLS

/* Reads the measured steps of `csv` (header device,precision,workload,
 * batch,seconds[,optimizer]; one training step of one device per row),
 * fits, for every device and precision in it, the dense `efficiency` and
 * the convolution efficiency that the rows determine (least squares of the
 * log of predicted over measured step time), and writes to `out` the
 * catalog `base` (NULL: the built-in one) with those figures set: a file
 * that `[cluster] catalog` loads.  `out` is written whole or not at all,
 * and replaces only a file that is itself a catalog.  The report (a table
 * of every row before and after, and the fitted figures) goes to `report`.
 * FALSE with a SIM_ERROR_INPUT error naming the file, the line and the fix
 * on bad input: a row's seconds not finite, <= 0, above 1e6 s, or below the
 * step's time at efficiency 1 (the device's peak).  Unless `force`, a fit
 * whose mean absolute error over the rows exceeds the base catalog's is
 * refused too (the report still tells both), and nothing is written. */
gboolean sim_calibrate (const char *csv, const char *base, const char *out, gboolean force,
                        GString *report, GError **error);

G_END_DECLS

#endif
