// torch's special functions, written once for the host (the simulator
// includes this header) and the device: CMake embeds this file's text as a
// string (special_math_source.h), and the CUDA codegen copies into a kernel's
// prelude only the sections the kernel calls, with the sections those need.
//
// A section starts at a line `//@ name: dependencies` and runs to the next
// such line; `//@ end` closes the last one. Only section text reaches a
// kernel: the includes and namespace lines outside the sections are the
// host's (the codegen wraps the sections in namespace smelt::special).
//
// The unary functions take and return double: float inputs are evaluated in
// double (the kernel casts), so a kernel and the simulator compute one
// function. The binary ones are templates on the result's type: the
// polynomials compute in it (float's overflow and rounding, as torch's
// recurrences), the others in double. Math library calls are qualified with :: (the C functions the
// host's <cmath> and CUDA's device library both declare for double).
//
// Methods (formulas from the standard references; coefficients are computed
// from their definitions, no tables): power series where they converge
// without much cancellation, Hankel/Poincare asymptotic expansions for large
// arguments, the trapezoidal rule on K's integral representation (spectrally
// accurate there), Halley's iteration for the inverse error functions, the
// Euler-Maclaurin formula for the Hurwitz zeta, Legendre's continued fraction
// for the incomplete gamma function.
#pragma once

#include <cmath>
#include <limits>

