"""Scalar math helpers copied into kernel modules: `exp`, `tanh`, `log` and `erf`
as branch-free arithmetic that LLVM vectorises, in f64 (equal to libm after rounding
to f32) and `exp`, `tanh`, `erf` in f32 (within 1, 2 and 1.2 f32 ulp, for ops whose
operands and result are f32)."""

from __future__ import annotations

import math

import numpy as np

# Why: numba calls libm's scalar `exp` and `tanh` once per element, which stops a
# loop from vectorising; the GPT's gelu forward and backward took 39 ms of a 101 ms
# step that way, 4.5x more than these forms. The f64 forms are within an f64 ulp or
# two of libm (a test holds them equal after rounding to f32); the f32 forms run
# twice as many lanes (the GPT's gelu 2.7x faster again). CUDA has fast exp and
# tanh of its own, so its kernels call those under the same names (CUDA_BODIES).
#
# The f32 polynomials are evaluated in pairs of terms (c0 + c1 r) + r^2 (...), not by
# Horner's rule: a vector loop of these helpers is bound by its longest chain of
# dependent FMAs (the core cannot hold enough of the loop's instructions to overlap
# more iterations), and pairs halve the chain (erf's Q excepted: in pairs its error
# near |x| = 0.93 passed 1.2 ulp). Measured on one Zen 3 core, 196608
# elements: the GELU's forward 5-6% faster, its backward's exp 5-7%, a sigmoid times
# a tanh 5-8%; each helper keeps its ulp bound, the last bits of some results move.

_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471803691238    # ln 2 split so that n * _LN2_HI is exact for |n| < 2^11
_LN2_LO = 1.9082149292705877e-10


def fast_exp(x):
    """e^x: x = n ln2 + r with |r| <= ln2/2, e^r by its Taylor series to r^13 (error
    below 1e-17), times 2^n built from its bits. NaN in, NaN out; below -708 it
    gives 0, above 709 a value that rounds to inf in f32."""
    y = min(max(x, -708.0), 709.0)
    y = y if y == y else 0.0
    n = math.floor(y * _LOG2E + 0.5)
    r = (y - n * _LN2_HI) - n * _LN2_LO
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    v = p * np.int64((np.int64(n) + 1023) << 52).view(np.float64)
    # below the clamp e^x is an f64 subnormal or 0: 0 (-inf gives 0, as libm)
    v = v if x > -708.0 else 0.0
    return v if x == x else x


def fast_tanh(x):
    """tanh through one fast_exp; below |x| = 1/16, where 1 - e^-2a cancels, its odd
    Taylor series to x^13 (error below 1e-17 relative). Both are computed and one
    selected, so the loop has no branch."""
    a = abs(x)
    e = fast_exp(-2.0 * a)
    big = (1.0 - e) / (1.0 + e)
    z = a * a
    small = a + a * z * (-1.0 / 3.0 + z * (2.0 / 15.0 + z * (-17.0 / 315.0 + z * (
        62.0 / 2835.0 + z * (-1382.0 / 155925.0 + z * (21844.0 / 6081075.0))))))
    t = small if a < 0.0625 else big
    return math.copysign(t, x)


_SQRT2 = 1.4142135623730951
_TWO54 = 18014398509481984.0    # 2^54: scales a subnormal to a normal number


