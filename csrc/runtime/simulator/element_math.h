// What one element-wise step of a simulated kernel computes: the value
// semantics of the generated CUDA (and of torch), separate from how the
// interpreter reads and writes memory. Floating values are computed in
// double and rounded to the output's type on store; integer results of
// integer operands in int64_t, wrapping as the GPU's fixed-width arithmetic
// does (a double holds integers exactly only up to 2^53).
#pragma once

#include <cstdint>

#include "fusion/ir.h"
#include "fusion/types.h"
#include "runtime/simulator/program.h"

namespace smelt::sim {

// A reduction's combine (Sum, Prod, Max; max propagates NaN).
double combine(Fn fn, double a, double b);

// A scan's combine: max and min propagate NaN; log-add-exp as torch's.
double scanCombine(ScanCombine combine, double carry, double x);
int64_t scanCombine(ScanCombine combine, int64_t carry, int64_t x);

// A scatter's combine of the element already there (`old`) with the source.
int64_t scatterCombine(ScatterCombine combine, int64_t old, int64_t v);
double scatterCombine(ScatterCombine combine, double old, double v);

// Whether `fn` of integer operands into an integer output is computed in
// int64_t (integerResult) rather than in double.
bool hasIntegerForm(Fn fn);

// Such an fn's result, wrapped to the output's integer `dtype` on store.
int64_t integerResult(Fn fn, const int64_t a[3], DataType dtype);

// An element-wise fn in double; `dtype` is the output's (nextafter and the
// special functions compute in the result's own type).
double floatResult(Fn fn, const double a[3], DataType dtype);

}  // namespace smelt::sim