namespace smelt {
namespace special {

//@ common:
#ifndef SMELT_SPECIAL_FN
#if defined(__CUDACC__)
#define SMELT_SPECIAL_FN __device__ inline
#define SMELT_SPECIAL_INF __longlong_as_double(0x7ff0000000000000LL)
#define SMELT_SPECIAL_NAN __longlong_as_double(0x7ff8000000000000LL)
#else
#define SMELT_SPECIAL_FN inline
#define SMELT_SPECIAL_INF (std::numeric_limits<double>::infinity())
#define SMELT_SPECIAL_NAN (std::numeric_limits<double>::quiet_NaN())
#endif
#define SMELT_SPECIAL_PI 3.14159265358979323846
#define SMELT_SPECIAL_EULER 0.57721566490153286061  // Euler-Mascheroni constant
#endif
#ifndef SMELT_SPECIAL_MATH  // the math library's overload for the argument's type
#if defined(__CUDACC__)
#define SMELT_SPECIAL_MATH(fn) ::fn
#else
#define SMELT_SPECIAL_MATH(fn) std::fn
#endif
#endif
SMELT_SPECIAL_FN bool isNan(double x) { return x != x; }
SMELT_SPECIAL_FN bool isInf(double x) { return x == SMELT_SPECIAL_INF || x == -SMELT_SPECIAL_INF; }
SMELT_SPECIAL_FN double quietNan() { return SMELT_SPECIAL_NAN; }
SMELT_SPECIAL_FN double inf() { return SMELT_SPECIAL_INF; }
SMELT_SPECIAL_FN double absolute(double x) { return x < 0 ? -x : x; }
SMELT_SPECIAL_FN double withSign(double magnitude, double sign) {
  return ::copysign(magnitude, sign);
}
SMELT_SPECIAL_FN bool isWhole(double x) { return x == ::floor(x); }

//@ inverse_erf: common
// y >= 0 with erf(y) = x and erfc(y) = q (0 < q <= 1, q = 1 - x; callers pass
// both exactly, and the iteration uses the one with more digits). The start
// is Winitzki's closed form (within 2e-3); Halley's steps (f''/f' = -2y for
// erf and erfc alike) converge cubically.
SMELT_SPECIAL_FN double inverseErf(double x, double q) {
  const double a = 0.147;
  const double l = ::log(q) + ::log1p(x);  // log(1 - x^2)
  const double b = 2.0 / (SMELT_SPECIAL_PI * a) + 0.5 * l;
  double y = ::sqrt(::sqrt(b * b - l / a) - b);
  for (int i = 0; i < 10; ++i) {
    const double f = q < 0.5 ? q - ::erfc(y) : ::erf(y) - x;
    const double df = 1.1283791670955126 * ::exp(-y * y);  // 2/sqrt(pi) e^(-y^2)
    if (f == 0 || df == 0) break;
    const double u = f / df;
    const double step = u / (1.0 + y * u);
    y -= step;
    if (absolute(step) <= 1e-16 * y) break;
  }
  return y;
}

//@ erfinv: inverse_erf
SMELT_SPECIAL_FN double erfinv(double x) {
  const double m = absolute(x);
  if (isNan(x) || m > 1) return quietNan();
  if (m == 1) return withSign(inf(), x);
  return withSign(inverseErf(m, 1.0 - m), x);
}

//@ ndtri: inverse_erf
// The standard normal quantile: -sqrt(2) erfcinv(2p).
SMELT_SPECIAL_FN double ndtri(double p) {
  if (isNan(p) || p < 0 || p > 1) return quietNan();
  if (p == 0) return -inf();
  if (p == 1) return inf();
  const double sqrt2 = 1.4142135623730951;
  if (p < 0.5) return -sqrt2 * inverseErf(1.0 - 2.0 * p, 2.0 * p);
  return sqrt2 * inverseErf(2.0 * p - 1.0, 2.0 * (1.0 - p));
}

//@ erfcx: common
// exp(x^2) erfc(x); beyond 25 (erfc near underflow) the asymptotic series
// 1/(x sqrt(pi)) sum (-1)^k (2k-1)!! / (2x^2)^k.
SMELT_SPECIAL_FN double erfcx(double x) {
  if (isNan(x)) return x;
  if (x < 25.0) return ::exp(x * x) * ::erfc(x);
  const double r = 0.5 / (x * x);
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 40; ++k) {
    term *= -(2 * k - 1) * r;
    sum += term;
    if (absolute(term) < 1e-17 * sum) break;
  }
  return sum / (x * 1.7724538509055160);  // sqrt(pi)
}

//@ log_ndtr: erfcx
// log of the standard normal CDF, 0.5 erfc(-x / sqrt(2)).
SMELT_SPECIAL_FN double log_ndtr(double x) {
  if (isNan(x)) return x;
  const double t = x * 0.70710678118654752;
  if (x < -1.0) return ::log(0.5 * erfcx(-t)) - t * t;
  return ::log1p(-0.5 * ::erfc(t));
}

//@ bessel_i: common
// e^-x I_n(x) for n = 0, 1 and finite x >= 0: the power series
// (x/2)^n sum (x^2/4)^k / (k! (k+n)!) up to 30, then Hankel's expansion
// sum (-1)^k a_k(n) / x^k / sqrt(2 pi x), a_k = prod (4n^2 - (2j-1)^2) / (k! 8^k).
SMELT_SPECIAL_FN double scaledBesselI(int n, double x) {
  if (x <= 30.0) {
    const double q = 0.25 * x * x;
    double term = n == 0 ? 1.0 : 0.5 * x, sum = term;
    for (int k = 1; k < 200; ++k) {
      term *= q / (static_cast<double>(k) * (k + n));
      sum += term;
      if (term <= 1e-17 * sum) break;
    }
    return sum * ::exp(-x);
  }
  const double mu = 4.0 * n * n;
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 60; ++k) {
    term *= -(mu - (2.0 * k - 1) * (2.0 * k - 1)) / (8.0 * k * x);
    sum += term;
    if (absolute(term) < 1e-17 * absolute(sum)) break;
  }
  return sum / ::sqrt(2.0 * SMELT_SPECIAL_PI * x);
}
// I_n(x) from the scaled value, e^x applied in two halves (I_0 overflows
// later than e^x alone).
SMELT_SPECIAL_FN double besselI(int n, double x) {
  const double m = absolute(x);
  if (isNan(x)) return x;
  if (isInf(x)) return quietNan();  // as torch: e^x times the scaled value's 0
  const double r = ::exp(m) * scaledBesselI(n, m);
  return n == 1 && x < 0 ? -r : r;
}
SMELT_SPECIAL_FN double scaledBesselIOf(int n, double x) {
  if (isNan(x)) return x;
  const double r = isInf(x) ? 0.0 : scaledBesselI(n, absolute(x));
  return n == 1 && x < 0 ? -r : r;
}

//@ i0: bessel_i
SMELT_SPECIAL_FN double i0(double x) { return besselI(0, x); }
//@ i1: bessel_i
SMELT_SPECIAL_FN double i1(double x) { return besselI(1, x); }
//@ i0e: bessel_i
SMELT_SPECIAL_FN double i0e(double x) { return scaledBesselIOf(0, x); }
//@ i1e: bessel_i
SMELT_SPECIAL_FN double i1e(double x) { return scaledBesselIOf(1, x); }

