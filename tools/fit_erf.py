#!/usr/bin/env python3
"""Fits the small-|x| polynomial of GraphTensor::erf (src/core/tensor/erf.cpp) and measures the
whole erf's error in float32 emulation (every primitive rounded to f32, as the reference runtime
computes) against math.erf in float64.

    erf(x) = x * P(x^2)                    for |x| < 1   (P: degree 5, fitted here)
    erf(x) = sign(x) * (1 - erfc(|x|))     for |x| >= 1  (erfc: Numerical Recipes' erfcc,
             erfc(a) = t * exp(-a^2 + R(t)), t = 1 / (1 + a/2), fractional error < 1.2e-7)

Prints the coefficients (paste them into erf.cpp) and the maximum absolute error on a dense grid.
"""
import math

import numpy as np

F32 = np.float32
THRESHOLD = 1.0
DEGREE = 5
# Numerical Recipes in C (2nd ed.), section 6.2, erfcc: R(t) coefficients, lowest order first.
NR_ERFCC = [-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
            -1.13520398, 1.48851587, -0.82215223, 0.17087277]


def erf64(v):
    return np.array([math.erf(float(t)) for t in v])


def fit_small():
    """Near-minimax P with erf(x)/x = P(x^2) on (0, THRESHOLD]: least squares on Chebyshev
    nodes, reweighted by the error (Lawson's iteration)."""
    n = 4000
    k = np.arange(n)
    x = THRESHOLD / 2 + THRESHOLD / 2 * np.cos(np.pi * (k + 0.5) / n)
    y = erf64(x) / x
    v = np.vander(x * x, DEGREE + 1, increasing=True)
    w = np.ones(n)
    for _ in range(200):
        sw = np.sqrt(w)
        c, *_ = np.linalg.lstsq(v * sw[:, None], y * sw, rcond=None)
        e = np.abs(v @ c - y)
        w = w * e
        w /= w.sum()
    return c


def horner(coeffs, v):
    p = np.full_like(v, F32(coeffs[-1]))
    for c in reversed(coeffs[:-1]):
        p = (p * v).astype(F32) + F32(c)
    return p.astype(F32)


def erf32(x, small):
    """GraphTensor::erf's decomposition, each step rounded to float32."""
    a = np.abs(x)
    xs = np.clip(x, -THRESHOLD, THRESHOLD).astype(F32)
    lo = (xs * horner(small, (xs * xs).astype(F32))).astype(F32)
    t = (F32(1) / (F32(1) + (a * F32(0.5)).astype(F32))).astype(F32)
    arg = ((-(a * a).astype(F32)) + horner(NR_ERFCC, t)).astype(F32)
    erfc = (t * np.exp2((arg * F32(math.log2(math.e))).astype(F32)).astype(F32)).astype(F32)
    hi = (np.sign(x).astype(F32) * (F32(1) - erfc)).astype(F32)
    return np.where(a < THRESHOLD, lo, hi)


def main():
    small = fit_small()
    print("small-|x| coefficients of P (x^0, x^2, ...):")
    for c in small:
        print(f"  {c:.17g},")
    x = np.linspace(-6, 6, 2_000_001).astype(F32)
    err = np.abs(erf32(x, small).astype(np.float64) - erf64(x))
    print(f"max |erf32 - erf| on [-6, 6]: {err.max():.3g} at x = {x[err.argmax()]}")


if __name__ == "__main__":
    main()
