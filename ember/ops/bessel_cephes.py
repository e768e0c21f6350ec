"""torch.special's Bessel-type functions of one argument, with torch's Cephes approximations:
``airy_ai``, ``bessel_j0/j1``, ``bessel_y0/y1``, ``modified_bessel_k0/k1``, their
``scaled_`` (times ``exp(x)``) forms and ``spherical_bessel_j0``.

Each is the rational or Chebyshev approximation of torch's kernel (ATen/native/Math.h),
evaluated in the result dtype branch by branch over the elements that take the branch. I0 and
I1 in the K functions come from ``ember.ops.bessel`` (float64) where torch has Cephes'
Chebyshev kernels. As in torch they have no derivative: the results never require grad.
"""

from __future__ import annotations

import math

import numpy as np

from ember._tensor import Tensor
from ember.ops._cephes import Piecewise, blockwise, chebyshev_series, polevl, tensor, unary_input
from ember.ops.bessel import _bessel

# Coefficient tables, highest power first, copied from torch's kernels.
_AI_AN = (
    3.46538101525629032477e-01, 1.20075952739645805542e+01, 7.62796053615234516538e+01,
    1.68089224934630576269e+02, 1.59756391350164413639e+02, 7.05360906840444183113e+01,
    1.40264691163389668864e+01, 9.99999999999999995305e-01)
_AI_AD = (
    5.67594532638770212846e-01, 1.47562562584847203173e+01, 8.45138970141474626562e+01,
    1.77318088145400459522e+02, 1.64234692871529701831e+02, 7.14778400825575695274e+01,
    1.40959135607834029598e+01, 1.00000000000000000470e+00)
_AI_AFN = (
    -1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
    -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
    -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08)
_AI_AFD = (
    1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
    9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
    4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07)
_AI_AGN = (
    1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
    9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
    5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
    8.11789239554389293311e-08, 3.41551784765923618484e-10)
_AI_AGD = (
    9.30892908077441974853e+00, 1.98352928718312140417e+01, 1.55646628932864612953e+01,
    5.47686069422975497931e+00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
    4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
    4.91834570062930015649e-09)
_J0_PP = (
    7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
    5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
    9.99999999999999997821e-01)
_J0_PQ = (
    9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
    5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
    1.00000000000000000218e+00)
_J0_QP = (
    -1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
    -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
    -5.14105326766599330220e+01, -6.05014350600728481186e+00)
_J0_QQ = (
    6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
    7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
    2.42005740240291393179e+02)
_J0_RP = (
    -4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
    9.70862251047306323952e+15)
_J0_RQ = (
    4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
    1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
    3.18121955943204943306e+16, 1.71086294081043136091e+18)
_J1_PP = (
    7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
    5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
    1.00000000000000000254e+00)
_J1_PQ = (
    5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
    5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
    9.99999999999999997461e-01)
_J1_QP = (
    5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
    3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
    2.11688757100572135698e+02, 2.52070205858023719784e+01)
_J1_QQ = (
    7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
    9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
    3.36093607810698293419e+02)
_J1_RP = (
    -8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
    3.68295732863852883286e+15)
_J1_RQ = (
    6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
    2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
    8.95222336184627338078e+16, 5.32278620332680085395e+18)
_Y0_YP = (
    1.55924367855235737965e+04, -1.46639295903971606143e+07, 5.43526477051876500413e+09,
    -9.82136065717911466409e+11, 8.75906394395366999549e+13, -3.46628303384729719441e+15,
    4.42733268572569800351e+16, -1.84950800436986690637e+16)
_Y0_YQ = (
    1.04128353664259848412e+03, 6.26107330137134956842e+05, 2.68919633393814121987e+08,
    8.64002487103935000337e+10, 2.02979612750105546709e+13, 3.17157752842975028269e+15,
    2.50596256172653059228e+17)
_Y1_YP = (
    1.26320474790178026440e+09, -6.47355876379160291031e+11, 1.14509511541823727583e+14,
    -8.12770255501325109621e+15, 2.02439475713594898196e+17, -7.78877196265950026825e+17)