//@ bessel_k_integral: common
// e^z K_nu(z) for finite z >= 1: the trapezoidal rule on
// integral_0^inf e^(-z (cosh t - 1)) cosh(nu t) dt, whose even, analytic
// integrand makes the rule's error fall as e^(-2 pi d / h) for a strip of
// half-width d; the step keeps that below 1e-17 for every z.
SMELT_SPECIAL_FN double scaledBesselKIntegral(double nu, double z) {
  const double h0 = 0.7 / ::sqrt(z);
  const double h = h0 < 0.1 ? h0 : 0.1;
  double sum = 0.5;
  for (int k = 1; k < 4000; ++k) {
    const double t = k * h;
    const double s = ::sinh(0.5 * t);
    const double f = ::exp(-2.0 * z * s * s) * ::cosh(nu * t);
    sum += f;
    if (f < 1e-18 * sum) break;
  }
  return sum * h;
}

//@ bessel_k: bessel_k_integral
// e^x K_n(x) (n = 0, 1) for x > 0: below 2 the series
//   K_0 = -(log(x/2) + gamma) I_0 + sum H_k (x^2/4)^k / (k!)^2,
//   K_1 = 1/x + log(x/2) I_1 - (x/4) sum (psi(k+1) + psi(k+2)) (x^2/4)^k / (k! (k+1)!),
// (H_k the harmonic numbers, psi(k+1) = H_k - gamma), else the integral.
SMELT_SPECIAL_FN double scaledBesselK(int n, double x) {
  if (x >= 2.0) return scaledBesselKIntegral(n, x);
  const double q = 0.25 * x * x;
  const double l = ::log(0.5 * x);
  double term = 1.0, harmonic = 0.0, i_sum = 1.0, sum = 0.0;
  if (n == 0) {
    for (int k = 1; k < 60; ++k) {
      term *= q / (static_cast<double>(k) * k);
      harmonic += 1.0 / k;
      i_sum += term;
      sum += harmonic * term;
      if (term < 1e-18 * i_sum) break;
    }
    return (-(l + SMELT_SPECIAL_EULER) * i_sum + sum) * ::exp(x);
  }
  // n == 1: term = (x^2/4)^k / (k! (k+1)!), psi(k+1) + psi(k+2) = 2 H_k + 1/(k+1) - 2 gamma
  sum = 1.0 - 2.0 * SMELT_SPECIAL_EULER;
  for (int k = 1; k < 60; ++k) {
    term *= q / (static_cast<double>(k) * (k + 1));
    harmonic += 1.0 / k;
    i_sum += term;
    sum += (2.0 * harmonic + 1.0 / (k + 1) - 2.0 * SMELT_SPECIAL_EULER) * term;
    if (term < 1e-18 * i_sum) break;
  }
  return (1.0 / x + l * 0.5 * x * i_sum - 0.25 * x * sum) * ::exp(x);
}
SMELT_SPECIAL_FN double besselKOf(int n, double x, bool scaled) {
  if (isNan(x)) return x;
  if (x < 0) return quietNan();
  if (x == 0) return inf();
  if (isInf(x)) return 0.0;
  const double r = scaledBesselK(n, x);
  return scaled ? r : r * ::exp(-x);
}

//@ modified_bessel_k0: bessel_k
SMELT_SPECIAL_FN double modified_bessel_k0(double x) { return besselKOf(0, x, false); }
//@ modified_bessel_k1: bessel_k
SMELT_SPECIAL_FN double modified_bessel_k1(double x) { return besselKOf(1, x, false); }
//@ scaled_modified_bessel_k0: bessel_k
SMELT_SPECIAL_FN double scaled_modified_bessel_k0(double x) { return besselKOf(0, x, true); }
//@ scaled_modified_bessel_k1: bessel_k
SMELT_SPECIAL_FN double scaled_modified_bessel_k1(double x) { return besselKOf(1, x, true); }

