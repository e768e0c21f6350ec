"""The reparameterisation gradients of Gamma and Dirichlet samples, as torch computes them
(``standard_gamma_grad_one`` and ``dirichlet_grad_one`` in ATen's Distributions.h): series,
saddle-point and rational approximations, picked per element. Each branch is evaluated on the
whole array and the right one selected, so there are no per-element loops. ``st`` is the
tensor's dtype (torch's scalar_t, used where torch computes in it); the rest is float64.
"""

from __future__ import annotations

import numpy as np

_f = np.float32  # torch's float literals (0.8f, ...) are float constants widened to double

_PSI_10 = 2.25175258906672110764
_ASYMPTOTIC = (8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
               -4.16666666666666666667E-3, 3.96825396825396825397E-3,
               -8.33333333333333333333E-3, 8.33333333333333333333E-2)


def digamma_one(x: np.ndarray) -> np.ndarray:
    """torch's ``digamma_one`` (Cephes): shift up to x >= 10, then the asymptotic series."""
    x = np.asarray(x, dtype=np.float64).copy()
    result = np.zeros_like(x)
    reflect = (x < 0) & (x != np.floor(x))
    with np.errstate(divide="ignore", invalid="ignore"):
        extra = np.where(reflect, -np.pi / np.tan(np.pi * x), 0.0)
    x = np.where(reflect, 1 - x, x)
    low = x < 10
    while low.any():
        with np.errstate(divide="ignore"):
            result = np.where(low, result - 1 / x, result)
        x = np.where(low, x + 1, x)
        low = x < 10
    with np.errstate(divide="ignore", invalid="ignore"):
        z = 1.0 / (x * x)
        poly = np.zeros_like(x)
        for a in _ASYMPTOTIC:
            poly = poly * z + a
        y = np.where(x < _f(1.0e17), z * poly, 0.0)
        out = result + np.log(x) - (0.5 / x) - y + extra
    out = np.where(x == 10, result + _PSI_10 + extra, out)
    bad = (x == 0) | ((x < 0) & ~reflect)
    return np.where(bad, np.inf, out)


def standard_gamma_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """d sample / d alpha for standard Gamma samples x (torch's implicit reparameterisation)."""
    st = np.result_type(alpha, x)
    a = alpha.astype(np.float64)
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        # Taylor series for small x
        numer = np.ones_like(x)
        denom = a.copy()
        series1 = numer / denom
        series2 = numer / (denom * denom)
        for i in range(1, 6):
            numer = numer * (-x / i)
            denom = denom + 1
            series1 = series1 + numer / denom
            series2 = series2 + numer / (denom * denom)
        pow_x_alpha = np.power(x, a)
        gamma_pdf = np.power(x, a - 1) * np.exp(-x)
        gamma_cdf = pow_x_alpha * series1
        cdf_alpha = (np.log(x) - digamma_one(a)) * gamma_cdf - pow_x_alpha * series2
        small = -cdf_alpha / gamma_pdf
        small = np.where(np.isnan(small), 0.0, small)
        # Rice saddle point expansion for large alpha
        numer_1 = 1 + 24 * a * (1 + 12 * a)
        numer_2 = 1440 * (a * a) + 6 * x * (53 - 120 * x) - 65 * x * x / a + a * (107 + 3600 * x)
        near = numer_1 * numer_2 / (1244160 * (a * a) * (a * a))
        sdenom = np.sqrt(8 * a)
        term2 = sdenom / (a - x)
        term3 = np.power(x - a - a * np.log(x / a), -1.5)
        term23 = np.where(x < a, term2 - term3, term2 + term3)
        term1 = np.log(x / a) * term23 - np.sqrt(2 / a) * (a + x) / ((a - x) * (a - x))
        stirling = 1 + 1 / (12 * a) * (1 + 1 / (24 * a))
        far = -stirling * (x * term1) / sdenom
        large = np.where((_f(0.9) * a <= x) & (x <= _f(1.1) * a), near, far)
        rational = _gamma_grad_rational(np.log(x / a), np.log(a))
    out = np.where(x < _f(0.8), small, np.where(a > _f(8.0), large, rational))
    return out.astype(st)