_Y1_YQ = (
    5.94301592346128195359e+02, 2.35564092943068577943e+05, 7.34811944459721705660e+07,
    1.87601316108706159478e+10, 3.88231277496238566008e+12, 6.20557727146953693363e+14,
    6.87141087355300489866e+16, 3.97270608116560655612e+18)
_K0_A = (
    1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
    1.90451637722020886025e-09, 2.53479107902614945675e-07, 2.28621210311945178607e-05,
    1.26461541144692592338e-03, 3.59799365153615016266e-02, 3.44289899924628486886e-01,
    -5.35327393233902768720e-01)
_K0_B = (
    5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
    -1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
    6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
    -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
    1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
    -1.69753450938905987466e-09, 8.57403401741422608519e-09, -4.66048989768794782956e-08,
    2.76681363944501510342e-07, -1.83175552271911948767e-06, 1.39498137188764993662e-05,
    -1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02,
    2.44030308206595545468e+00)
_K1_A = (
    -7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
    -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
    -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
    -3.53155960776544875667e-01, 1.52530022733894777053e+00)
_K1_B = (
    -5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
    1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
    -7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
    3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
    -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
    2.01504975519703286596e-09, -1.03457624656780970260e-08, 5.74108412545004946722e-08,
    -3.50196060308781257119e-07, 2.40648494783721712015e-06, -1.93619797416608296024e-05,
    1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01,
    2.72062619048444266945e+00)

_SQRT_2_OVER_PI = 0.797884560802865355879892119868763737
_TWO_OVER_PI = 0.636619772367581343075535053490057448
_INV_SQRT_PI = 5.64189583547756286948e-01
_J0_ZEROS_SQ = (5.78318596294678452118e+00, 3.04712623436620863991e+01)
_J1_ZEROS_SQ = (1.46819706421238932572e+01, 4.92184563216946036703e+01)


def _airy_ai(x: np.ndarray) -> np.ndarray:
    pw = Piecewise(x.size, x.dtype)
    pw.case(np.isinf(x), np.nan)
    pw.case(x > 103.892, 0.0)
    pw.case(x < -2.09, lambda i: _airy_negative(x[i]))
    pw.case(x >= 2.09, lambda i: _airy_positive(x[i]))
    return pw.rest(lambda i: _airy_series(x[i]))


def _airy_negative(x: np.ndarray) -> np.ndarray:
    """The oscillating asymptotic form for x < -2.09."""
    zeta = -2.0 * x * np.sqrt(-x) / 3.0
    z = 1.0 / zeta
    zz = z * z
    f = zz * polevl(zz, _AI_AFN) / polevl(zz, _AI_AFD)
    g = z * polevl(zz, _AI_AGN) / polevl(zz, _AI_AGD)
    t = zeta + 0.25 * math.pi
    return _INV_SQRT_PI / np.sqrt(np.sqrt(-x)) * (np.sin(t) * (1.0 + f) - np.cos(t) * g)


def _airy_positive(x: np.ndarray) -> np.ndarray:
    """The decaying asymptotic form for x >= 2.09."""
    zeta = 2.0 * x * np.sqrt(x) / 3.0
    w = 1.0 / zeta
    ratio = polevl(w, _AI_AN) / polevl(w, _AI_AD)
    return _INV_SQRT_PI * ratio / (2.0 * np.sqrt(np.sqrt(x)) * np.exp(zeta))


def _airy_series_coefficients(offset: int) -> tuple:
    """The Maclaurin coefficients in z = x^3 of Ai's two solutions, highest first:
    f = sum z^k / (2*3 * 5*6 * ... (3k-1)*3k) (offset 0), g / x = sum z^k / (3*4 * ... 3k*(3k+1))
    (offset 1). The series is used for |x| < 2.09, where the first term left out of 14 is
    below 1e-21."""
    out, c = [1.0], 1.0
    for k in range(1, 14):
        c /= (3 * k - 1 + offset) * (3 * k + offset)
        out.append(c)
    return tuple(reversed(out))