//@ bessel_jy: common
// J_n and Y_n (n = 0, 1) for finite x > 0. Below 12 the series
//   J_n = (x/2)^n sum (-x^2/4)^k / (k! (k+n)!),
//   Y_0 = (2/pi) (log(x/2) + gamma) J_0 - (2/pi) sum H_k (-x^2/4)^k / (k!)^2,
//   Y_1 = -2/(pi x) + (2/pi) log(x/2) J_1
//         - (x/(2 pi)) sum (psi(k+1) + psi(k+2)) (-x^2/4)^k / (k! (k+1)!);
// above, Hankel's expansion sqrt(2/(pi x)) (P cos chi - Q sin chi) for J and
// (P sin chi + Q cos chi) for Y, chi = x - (2n+1) pi/4.
SMELT_SPECIAL_FN double besselJY(int n, double x, bool y_kind) {
  if (x < 12.0) {
    const double q = -0.25 * x * x;
    double term = 1.0, harmonic = 0.0, j_sum = 1.0;
    double y_sum = n == 0 ? 0.0 : 1.0 - 2.0 * SMELT_SPECIAL_EULER;
    for (int k = 1; k < 100; ++k) {
      term *= q / (static_cast<double>(k) * (k + n));
      harmonic += 1.0 / k;
      j_sum += term;
      y_sum += (n == 0 ? harmonic : 2.0 * harmonic + 1.0 / (k + 1) - 2.0 * SMELT_SPECIAL_EULER) * term;
      if (absolute(term) < 1e-18 && k > -q) break;
    }
    const double j = n == 0 ? j_sum : 0.5 * x * j_sum;
    if (!y_kind) return j;
    const double l = ::log(0.5 * x);
    if (n == 0) return (2.0 / SMELT_SPECIAL_PI) * ((l + SMELT_SPECIAL_EULER) * j - y_sum);
    return -2.0 / (SMELT_SPECIAL_PI * x) + (2.0 / SMELT_SPECIAL_PI) * l * j -
           x / (2.0 * SMELT_SPECIAL_PI) * y_sum;
  }
  const double mu = 4.0 * n * n;
  double term = 1.0, p = 1.0, qs = 0.0;
  for (int k = 1; k < 60; ++k) {
    const double next = term * (mu - (2.0 * k - 1) * (2.0 * k - 1)) / (8.0 * k * x);
    if (absolute(next) > absolute(term)) break;  // the expansion's smallest term
    term = next;
    // terms k = 0, 1, 2, 3, ... go to P, Q, P, Q with signs +, +, -, -
    const double signed_term = (k % 4 == 2 || k % 4 == 3) ? -term : term;
    if (k % 2 == 0) p += signed_term; else qs += signed_term;
    if (absolute(term) < 1e-17) break;
  }
  const double s = ::sin(x), c = ::cos(x);
  // chi = x - pi/4 (n = 0) or x - 3pi/4 (n = 1), from sin x and cos x
  const double r = 0.70710678118654752;
  const double cos_chi = n == 0 ? r * (c + s) : r * (s - c);
  const double sin_chi = n == 0 ? r * (s - c) : -r * (s + c);
  const double amplitude = ::sqrt(2.0 / (SMELT_SPECIAL_PI * x));
  return y_kind ? amplitude * (p * sin_chi + qs * cos_chi) : amplitude * (p * cos_chi - qs * sin_chi);
}

//@ bessel_j0: bessel_jy
SMELT_SPECIAL_FN double bessel_j0(double x) {
  if (isNan(x) || isInf(x)) return quietNan();  // as torch at +-inf
  return besselJY(0, absolute(x), false);
}
//@ bessel_j1: bessel_jy
SMELT_SPECIAL_FN double bessel_j1(double x) {
  if (isNan(x) || isInf(x)) return quietNan();  // as torch at +-inf
  if (x == 0) return x;
  return x < 0 ? -besselJY(1, -x, false) : besselJY(1, x, false);  // odd
}
//@ bessel_y: bessel_jy
SMELT_SPECIAL_FN double besselYOf(int n, double x) {
  if (isNan(x)) return x;
  if (x < 0) return quietNan();
  if (x == 0) return -inf();
  if (isInf(x)) return quietNan();  // as torch
  return besselJY(n, x, true);
}
//@ bessel_y0: bessel_y
SMELT_SPECIAL_FN double bessel_y0(double x) { return besselYOf(0, x); }
//@ bessel_y1: bessel_y
SMELT_SPECIAL_FN double bessel_y1(double x) { return besselYOf(1, x); }