_GAMMA_UV = ((0.16009398, -0.094634809, 0.025146376, -0.0030648343,
              1, 0.32668115, 0.10406089, 0.0014179084),
             (0.53487893, 0.1298071, 0.065735949, -0.0015649758,
              0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
             (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
              0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07))


def _gamma_grad_rational(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    cv = [_GAMMA_UV[0][i] + u * (_GAMMA_UV[1][i] + u * _GAMMA_UV[2][i]) for i in range(8)]
    p = cv[0] + v * (cv[1] + v * (cv[2] + v * cv[3]))
    q = cv[4] + v * (cv[5] + v * (cv[6] + v * cv[7]))
    return np.exp(p / q)


def _beta_grad_alpha_small(x, alpha, beta, st):
    """Taylor expansion for x near 0 (computed in scalar_t, as torch)."""
    factor = (digamma_one(alpha).astype(st) - digamma_one(alpha + beta).astype(st)
              - np.log(x))
    numer = np.ones_like(x)
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        ci = st(i)
        numer = numer * ((ci - beta) * x / ci)
        denom = alpha + ci
        series = series + numer / denom * (factor + 1 / denom)
    result = x * np.power(1 - x, -beta) * series
    return np.where(np.isnan(result), st(0), result)


def _beta_grad_beta_small(x, alpha, beta, st):
    """Taylor expansion in beta's direction for x near 0 (scalar_t)."""
    factor = digamma_one(alpha + beta).astype(st) - digamma_one(beta).astype(st)
    numer = np.ones_like(x)
    betas = np.ones_like(x)
    dbetas = np.zeros_like(x)
    series = factor / alpha
    for i in range(1, 9):
        ci = st(i)
        numer = numer * (-x / ci)
        dbetas = dbetas * (beta - ci) + betas
        betas = betas * (beta - ci)
        series = series + numer / (alpha + ci) * (dbetas + factor * betas)
    result = -np.power(1 - x, 1 - beta) * series
    return np.where(np.isnan(result), st(0), result)


def _beta_grad_alpha_mid(x, alpha, beta):
    """Rice saddle point expansion for large alpha and beta (float64)."""
    total = alpha + beta
    mean = alpha / total
    std = np.sqrt(alpha * beta / (total + 1)) / total
    b2 = beta * beta
    poly = 47 * x * b2 * b2 + alpha * (
        (43 + 20 * (16 + 27 * beta) * x) * b2 * beta + alpha * (
            3 * (59 + 180 * beta - 90 * x) * b2 + alpha * (
                (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (
                    8 * (1 - x) * (135 * beta - 11)))))
    prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
    prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
    near = prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / np.sqrt(2 * alpha * beta / total)
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha))
                * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * b2
    axbx = alpha * (x - 1) + beta * x
    term1 = term1_num / (np.sqrt(2 * alpha / beta) * np.power(total, 1.5) * axbx * axbx)
    term2 = 0.5 * np.log(alpha / (total * x))
    term3 = np.sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    term4 = np.power(beta * np.log(beta / (total * (1 - x)))
                     + alpha * np.log(alpha / (total * x)), -1.5)
    term1234 = term1 + term2 * (term3 + np.where(x < mean, term4, -term4))
    far = stirling * prefactor * term1234
    return np.where((mean - 0.1 * std <= x) & (x <= mean + 0.1 * std), near, far)


_DIRICHLET_C = np.array([
    [[[1.003668233, -0.01061107488, -0.0657888334, 0.01201642863],
      [0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033],
      [-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013]],
     [[0.221950385, -0.3187676331, 0.01799915743, 0.01074823814],
      [-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057],
      [0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05]],
     [[-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565],
      [0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181],
      [0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05]]],
    [[[1, -0.02924021934, -0.04438342661, 0.007285809825],
      [0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521],
      [-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149]],
     [[0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273],
      [0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956],
      [-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05]],
     [[0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05],
      [0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05],
      [-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06]]]])


def dirichlet_grad(x: np.ndarray, alpha: np.ndarray, total: np.ndarray) -> np.ndarray:
    """torch's ``_dirichlet_grad``: the scaled reparameterised gradient of Beta(alpha,
    total - alpha) samples x with respect to alpha."""
    x, alpha, total = np.broadcast_arrays(x, alpha, total)
    st = np.dtype(np.result_type(x, alpha, total)).type
    x, alpha, total = x.astype(st), alpha.astype(st), total.astype(st)
    x_, alpha_, total_ = (t.astype(np.float64) for t in (x, alpha, total))
    beta = total - alpha
    boundary = total * x * (1 - x)
    with np.errstate(all="ignore"):
        small_a = _beta_grad_alpha_small(x, alpha, beta, st).astype(np.float64)
        small_b = -_beta_grad_beta_small(1 - x, beta, alpha, st).astype(np.float64)
        mid = _beta_grad_alpha_mid(x_, alpha_, total_ - alpha_)
        u = np.log(x_)
        a = np.log(alpha_) - u
        b = np.log(total_) - a
        pow_u, pow_a = (1, u, u * u), (1, a, a * a)
        p = q = 0.0
        for i in range(3):
            for j in range(3):
                ua = pow_u[i] * pow_a[j]
                cp, cq = _DIRICHLET_C[0, i, j], _DIRICHLET_C[1, i, j]
                p = p + ua * (cp[0] + b * (cp[1] + b * (cp[2] + b * cp[3])))
                q = q + ua * (cq[0] + b * (cq[1] + b * (cq[2] + b * cq[3])))
        approx = x_ * (digamma_one(total) - digamma_one(alpha)) / (total_ - alpha_)
        rational = p / q * approx
    out = np.where((x <= 0.5) & (boundary < 2.5), small_a,
                   np.where((x >= 0.5) & (boundary < 0.75), small_b,
                            np.where((alpha > 6) & (beta > 6), mid, rational)))
    return out.astype(st)
