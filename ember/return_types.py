"""Named result tuples (``ember.return_types.max(values=..., indices=...)``), printed as torch."""

from __future__ import annotations


class _StructSeq(tuple):
    """A tuple with named fields whose repr matches torch's structseq."""

    __slots__ = ()
    _fields: tuple = ()

    def __new__(cls, *values):
        if len(values) == 1 and isinstance(values[0], tuple | list) and len(cls._fields) > 1:
            values = tuple(values[0])
        return tuple.__new__(cls, values)

    def __repr__(self) -> str:
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"ember.return_types.{type(self).__name__}(\n{body})"

    def __reduce__(self):
        return (type(self), (tuple(self),))

    @property
    def n_fields(self) -> int:
        return len(self._fields)


def _make(name: str, fields: tuple) -> type:
    ns = {"__slots__": (), "_fields": fields, "__module__": __name__}
    for i, f in enumerate(fields):
        ns[f] = property(lambda self, i=i: tuple.__getitem__(self, i))
    return type(name, (_StructSeq,), ns)


_VI = ("values", "indices")
max = _make("max", _VI)  # noqa: A001 - torch.return_types.max
min = _make("min", _VI)  # noqa: A001
sort = _make("sort", _VI)
topk = _make("topk", _VI)
median = _make("median", _VI)
nanmedian = _make("nanmedian", _VI)
mode = _make("mode", _VI)
kthvalue = _make("kthvalue", _VI)
cummax = _make("cummax", _VI)
cummin = _make("cummin", _VI)
aminmax = _make("aminmax", ("min", "max"))
slogdet = _make("slogdet", ("sign", "logabsdet"))
linalg_slogdet = _make("linalg_slogdet", ("sign", "logabsdet"))
linalg_eigh = _make("linalg_eigh", ("eigenvalues", "eigenvectors"))
linalg_svd = _make("linalg_svd", ("U", "S", "Vh"))
linalg_qr = _make("linalg_qr", ("Q", "R"))
svd = _make("svd", ("U", "S", "V"))
qr = _make("qr", ("Q", "R"))

# What a call with out= returns (torch.return_types.max_out, ...): the same fields.
for _name in ("max", "min", "sort", "topk", "median", "nanmedian", "mode", "kthvalue", "cummax",
              "cummin", "aminmax", "slogdet", "svd", "qr", "linalg_slogdet", "linalg_eigh",
              "linalg_svd", "linalg_qr"):
    globals()[_name + "_out"] = _make(_name + "_out", globals()[_name]._fields)

__all__ = ["max", "min", "sort", "topk", "median", "nanmedian", "mode", "kthvalue", "cummax",
           "cummin", "aminmax", "slogdet", "linalg_slogdet", "linalg_eigh", "linalg_svd",
           "linalg_qr", "svd", "qr"]

# Results of the functions of the API coverage work (ember/ops/pointwise_extra.py, ...).
frexp = _make("frexp", ("mantissa", "exponent"))
histogram = _make("histogram", ("hist", "bin_edges"))
histogramdd = _make("histogramdd", ("hist", "bin_edges"))
triangular_solve = _make("triangular_solve", ("solution", "cloned_coefficient"))
linalg_inv_ex = _make("linalg_inv_ex", ("inverse", "info"))
linalg_solve_ex = _make("linalg_solve_ex", ("result", "info"))
linalg_cholesky_ex = _make("linalg_cholesky_ex", ("L", "info"))
for _name in ("frexp", "histogram", "histogramdd", "triangular_solve", "linalg_inv_ex",
              "linalg_solve_ex", "linalg_cholesky_ex"):
    globals()[_name + "_out"] = _make(_name + "_out", globals()[_name]._fields)

# LU, Householder QR, least squares and LDL (ember/_linalg_lu.py, ember/_linalg_householder.py,
# ember/_linalg_lstsq.py).
linalg_lu_factor = _make("linalg_lu_factor", ("LU", "pivots"))
linalg_lu_factor_ex = _make("linalg_lu_factor_ex", ("LU", "pivots", "info"))
linalg_lu = _make("linalg_lu", ("P", "L", "U"))
lu_unpack = _make("lu_unpack", ("P", "L", "U"))
_lu_with_info = _make("_lu_with_info", ("LU", "pivots", "info"))
geqrf = _make("geqrf", ("a", "tau"))
linalg_lstsq = _make("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
linalg_ldl_factor = _make("linalg_ldl_factor", ("LD", "pivots"))
linalg_ldl_factor_ex = _make("linalg_ldl_factor_ex", ("LD", "pivots", "info"))
for _name in ("linalg_lu_factor", "linalg_lu_factor_ex", "linalg_lu", "lu_unpack", "geqrf",
              "linalg_lstsq", "linalg_ldl_factor", "linalg_ldl_factor_ex"):
    globals()[_name + "_out"] = _make(_name + "_out", globals()[_name]._fields)