//@ airy_ai: bessel_k_integral
// Ai(x): on [-7, 2] the Maclaurin series Ai(0) f - (-Ai'(0)) g,
//   f = sum x^3k / prod_{j<=k} (3j-1)(3j),  g = x sum x^3k / prod_{j<=k} (3j)(3j+1);
// above 2, Ai(x) = sqrt(x/3)/pi K_1/3(zeta) with zeta = 2/3 x^(3/2); below -7,
// the expansion pi^-1/2 x^-1/4 (sin(zeta + pi/4) sum (-1)^k u_2k zeta^-2k
//   - cos(zeta + pi/4) sum (-1)^k u_2k+1 zeta^-(2k+1)),
//   u_k = u_k-1 (6k-5)(6k-3)(6k-1) / (216 k (2k-1)).
SMELT_SPECIAL_FN double airy_ai(double x) {
  if (isNan(x) || isInf(x)) return quietNan();  // as torch at +-inf
  if (x > 2.0) {
    const double zeta = (2.0 / 3.0) * x * ::sqrt(x);
    return ::sqrt(x / 3.0) / SMELT_SPECIAL_PI * (scaledBesselKIntegral(1.0 / 3.0, zeta) * ::exp(-zeta));
  }
  if (x >= -7.0) {
    const double x3 = x * x * x;
    double f_term = 1.0, f = 1.0, g_term = x, g = x;
    for (int k = 1; k < 80; ++k) {
      f_term *= x3 / ((3.0 * k - 1) * (3.0 * k));
      g_term *= x3 / ((3.0 * k) * (3.0 * k + 1));
      f += f_term;
      g += g_term;
      if (absolute(f_term) + absolute(g_term) < 1e-18) break;
    }
    return 0.355028053887817239260 * f - 0.258819403792806798405 * g;
  }
  const double m = -x;
  const double zeta = (2.0 / 3.0) * m * ::sqrt(m);
  double u = 1.0, even = 1.0, odd = 0.0;
  for (int k = 1; k < 60; ++k) {
    const double next = u * (6.0 * k - 5) * (6.0 * k - 3) * (6.0 * k - 1) / (216.0 * k * (2.0 * k - 1)) / zeta;
    if (absolute(next) > absolute(u)) break;
    u = next;
    const double signed_u = (k % 4 == 2 || k % 4 == 3) ? -u : u;
    if (k % 2 == 0) even += signed_u; else odd += signed_u;
    if (absolute(u) < 1e-17) break;
  }
  const double s = ::sin(zeta), c = ::cos(zeta);
  const double r = 0.70710678118654752;  // sin/cos(zeta + pi/4) from sin and cos of zeta
  const double sin_shift = r * (s + c), cos_shift = r * (c - s);
  return (sin_shift * even - cos_shift * odd) / (1.7724538509055160 * ::sqrt(::sqrt(m)));
}

//@ spherical_bessel_j0: common
// sin(x)/x, by its Taylor series near 0.
SMELT_SPECIAL_FN double spherical_bessel_j0(double x) {
  if (isNan(x)) return x;
  if (isInf(x)) return 0.0;
  if (absolute(x) >= 0.5) return ::sin(x) / x;
  const double x2 = x * x;
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 12; ++k) {
    term *= -x2 / ((2.0 * k) * (2.0 * k + 1));
    sum += term;
  }
  return sum;
}

//@ digamma: common
// psi(x): psi(1 - x) - pi / tan(pi x) for x < 0 (NaN at the poles, -/+inf
// at +/-0 as torch), the recurrence psi(x) = psi(x + 1) - 1/x up to 10, then
// log x - 1/(2x) - sum B_2k / (2k x^2k).
SMELT_SPECIAL_FN double digamma(double x) {
  if (isNan(x)) return x;
  if (x == 0) return withSign(inf(), -x);
  if (x == inf()) return x;
  double result = 0.0;
  if (x < 0) {
    if (isWhole(x)) return quietNan();
    const double r = x - ::rint(x);  // tan(pi x) = tan(pi r), |r| <= 1/2
    result = -SMELT_SPECIAL_PI / ::tan(SMELT_SPECIAL_PI * r);
    x = 1.0 - x;
  }
  while (x < 10.0) {
    result -= 1.0 / x;
    x += 1.0;
  }
  const double z = 1.0 / (x * x);
  // B_2k / (2k): 1/12, -1/120, 1/252, -1/240, 1/132, -691/32760, 1/12
  const double tail =
      z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return result + ::log(x) - 0.5 / x - tail;
}