_AI_F, _AI_G = _airy_series_coefficients(0), _airy_series_coefficients(1)


def _airy_series(x: np.ndarray) -> np.ndarray:
    """c1 f - c2 g for |x| < 2.09 (and NaN): torch sums the same series term by term until a
    term falls below the dtype's epsilon; Horner's rule over all the terms that can matter
    is the same sum, to rounding."""
    z = x * x * x
    return 0.355028053887817239260 * polevl(z, _AI_F) - 0.258819403792806798405 * (
        x * polevl(z, _AI_G))


def _asymptotic(x: np.ndarray, tables: tuple, phase: float, second_kind: bool) -> np.ndarray:
    """Hankel's form for x > 5: P cos(x - phase) - 5/x Q sin(x - phase) for J (Y: sin and
    cos with Q's sign flipped), times sqrt(2 / (pi x))."""
    pp, pq, qp, qq = tables
    w = (5.0 / x) * (5.0 / x)
    p = polevl(w, pp) / polevl(w, pq)
    q = 5.0 / x * (polevl(w, qp) / polevl(w, qq))
    xn = x - phase
    if second_kind:
        v = p * np.sin(xn) + q * np.cos(xn)
    else:
        v = p * np.cos(xn) - q * np.sin(xn)
    return v * _SQRT_2_OVER_PI / np.sqrt(x)


_J0_ASYMPTOTIC = (_J0_PP, _J0_PQ, _J0_QP, _J0_QQ)
_J1_ASYMPTOTIC = (_J1_PP, _J1_PQ, _J1_QP, _J1_QQ)
_PI_4 = 0.785398163397448309615660845819875721
_3PI_4 = 2.356194490192344928846982537459627163


def _j0(x: np.ndarray) -> np.ndarray:
    a = np.abs(x)
    z = a * a
    pw = Piecewise(a.size, a.dtype)
    pw.case(a < 0.00001, 1.0 - z / 4.0)
    pw.case(a <= 5.0, lambda i: ((z[i] - _J0_ZEROS_SQ[0]) * (z[i] - _J0_ZEROS_SQ[1])
                                 * polevl(z[i], _J0_RP) / polevl(z[i], _J0_RQ)))
    return pw.rest(lambda i: _asymptotic(a[i], _J0_ASYMPTOTIC, _PI_4, False))


def _j1(x: np.ndarray) -> np.ndarray:
    a = np.abs(x)
    z = a * a
    pw = Piecewise(a.size, a.dtype)
    pw.case(a <= 5.0, lambda i: (polevl(z[i], _J1_RP) / polevl(z[i], _J1_RQ) * a[i]
                                 * (z[i] - _J1_ZEROS_SQ[0]) * (z[i] - _J1_ZEROS_SQ[1])))
    out = pw.rest(lambda i: _asymptotic(a[i], _J1_ASYMPTOTIC, _3PI_4, False))
    return np.negative(out, out=out, where=x < 0)  # J1 is odd


def _y0(x: np.ndarray) -> np.ndarray:
    z = x * x
    pw = Piecewise(x.size, x.dtype)
    pw.case(x == 0.0, -np.inf)
    pw.case(x < 0.0, np.nan)
    pw.case(x <= 5.0, lambda i: (polevl(z[i], _Y0_YP) / polevl(z[i], _Y0_YQ)
                                 + _TWO_OVER_PI * np.log(x[i]) * _j0(x[i])))
    return pw.rest(lambda i: _asymptotic(x[i], _J0_ASYMPTOTIC, _PI_4, True))


def _y1(x: np.ndarray) -> np.ndarray:
    z = x * x
    pw = Piecewise(x.size, x.dtype)
    pw.case(x == 0.0, -np.inf)
    pw.case(x < 0.0, np.nan)
    pw.case(x <= 5.0, lambda i: (x[i] * (polevl(z[i], _Y1_YP) / polevl(z[i], _Y1_YQ))
                                 + _TWO_OVER_PI * (_j1(x[i]) * np.log(x[i]) - 1.0 / x[i])))
    return pw.rest(lambda i: _asymptotic(x[i], _J1_ASYMPTOTIC, _3PI_4, True))


