"""Top-level and Tensor-method spellings of the LU and Householder functions (``torch.lu``,
``torch.lu_solve``, ``torch.lu_unpack``, ``torch.geqrf``, ``torch.orgqr``, ``torch.ormqr``)
the randomized low-rank SVD / PCA (``torch.svd_lowrank``, ``torch.pca_lowrank``) and LOBPCG
(``torch.lobpcg``).
"""

from __future__ import annotations

import warnings

from ember import return_types
from ember._linalg_householder import geqrf, orgqr, ormqr
from ember._linalg_lu import LinalgLuFactorEx, _check_lu_input, lu_unpack
from ember._lobpcg import lobpcg
from ember._lowrank import pca_lowrank, svd_lowrank
from ember._tensor import Tensor
from ember.ops._out import _write


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False, out=None):
    """Deprecated: ``(LU, pivots)``, or ``(LU, pivots, infos)`` with ``get_infos``."""
    warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / "
                  "torch.linalg.lu_factor_ex and will be removed in a future PyTorch release.\n"
                  "LU, pivots = torch.lu(A, compute_pivots)\nshould be replaced with\nLU, pivots "
                  "= torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = "
                  "torch.lu(A, compute_pivots, get_infos=True)\nshould be replaced with\nLU, "
                  "pivots, info = torch.linalg.lu_factor_ex(A, compute_pivots)", UserWarning,
                  stacklevel=2)
    _check_lu_input(A, pivot)
    res = LinalgLuFactorEx.apply(A)
    res = return_types._lu_with_info(*res) if get_infos else (res[0], res[1])
    if out is None:
        return res
    if len(out) != len(res):
        raise TypeError(f"expected tuple of {len(res)} elements but got {len(out)}")
    for o, r in zip(out, res):  # torch writes the results and returns out itself
        _write("lu", o, r, False)
    return out


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """Deprecated: ``linalg.lu_solve(LU_data, LU_pivots, b)``."""
    from ember.linalg import lu_solve as solve

    warnings.warn("torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be "
                  "removed in a future PyTorch release.\nNote that torch.linalg.lu_solve has its "
                  "arguments reversed.\nX = torch.lu_solve(B, LU, pivots)\nshould be replaced "
                  "with\nX = torch.linalg.lu_solve(LU, pivots, B)", UserWarning, stacklevel=2)
    return solve(LU_data, LU_pivots, b)





FUNCTIONS = {"lu": lu, "lu_solve": lu_solve, "lu_unpack": lu_unpack, "geqrf": geqrf,
             "orgqr": orgqr, "ormqr": ormqr, "svd_lowrank": svd_lowrank,
             "pca_lowrank": pca_lowrank, "lobpcg": lobpcg}
METHODS = {"lu": lu, "lu_solve": lu_solve, "geqrf": geqrf, "orgqr": orgqr,
           "ormqr": ormqr}