//@ zeta: common
// The Hurwitz zeta sum_k (q + k)^-x (torch's domain: NaN for x < 1, inf at
// x = 1 and at non-positive integer q, NaN for other q <= 0 unless x is
// whole): the first terms directly, until a = q + N >= max(10, x), then the
// Euler-Maclaurin tail a^(1-x)/(x-1) + a^-x/2
//   + sum_j B_2j/(2j)! x (x+1) ... (x+2j-2) a^(-x-2j+1).
SMELT_SPECIAL_FN double hurwitzZeta(double x, double q) {
  if (x == 1) return inf();
  if (x < 1) return quietNan();
  if (q <= 0) {
    if (isWhole(q)) return inf();
    if (!isWhole(x)) return quietNan();
  }
  if (x == inf()) return q == 1 ? 1.0 : q < 1 ? inf() : quietNan();  // as torch
  double sum = 0.0, a = q;
  for (int k = 0; k < 4096 && (a < 10.0 || a < x); ++k) {
    sum += ::pow(a, -x);
    a += 1.0;
  }
  // B_2j / (2j)!, j = 1..12
  const double b[12] = {8.3333333333333333e-02, -1.3888888888888889e-03, 3.3068783068783069e-05,
                        -8.2671957671957672e-07, 2.0876756987868099e-08, -5.2841901386874932e-10,
                        1.3382536530684679e-11, -3.3896802963225829e-13, 8.5860620562778446e-15,
                        -2.1748686985580619e-16, 5.5090028283602295e-18, -1.3954464685812523e-19};
  const double a_x = ::pow(a, -x);
  sum += a * a_x / (x - 1.0) + 0.5 * a_x;
  double factor = x * a_x / a;  // x a^(-x-1)
  for (int j = 0; j < 12; ++j) {
    const double t = b[j] * factor;
    sum += t;
    if (absolute(t) < 1e-17 * absolute(sum)) break;
    factor *= (x + 2 * j + 1) * (x + 2 * j + 2) / (a * a);
  }
  return sum;
}
// The binary functions take and return their result's type T (the
// polynomials compute in it, as torch); the others evaluate in double.
template <typename T>
SMELT_SPECIAL_FN T zeta(T x, T q) { return static_cast<T>(hurwitzZeta(x, q)); }

//@ polygamma: digamma zeta
// psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 1, digamma for n = 0.
// n = 1 is torch's trigamma: reflected below 1/2 with sin(pi x) of T's pi x
// (finite, not inf, near the poles, as torch), 0 at inf.
template <typename T>
SMELT_SPECIAL_FN T polygamma(T n_value, T x_value) {
  const double n = n_value, x = x_value;
  if (isNan(n) || n < 0 || !isWhole(n)) return static_cast<T>(quietNan());
  if (n == 0) return static_cast<T>(digamma(x));
  if (n == 1) {
    if (x == inf()) return T(0);
    if (x < 0.5) {
      const double s = ::sin(static_cast<double>(static_cast<T>(SMELT_SPECIAL_PI) * x_value));
      return static_cast<T>(SMELT_SPECIAL_PI * SMELT_SPECIAL_PI / (s * s) - hurwitzZeta(2.0, 1.0 - x));
    }
    return static_cast<T>(hurwitzZeta(2.0, x));
  }
  double factorial = 1.0;
  for (int k = 2; k <= n; ++k) factorial *= k;
  const double z = hurwitzZeta(n + 1.0, x);
  return static_cast<T>((static_cast<long long>(n) % 2 == 1 ? factorial : -factorial) * z);
}