def _k(x: np.ndarray, order: int, scaled: bool) -> np.ndarray:
    """K0 or K1 (times e^x if ``scaled``): a Chebyshev series in x^2 - 2 plus the logarithmic
    term ``-+log(x/2) I(x)`` up to 2, a Chebyshev series in 8/x - 2 times e^-x / sqrt(x)
    above."""
    small, large = (_K0_A, _K0_B) if order == 0 else (_K1_A, _K1_B)
    pw = Piecewise(x.size, x.dtype)
    pw.case(x == 0.0, np.inf)
    pw.case(x < 0.0, np.nan)

    def near(i):
        s = x[i]
        i_nu = _bessel(s, order, False).astype(s.dtype, copy=False)
        series = chebyshev_series(s * s - 2.0, small)
        v = series - np.log(0.5 * s) * i_nu if order == 0 else np.log(0.5 * s) * i_nu + series / s
        return v * np.exp(s) if scaled else v

    def far(i):
        s = x[i]
        v = chebyshev_series(8.0 / s - 2.0, large)
        return v / np.sqrt(s) if scaled else np.exp(-s) * v / np.sqrt(s)

    pw.case(x <= 2.0, near)
    return pw.rest(far)


_SPHERICAL = (1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0, 1.0 / 120.0,
              -1.0 / 6.0, 1.0)


def _spherical_j0(x: np.ndarray) -> np.ndarray:
    pw = Piecewise(x.size, x.dtype)
    pw.case(np.isinf(x), 0.0)
    pw.case(np.abs(x) < 0.5, lambda i: polevl(x[i] * x[i], _SPHERICAL))
    return pw.rest(lambda i: np.sin(x[i]) / x[i])


def _unary(name: str, fn, input: Tensor, arg: str = "input") -> Tensor:
    x = unary_input(name, input, arg)
    with np.errstate(all="ignore"):  # poles, overflow and NaN give torch's inf / nan / 0
        return tensor(blockwise(fn, x.ravel()), x.shape)


def airy_ai(x: Tensor) -> Tensor:
    """The Airy function Ai(x)."""
    return _unary("airy_ai", _airy_ai, x, "x")


def bessel_j0(input: Tensor) -> Tensor:
    """The Bessel function of the first kind of order 0."""
    return _unary("bessel_j0", _j0, input)


def bessel_j1(input: Tensor) -> Tensor:
    """The Bessel function of the first kind of order 1."""
    return _unary("bessel_j1", _j1, input)


def bessel_y0(input: Tensor) -> Tensor:
    """The Bessel function of the second kind of order 0 (NaN for x < 0)."""
    return _unary("bessel_y0", _y0, input)


def bessel_y1(input: Tensor) -> Tensor:
    """The Bessel function of the second kind of order 1 (NaN for x < 0)."""
    return _unary("bessel_y1", _y1, input)


def modified_bessel_k0(input: Tensor) -> Tensor:
    """The modified Bessel function of the second kind of order 0."""
    return _unary("modified_bessel_k0", lambda x: _k(x, 0, False), input)


def modified_bessel_k1(input: Tensor) -> Tensor:
    """The modified Bessel function of the second kind of order 1."""
    return _unary("modified_bessel_k1", lambda x: _k(x, 1, False), input)


def scaled_modified_bessel_k0(x: Tensor) -> Tensor:
    """``exp(x) * modified_bessel_k0(x)``, without underflow for large x."""
    return _unary("scaled_modified_bessel_k0", lambda a: _k(a, 0, True), x, "x")


def scaled_modified_bessel_k1(x: Tensor) -> Tensor:
    """``exp(x) * modified_bessel_k1(x)``, without underflow for large x."""
    return _unary("scaled_modified_bessel_k1", lambda a: _k(a, 1, True), x, "x")


def spherical_bessel_j0(x: Tensor) -> Tensor:
    """The spherical Bessel function of the first kind of order 0, ``sin(x) / x``."""
    return _unary("spherical_bessel_j0", _spherical_j0, x, "x")
