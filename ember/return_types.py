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