//@ incomplete_gamma: common
// The regularized incomplete gamma functions P(a, x) (lower) and Q(a, x):
// for x < a + 1 the series x^a e^-x / Gamma(a+1) sum x^k / ((a+1)...(a+k)),
// else Legendre's continued fraction for Q, by Lentz's method.
SMELT_SPECIAL_FN double incompleteGamma(double a, double x, bool upper) {
  // torch's order of the special cases (igamma(NaN, 0) is 0, igamma(inf, NaN) 0)
  if (a < 0 || x < 0) return quietNan();
  if (a == 0) {
    if (x > 0) return upper ? 0.0 : 1.0;
    return quietNan();
  }
  if (x == 0) return upper ? 1.0 : 0.0;
  if (isInf(a)) {
    if (isInf(x)) return quietNan();
    return upper ? 1.0 : 0.0;
  }
  if (isInf(x)) return upper ? 0.0 : 1.0;
  if (isNan(a) || isNan(x)) return quietNan();
  const double log_prefactor = a * ::log(x) - x - ::lgamma(a);
  if (x < a + 1.0) {
    double term = 1.0 / a, sum = term, ak = a;
    for (int k = 0; k < 10000; ++k) {
      ak += 1.0;
      term *= x / ak;
      sum += term;
      if (term < 1e-17 * sum) break;
    }
    const double p = sum * ::exp(log_prefactor);
    return upper ? 1.0 - p : p;
  }
  const double tiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (absolute(d) < tiny) d = tiny;
    c = b + an / c;
    if (absolute(c) < tiny) c = tiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (absolute(delta - 1.0) < 1e-16) break;
  }
  const double q = ::exp(log_prefactor) * h;
  return upper ? q : 1.0 - q;
}
//@ igamma: incomplete_gamma
template <typename T>
SMELT_SPECIAL_FN T igamma(T a, T x) { return static_cast<T>(incompleteGamma(a, x, false)); }
//@ igammac: incomplete_gamma
template <typename T>
SMELT_SPECIAL_FN T igammac(T a, T x) { return static_cast<T>(incompleteGamma(a, x, true)); }

//@ polynomial_degree: common
// The degree as torch reads it: truncated to an integer; NaN and values
// outside int64 read as negative, as x86's conversion makes them (every
// polynomial of negative degree is 0).
SMELT_SPECIAL_FN long long polynomialDegree(double n) {
  if (!(n > -1.0 && n < 9.2e18)) return -1;
  return static_cast<long long>(n);
}
template <typename T>
SMELT_SPECIAL_FN T alternating(long long n, T v) { return n % 2 == 0 ? v : -v; }
// P_n (n >= 0) of a three-term recurrence from P_0, P_1 and
// P_k+1 = next(k, P_k, P_k-1), k = 1 .. n-1, in T.
template <typename T, typename Next>
SMELT_SPECIAL_FN T recurrence(long long n, T p0, T p1, Next next) {
  if (n == 0) return p0;
  T p = p0, q = p1;
  for (long long k = 1; k < n; ++k) {
    const T r = next(static_cast<T>(k), q, p);
    p = q;
    q = r;
  }
  return q;
}

