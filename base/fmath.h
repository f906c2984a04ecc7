/*
 * fmath.h — exp, log, log1p, sin, cos and pow that give the same bits on
 * every x86-64 CPU.
 *
 * The C library picks an implementation of its transcendental functions by
 * CPU when a program starts: on glibc, exp, log, log1p, sin, cos and pow
 * each have a variant for CPUs with FMA and AVX2 and one for those without,
 * and the two round differently in about one call in a thousand.  dtsim
 * draws every straggler factor, every exponential delay, every initial
 * weight and every Gaussian sample through these functions, and its loss
 * goes through exp and log, so a trace could differ between two machines
 * in the last bit of a draw and then everywhere after it.  These versions
 * are written with plain double operations in a fixed order (the build
 * passes -ffp-contract=off, so no compiler fuses a multiply and an add), so
 * they give the same result wherever IEEE 754 double arithmetic runs.
 *
 * Accuracy: within 2 units in the last place over the whole range for exp,
 * log and log1p; within 2 units for sin and cos while |x| < 2^20 pi/2 (the
 * same bits everywhere beyond, less accurately); pow(x, y) by squaring for
 * whole y up to 1024 in size (exact when the result is), otherwise as
 * exp(y log x), within 2 + 3 |y log x| units (the rounding of y log x is
 * magnified).
 * Special values follow C99 Annex F for the cases dtsim meets (NaN in,
 * NaN out; log(0) = -inf; log of a negative number is NaN; overflow to
 * +inf, underflow to 0).
 *
 * base/ sits below every other folder and includes nothing of dtsim.
 */
#ifndef DTSIM_BASE_FMATH_H
#define DTSIM_BASE_FMATH_H

#include <glib.h>

G_BEGIN_DECLS

double base_exp (double x);
double base_log (double x);
double base_log1p (double x);
double base_sin (double x);
double base_cos (double x);
double base_pow (double x, double y);
/* exp of a float, rounded to float: (float) base_exp (x). */
float base_expf (float x);

G_END_DECLS

#endif /* DTSIM_BASE_FMATH_H */