def fast_log(x):
    """log x: x = 2^k m with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) with
    s = (m - 1) / (m + 1), |s| < 0.1716, by its odd series to s^21 (error below
    1e-17), plus k ln2 in two parts. Branch-free, so the loop vectorises (libm's
    scalar log per element does not: 10.7 ms for a million f32, this ~1 ms); within
    an f64 ulp or two of libm, equal to it after rounding to f32 (tested). 0 gives
    -inf, a negative number NaN, inf inf, NaN NaN; subnormals are scaled first."""
    tiny = x < 2.2250738585072014e-308
    y = x * _TWO54 if tiny else x
    bits = np.float64(y).view(np.int64)
    k = ((bits >> 52) & 0x7FF) - 1023
    m = np.int64((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000).view(np.float64)
    over = m > _SQRT2
    m = m * 0.5 if over else m
    n = np.float64(k + (1 if over else 0) - (54 if tiny else 0))
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    p = 1.0 / 21.0
    p = p * z + 1.0 / 19.0
    p = p * z + 1.0 / 17.0
    p = p * z + 1.0 / 15.0
    p = p * z + 1.0 / 13.0
    p = p * z + 1.0 / 11.0
    p = p * z + 1.0 / 9.0
    p = p * z + 1.0 / 7.0
    p = p * z + 1.0 / 5.0
    p = p * z + 1.0 / 3.0
    r = n * _LN2_HI + (n * _LN2_LO + 2.0 * s * (1.0 + z * p))
    r = r if x < math.inf else x
    r = math.nan if x < 0.0 else r
    return -math.inf if x == 0.0 else r

def exp32_parts(y):
    """e^y as (p, k), e^y = p 2^k with p within [0.7, 1.5], for a number y in [-104,
    89]: Cody-Waite with ln2 in two parts and Cephes' degree-7 polynomial."""
    n = np.floor(y * np.float32(1.4426950408889634) + np.float32(0.5))
    r = y - n * np.float32(0.693359375)
    r = r - n * np.float32(-2.12194440e-4)
    r2 = r * r
    p = (np.float32(5.0000001201e-1) + np.float32(1.6666665459e-1) * r) + r2 * (
        (np.float32(4.1665795894e-2) + np.float32(8.3334519073e-3) * r)
        + r2 * (np.float32(1.3981999507e-3) + np.float32(1.9875691500e-4) * r))
    return p * r2 + r + np.float32(1.0), np.int32(n)


def fast_exp32(x):
    """e^x in f32 arithmetic, within 1 ulp: `exp32_parts`, and 2^k as two power-of-two
    factors so that results in the subnormal range round once and 88.4 < x < 88.7
    stays finite."""
    y = min(max(x, np.float32(-104.0)), np.float32(89.0))
    y = y if y == y else np.float32(0.0)
    p, k = exp32_parts(y)
    high = min(max(k, np.int32(-126)), np.int32(127))
    low = k - high                          # in [-24, 1]: 2^low is a normal number
    v = (p * np.int32((low + np.int32(127)) << np.int32(23)).view(np.float32)) \
        * np.int32((high + np.int32(127)) << np.int32(23)).view(np.float32)
    return v if x == x else x


def exp32_scaled(y):
    """e^y for a number y in [-87, 89]: `exp32_parts` and one power-of-two factor,
    (p 2) 2^(k-1), a normal number for every k there (no subnormal path: the sigmoid
    and tanh, its callers, add e^y to 1, which it leaves 1 below e^-87; above
    88.72 the product overflows to inf, as e^y does). Equal to `fast_exp32` over its
    normal results, and the sigmoid and tanh bit for bit."""
    p, k = exp32_parts(y)
    return (p * np.float32(2.0)) * np.int32((k + np.int32(126)) << np.int32(23)).view(np.float32)


def fast_sigmoid32(x):
    """1 / (1 + e^-x) in f32 arithmetic: e^-x by `exp32_scaled` (an RNN's gates loop,
    three sigmoids and two tanhs an element, 10% faster than through `fast_exp32`)."""
    y = min(max(-x, np.float32(-87.0)), np.float32(89.0))
    y = y if y == y else np.float32(0.0)
    s = np.float32(1.0) / (np.float32(1.0) + exp32_scaled(y))
    return s if x == x else x


def fast_tanh32(x):
    """tanh in f32 arithmetic, within 2 ulp: Cephes' odd polynomial below |x| = 0.625,
    (1 - e^-2a) / (1 + e^-2a) above (e^-2a by `exp32_scaled`), selected without a
    branch."""
    a = abs(x)
    y = max(np.float32(-2.0) * a, np.float32(-87.0))
    e = exp32_scaled(y if y == y else np.float32(0.0))
    big = (np.float32(1.0) - e) / (np.float32(1.0) + e)
    z = a * a
    z2 = z * z
    small = a + a * z * ((np.float32(-3.33332819422e-1) + np.float32(1.33314422036e-1) * z) + z2 * (
        (np.float32(-5.37397155531e-2) + np.float32(2.06390887954e-2) * z)
        + z2 * np.float32(-5.70498872745e-3)))
    t = np.float32(math.copysign(small if a < np.float32(0.625) else big, x))
    return t if x == x else x


def fast_erf(x):
    """erf through Cephes' rational forms (ndtr.c), both computed and one selected:
    x T(x^2)/U(x^2) for |x| <= 1, else 1 - e^-x^2 P(|x|)/Q(|x|) with the sign of x
    (|x| taken at most 6, where erf is 1 in f64). libm's erf per element made the
    exact GELU of a char-GPT layer take 12 ms; this vectorises (3.6 ms)."""
    a = abs(x)
    z = x * x
    t = (((9.60497373987051638749 * z + 90.0260197203842689217) * z
          + 2232.00534594684319226) * z + 7003.32514112805075473) * z + 55592.3013010394962768
    u = ((((z + 33.5617141647503099647) * z + 521.357949780152679795) * z
          + 4594.32382970980127987) * z + 22629.0000613890934246) * z + 49267.3942608635921086
    small = x * t / u
    b = min(a, 6.0)
    p = (((((((2.46196981473530512524e-10 * b + 0.564189564831068821977) * b
              + 7.46321056442269912687) * b + 48.6371970985681366614) * b
            + 196.520832956077098242) * b + 526.445194995477358631) * b
          + 934.528527171957607540) * b + 1027.55188689515710272) * b + 557.535335369399327526
    q = (((((((b + 13.2281951154744992508) * b + 86.7072140885989742329) * b
             + 354.937778887819891062) * b + 975.708501743205489753) * b
           + 1823.90916687909736289) * b + 2246.33760818710981792) * b
         + 1656.66309194161350182) * b + 557.535340817727675546
    big = math.copysign(1.0 - fast_exp(-b * b) * p / q, x)
    r = small if a <= 1.0 else big
    return r if x == x else x


def fast_erf32(x):
    """erf in f32 arithmetic, within 1.2 ulp (measured on 20 million points of
    [-6, 6] against f64 erf): x + x P(x^2) for |x| <= 0.921875, else
    1 - e^Q(t) with the sign of x, t = min(|x|, 4) (erf is 1 in f32 beyond 3.92).
    P (degree 6) and Q (degree 7, Q ~ log erfc) are weighted least-squares fits in
    units of the result's ulp; both are computed and one selected, so the loop has
    no branch and runs 16 lanes (the exact GELU's erf was 4x slower in f64)."""
    a = abs(x)
    s = x * x
    s2 = s * s
    s4 = s2 * s2
    p = ((np.float32(0.12837917) + np.float32(-0.37612635) * s) + s2 * (
        np.float32(0.11283703) + np.float32(-0.026859725) * s)) + s4 * (
            (np.float32(0.0052016354) + np.float32(-8.1479026e-4) * s)
            + s2 * np.float32(8.387106e-5))
    small = x + x * p
    t = min(a, np.float32(4.0))
    q = np.float32(-2.1184474e-5)
    q = q * t + np.float32(4.3548047e-4)
    q = q * t + np.float32(-0.004175914)
    q = q * t + np.float32(0.025131982)
    q = q * t + np.float32(-0.10829915)
    q = q * t + np.float32(-0.6333299)
    q = q * t + np.float32(-1.1295232)
    q = q * t + np.float32(1.7636603e-4)
    # e^q for a q in [-16.9, 0.0002] (t finite: a NaN x is handled last): 2^k is a
    # normal number, one factor (fast_exp32's clamps, NaN tests and two factors were
    # a fifth of a GELU's vector instructions), the same bits
    e, k = exp32_parts(q)
    e = e * np.int32((k + np.int32(127)) << np.int32(23)).view(np.float32)
    big = np.float32(math.copysign(np.float32(1.0) - e, x))
    r = small if a <= np.float32(0.921875) else big
    return r if x == x else x


SCALAR_FUNCTIONS = (fast_exp, fast_tanh, fast_log, exp32_parts, fast_exp32, exp32_scaled,
                    fast_sigmoid32, fast_tanh32, fast_erf, fast_erf32)

# the same names in CUDA device code, where the hardware's own functions are fast
CUDA_BODIES = {"fast_exp": "math.exp(x)", "fast_tanh": "math.tanh(x)",
               "fast_exp32": "math.exp(x)", "fast_tanh32": "math.tanh(x)",
               "fast_sigmoid32": "np.float32(1.0) / (np.float32(1.0) + math.exp(-x))",
               "fast_erf": "math.erf(x)", "fast_erf32": "math.erf(x)",
               "fast_log": "math.log(x)"}