//@ chebyshev: polynomial_degree
// T, U, V, W at x, degree n, in T's arithmetic as torch evaluates them (a
// float recurrence overflows, and rounds, as torch's does): the three-term
// recurrence (first two given), the trigonometric forms inside (-1, 1) for
// degrees above 6 (T and the shifted ones) or 8 (U, V, W), as torch, and the
// closed values at +-1.
template <typename T>
SMELT_SPECIAL_FN T chebyshev(char kind, T x, T n_value, bool shifted = false) {
  const long long n = polynomialDegree(n_value);
  if (n < 0) return T(0);
  const T nt = static_cast<T>(n);
  if (x == T(1) || x == T(-1)) {
    switch (kind) {
      case 'T': return x > 0 ? T(1) : alternating(n, T(1));
      case 'U': return x > 0 ? nt + 1 : alternating(n, nt + 1);
      case 'V': return x > 0 ? T(1) : alternating(n, nt + nt + 1);
      default: return x > 0 ? nt + nt + 1 : alternating(n, T(1));
    }
  }
  // torch's degrees from which the trigonometric form is used
  const long long trig_above = kind == 'T' || shifted ? 6 : 8;
  if (n > trig_above && x > T(-1) && x < T(1)) {  // in T, as torch
    const T theta = SMELT_SPECIAL_MATH(acos)(x);
    switch (kind) {
      case 'T': return SMELT_SPECIAL_MATH(cos)(nt * theta);
      case 'U': {
        const T s = SMELT_SPECIAL_MATH(sin)(theta);
        if (s != T(0)) return SMELT_SPECIAL_MATH(sin)((nt + T(1)) * theta) / s;
        return (nt + T(1)) * SMELT_SPECIAL_MATH(cos)((nt + T(1)) * theta) / x;
      }
      case 'V': return SMELT_SPECIAL_MATH(cos)((nt + T(0.5)) * theta) / SMELT_SPECIAL_MATH(cos)(theta / T(2));
      default: return SMELT_SPECIAL_MATH(sin)((nt + T(0.5)) * theta) / SMELT_SPECIAL_MATH(sin)(theta / T(2));
    }
  }
  const T p1 = kind == 'T' ? x : kind == 'U' ? x + x : kind == 'V' ? x + x - T(1) : x + x + T(1);
  return recurrence(n, T(1), p1, [x](T, T q, T p) { return (x + x) * q - p; });
}
//@ chebyshev_polynomial_t: chebyshev
template <typename T>
SMELT_SPECIAL_FN T chebyshev_polynomial_t(T x, T n) { return chebyshev('T', x, n); }
//@ chebyshev_polynomial_u: chebyshev
template <typename T>
SMELT_SPECIAL_FN T chebyshev_polynomial_u(T x, T n) { return chebyshev('U', x, n); }
//@ chebyshev_polynomial_v: chebyshev
template <typename T>
SMELT_SPECIAL_FN T chebyshev_polynomial_v(T x, T n) { return chebyshev('V', x, n); }
//@ chebyshev_polynomial_w: chebyshev
template <typename T>
SMELT_SPECIAL_FN T chebyshev_polynomial_w(T x, T n) { return chebyshev('W', x, n); }
// The shifted polynomials: the same at 2x - 1.
//@ shifted_chebyshev_polynomial_t: chebyshev
template <typename T>
SMELT_SPECIAL_FN T shifted_chebyshev_polynomial_t(T x, T n) { return chebyshev('T', x + x - T(1), n, true); }
//@ shifted_chebyshev_polynomial_u: chebyshev
template <typename T>
SMELT_SPECIAL_FN T shifted_chebyshev_polynomial_u(T x, T n) { return chebyshev('U', x + x - T(1), n, true); }
//@ shifted_chebyshev_polynomial_v: chebyshev
template <typename T>
SMELT_SPECIAL_FN T shifted_chebyshev_polynomial_v(T x, T n) { return chebyshev('V', x + x - T(1), n, true); }
//@ shifted_chebyshev_polynomial_w: chebyshev
template <typename T>
SMELT_SPECIAL_FN T shifted_chebyshev_polynomial_w(T x, T n) { return chebyshev('W', x + x - T(1), n, true); }

//@ hermite_polynomial_h: polynomial_degree
// H_n (physicists'): H_k+1 = 2x H_k - 2k H_k-1.
template <typename T>
SMELT_SPECIAL_FN T hermite_polynomial_h(T x, T n_value) {
  const long long n = polynomialDegree(n_value);
  if (n < 0) return T(0);
  return recurrence(n, T(1), x + x, [x](T k, T q, T p) { return (x + x) * q - (k + k) * p; });
}
//@ hermite_polynomial_he: polynomial_degree
// He_n (probabilists'): He_k+1 = x He_k - k He_k-1.
template <typename T>
SMELT_SPECIAL_FN T hermite_polynomial_he(T x, T n_value) {
  const long long n = polynomialDegree(n_value);
  if (n < 0) return T(0);
  return recurrence(n, T(1), x, [x](T k, T q, T p) { return x * q - k * p; });
}
//@ laguerre_polynomial_l: polynomial_degree
// L_n: (k+1) L_k+1 = (2k + 1 - x) L_k - k L_k-1; 1 at x = 0.
template <typename T>
SMELT_SPECIAL_FN T laguerre_polynomial_l(T x, T n_value) {
  const long long n = polynomialDegree(n_value);
  if (n < 0) return T(0);
  if (x == T(0)) return T(1);
  return recurrence(n, T(1), T(1) - x,
                    [x](T k, T q, T p) { return ((k + k + (T(1) - x)) * q - k * p) / (k + T(1)); });
}
//@ legendre_polynomial_p: polynomial_degree
// P_n: (k+1) P_k+1 = (2k+1) x P_k - k P_k-1; 1 or (-1)^n at +-1.
template <typename T>
SMELT_SPECIAL_FN T legendre_polynomial_p(T x, T n_value) {
  const long long n = polynomialDegree(n_value);
  if (n < 0) return T(0);
  if (x == T(1) || x == T(-1)) return x > 0 ? T(1) : alternating(n, T(1));
  return recurrence(n, T(1), x, [x](T k, T q, T p) { return ((k + k + T(1)) * x * q - k * p) / (k + T(1)); });
}
//@ end

}  // namespace special
}  // namespace smelt
