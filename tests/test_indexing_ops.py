"""gather / scatter / index_* / masked_* / take / nonzero / scatter_reduce against torch."""

import numpy as np
import pytest
from oracle import arr, check, check_error, fd_check, gradgrad_check, negstride, noncontig

import ember

# --- gather / scatter -----------------------------------------------------------------------

L = "int64"
OPS = [
    (lambda m, x, i: x.gather(0, i), arr(4, 3), np.array([[0, 3, 1], [3, 3, 0]])),
    (lambda m, x, i: m.gather(x, 1, i), noncontig(3, 4), np.array([[0], [3], [1]])),
    (lambda m, x, i: x.gather(-1, i), arr(3, 4), np.array([[1, 1, 1, 0]] * 2)),  # smaller
    (lambda m, x, i: x.gather(0, i), arr(), np.array(0)),
    (lambda m, x, i: x.scatter(0, i, 2.0), arr(3, 4), np.array([[0, 2, 1, 0]])),
    (lambda m, x, i: x.scatter(1, i, x[:, :2] * 3), arr(3, 4), np.array([[0, 2]] * 3)),
    (lambda m, x, i: x.scatter(0, i, m.ones(3, 5)), arr(3, 4), np.array([[2, 0, 1, 1]])),
    (lambda m, x, i: x.scatter_add(0, i, x.flip(0)[:2]), arr(3, 4), np.array([[0, 0, 1, 2]] * 2)),
    (lambda m, x, i: m.scatter_add(x, 1, i, m.ones(3, 1)), negstride(3, 4), np.array([[3]] * 3)),
    (lambda m, x, i: x.take_along_dim(i, 1), arr(3, 4), np.array([[0, 3]] * 3)),
    (lambda m, x, i: m.take_along_dim(x, i, 0), arr(3, 4), np.array([[2, 1, 0, 0]])),
    (lambda m, x, i: x.take_along_dim(i), arr(3, 4), np.array([11, 0, 0])),
    (lambda m, x, i: x.take_along_dim(i, 1), arr(1, 4), np.array([[0], [3]])),  # broadcast
    (lambda m, x, i: x.take(i), arr(3, 4), np.array([[0, 11], [-1, 0]])),
    (lambda m, x, i: x.take(i), arr(), np.array([0, 0])),
    (lambda m, x, i: x.index_select(0, i), arr(3, 4), np.array([2, 0, 2])),
    (lambda m, x, i: m.index_select(x, -1, i), noncontig(3, 4), np.array([3])),
    (lambda m, x, i: x.index_select(1, i), arr(3, 4), np.array(1)),
    (lambda m, x, i: x.index_select(0, i), arr(3, 4), np.array([], dtype=L)),
    (lambda m, x, i: x.index_select(0, i), arr(), np.array([0])),
    (lambda m, x, i: x.index_fill(0, i, 1.0), arr(), np.array(0)),
    (lambda m, x, i: x.gather(1, i), arr(3, 4), np.zeros((3, 0), dtype=L)),
    (lambda m, x, i: x.take(i), arr(0, 3), np.zeros(0, dtype=L)),
    (lambda m, x, i: x.index_add(0, i, x[:2] * 2), arr(3, 4), np.array([1, 1])),
    (lambda m, x, i: x.index_add(1, i, m.ones(3, 2), alpha=-2.0), arr(3, 4), np.array([0, 3])),
    (lambda m, x, i: x.index_copy(0, i, x[1:] + 1), arr(3, 4), np.array([2, 0])),
    (lambda m, x, i: x.index_fill(1, i, -3.0), arr(3, 4), np.array([0, 2])),
    (lambda m, x, i: x.index_fill(0, i, x[0, 0]), arr(3, 4), np.array([1])),
    (lambda m, x, i: x.index_put((i,), x[0]), arr(3, 4), np.array([2, 1])),
    (lambda m, x, i: x.index_put((i, i), x[0, :2], accumulate=True), arr(3, 4),
     np.array([1, 1])),
]


@pytest.mark.parametrize("i", range(len(OPS)))
def test_index_ops_match_torch(i):
    fn, a, idx = OPS[i]
    eo, to = check(fn, a, idx)
    assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__


@pytest.mark.parametrize("i", [0, 2, 5, 7, 13, 15, 23, 25, 26, 27, 29])
def test_index_ops_fd_and_gradgrad(i):
    fn, a, idx = OPS[i]
    it = ember.tensor(idx)
    fd_check(lambda x: fn(ember, x, it), a)
    gradgrad_check(lambda x: fn(ember, x, it) ** 2, a)


def test_index_ops_in_place_and_int_dtypes():
    def fn(m, x, i):
        y = x.clone()
        y.index_add_(0, i, m.ones(2, 4, dtype=y.dtype))
        y.index_fill_(1, i, 0)
        y.scatter_(0, i[None].expand(1, 2), 5)
        y.scatter_add_(0, i[None], m.ones(1, 2, dtype=y.dtype))
        y.index_copy_(0, i, y[:2].clone())
        y.index_put_((i,), m.tensor(7, dtype=y.dtype), accumulate=True)
        return y
    check(fn, arr(3, 4), np.array([2, 0]))
    check(fn, arr(3, 4, dtype="int64"), np.array([2, 0]))
    check(lambda m, x, i: x.gather(0, i), arr(3, 4), np.array([[1, 2, 0, 0]], dtype="int32"))


def test_put():
    check(lambda m, x, i: x.put(i, x[0, :2] * 2), arr(2, 3), np.array([0, 4]))
    check(lambda m, x, i: x.put(i, m.ones(2), accumulate=True), arr(2, 3), np.array([-1, -1]))
    eo, to = check(lambda m, x, i: (x * 1).put_(i, m.tensor([1.0, 2.0])), arr(2, 3),
                   np.array([5, 0]))
    assert eo.grad_fn.name() == to.grad_fn.name() == "PutBackward0"


def test_scatter_reduce_legacy():
    with pytest.warns(UserWarning, match="deprecated"):
        ember.zeros(2).scatter(0, ember.tensor([0]), ember.ones(1), reduce="add")
    check(lambda m, x, i: x.scatter(0, i, x[:1] + 1, reduce="add"), arr(3, 4),
          np.array([[0, 0, 1, 2]]), grad=False)
    check(lambda m, x, i: x.scatter(1, i, 2.0, reduce="multiply"), arr(3, 4),
          np.array([[0], [1], [3]]), grad=False)


def test_index_op_errors():
    a, L2 = arr(4, 6), np.zeros((2, 6), dtype=L)
    check_error(lambda m, x, i: x.gather(0, i[0]), a, L2, match="same number of dimensions")
    check_error(lambda m, x: x.gather(0, m.zeros(2, 7, dtype=m.long)), a, match="Size does not")
    check_error(lambda m, x: x.gather(0, m.full((2, 6), 9)), a, match="index 9 is out of bounds")
    check_error(lambda m, x: x.scatter(0, m.full((2, 6), 9), 1.0), a, match="out of bounds")
    check_error(lambda m, x, i: x.scatter(0, i, m.ones(1, 6)), a, L2, match="no larger")
    check_error(lambda m, x, i: x.scatter(0, i[:1], x[:1], reduce="foo"), a, L2,
                match="reduce argument must be either add or multiply")
    check_error(lambda m, x, i: x.index_select(0, i), a, L2, match="supposed to be a vector")
    check_error(lambda m, x: x.index_select(0, m.zeros(2)), a, match="int32 or int64")
    check_error(lambda m, x: x.index_select(0, m.tensor([9])), a, match="index out of range")
    check_error(lambda m, x: x.index_add(0, m.tensor([0, 1]), m.ones(3, 6)), a,
                match="Number of indices (2) should be equal to source.size(dim): (3)")
    check_error(lambda m, x: x.index_add(0, m.tensor([0, 9]), m.ones(2, 6)), a,
                match="out of bounds")
    check_error(lambda m, x: x.index_add(0, m.tensor([0, 1]), m.ones(2, 5)), a,
                match="source tensor shape must match")
    check_error(lambda m, x: x.index_copy(0, m.tensor([0]), m.ones(2, 6)), a,
                match="Number of indices")
    check_error(lambda m, x: x.index_fill(0, m.tensor([9]), 1.0), a, match="out of bounds")
    check_error(lambda m, x: x.int().index_add(0, m.tensor([0]), m.ones(1, 6)), a,
                match="must have the same scalar type")
    check_error(lambda m, x: x.int().index_copy(0, m.tensor([0]), m.ones(1, 6)), a,
                match="expected to have the same dtype")
    check_error(lambda m, x, i: x.int().scatter(0, i, x), a, L2, match="self.dtype to be equal")
    check_error(lambda m, x, i: x.scatter_add(0, i, x.double()), a, L2, match="self.dtype")
    check_error(lambda m, x: x.int().masked_scatter(x > 0, x), a, match="same dtypes")
    check_error(lambda m, x: x.index_put((None, m.tensor([0])), m.tensor(1.0)), a,
                match="expected Tensor as element 0")
    check_error(lambda m, x: x.__setitem__(0, [1.0] * 6), a, match="can't assign a list")
    check_error(lambda m, x: x.__setitem__(0, None), a, match="can't assign a NoneType")
    check_error(lambda m, x: x.take(m.tensor([24])), a, match="out of range: tried to access")
    check_error(lambda m, x: x.take_along_dim(m.zeros(4, dtype=m.long), 1), a,
                match="same number of dimensions")
    check_error(lambda m, x: x.index_put((m.tensor([0, 1]),), m.ones(3)), a,
                match="shape mismatch")
    check_error(lambda m, x: x.int().index_put_((m.tensor([0, 1]),), m.ones(6)), a,
                match="Index put requires the source and destination dtypes match")


# --- masks ----------------------------------------------------------------------------------

MASKED = [
    (lambda m, x: x.masked_fill(x > 0, 2.0), arr(3, 4)),
    (lambda m, x: x.masked_fill(x[0] > 0, -1.5), noncontig(3, 4)),  # broadcast mask
    (lambda m, x: x.masked_fill(m.ones(2, 3, dtype=m.bool), 0.0), arr(3)),  # broadcast self
    (lambda m, x: x.masked_fill(x < 0, x[0, 0] * 2), arr(3, 4)),  # 0-d tensor value
    (lambda m, x: x.masked_fill(x < 0, m.tensor(1.0, dtype=m.float64)), arr(3, 4)),
    (lambda m, x: x.masked_fill(x > 0, 1.0), arr()),
    (lambda m, x: x.masked_select(x > 0), arr(3, 4)),
    (lambda m, x: m.masked_select(x, x[:, :1] > 0), negstride(3, 4)),
    (lambda m, x: x.masked_select(m.ones(2, 3, dtype=m.bool)), arr(3)),
    (lambda m, x: x.masked_scatter(x > 0, x * 10), arr(3, 4)),
    (lambda m, x: x.masked_scatter(x[0] > 0, m.arange(20.0)), arr(3, 4)),
]


@pytest.mark.parametrize("i", range(len(MASKED)))
def test_masked_ops_match_torch(i):
    fn, a = MASKED[i]
    eo, to = check(fn, a)
    assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__


@pytest.mark.parametrize("i", [0, 1, 3, 6, 7, 9])
def test_masked_ops_fd_and_gradgrad(i):
    fn, a = MASKED[i]
    fd_check(lambda x: fn(ember, x), a)
    gradgrad_check(lambda x: fn(ember, x) ** 2, a)


def test_masked_inplace_and_ints():
    def fn(m, x):
        y = x.clone()
        y.masked_fill_(y > 1, 1.5)
        y.masked_scatter_(y < 0, m.zeros(12, dtype=y.dtype))
        return y
    check(fn, arr(3, 4))
    check(fn, arr(3, 4, dtype="int64", low=-3, high=3))
    check(lambda m, x, v: x.clone().masked_fill_(x > 0, v), arr(3, 4), arr())


def test_masked_errors():
    a = arr(4, 6)
    check_error(lambda m, x: x.masked_fill(m.ones(4, 6, dtype=m.long), 1.0), a,
                match="masked_fill_ only supports boolean masks")
    check_error(lambda m, x: x.masked_fill(x > 0, m.ones(2)), a,
                match="only supports a 0-dimensional value tensor")
    check_error(lambda m, x: x.masked_select(m.ones(4, 6)), a, match="expected BoolTensor")
    check_error(lambda m, x: x.masked_scatter(x > -10, m.ones(3)), a,
                match="Number of elements of source < number of ones in mask")
    check_error(lambda m, x: x.masked_fill(m.ones(5, dtype=m.bool), 1.0), a, match="must match")
    check_error(lambda m, x: m.ones(3).masked_fill_(m.ones(2, 3, dtype=m.bool), 0), a,
                match="doesn't match the broadcast shape")


def test_nonzero_argwhere():
    a = arr(3, 4, dtype="int64", low=0, high=2)
    check(lambda m, x: x.nonzero(), a)
    check(lambda m, x: m.nonzero(x, as_tuple=True), a)
    check(lambda m, x: m.argwhere(x), a)
    check(lambda m, x: x.nonzero(), np.array(3))
    check(lambda m, x: x.nonzero(as_tuple=True), np.array(3))
    check(lambda m, x: x.nonzero(), np.zeros((0, 2)))
    check(lambda m, x: (x > 0).nonzero(), arr(5), grad=False)


# --- scatter_reduce -------------------------------------------------------------------------

SR_IDX = np.array([[0, 1, 0, 2], [2, 1, 0, 0]])


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin", "prod"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_torch(reduce, include_self):
    def fn(m, x, s, i, dim=0):
        return x.scatter_reduce(dim, i, s, reduce, include_self=include_self)
    eo, to = check(fn, arr(3, 4), arr(2, 4), SR_IDX)
    assert eo.grad_fn.name() == to.grad_fn.name()
    check(lambda m, x, s, i: fn(m, x, s, i, 1), arr(3, 4), arr(3, 2),
          np.array([[0, 0], [1, 3], [2, 2]]))
    # ties share the gradient; zeros in prod use exclusive products
    t = np.array([[1, 2, 2, 0], [2, 2, 1, 0], [0, 1, 2, 3]], dtype=np.float32)
    s = np.array([[2, 2, 0, 0], [2, 1, 2, 5]], dtype=np.float32)
    check(fn, t, s, np.array([[0, 1, 1, 2], [1, 1, 1, 0]]))
    check(fn, arr(3, 4, dtype="int64", low=-9, high=9), arr(2, 4, dtype="int64", low=-9, high=9),
          SR_IDX)
    it = ember.tensor(SR_IDX)
    fd_check(lambda x, s: fn(ember, x, s, it), arr(3, 4), arr(2, 4))
    gradgrad_check(lambda x, s: fn(ember, x, s, it) ** 2, arr(3, 4), arr(2, 4))


def test_scatter_reduce_errors_and_inplace():
    check_error(lambda m, x, i: x.scatter_reduce(0, i, x[:2], "foo"), arr(3, 4), SR_IDX,
                match="reduce argument must be either sum, prod, mean, amax or amin")
    check(lambda m, x, i: x.clone().scatter_reduce_(0, i, x[:2] * 2, "amax"), arr(3, 4), SR_IDX)


@pytest.mark.parametrize("shape,idx", [((3,), [-1]), ((3, 2), [0, -1]), ((3,), [3]),
                                       ((1, 0), [-1]), ((2, 0), [3]), ((), [0, 0])])
def test_index_select_takes_no_negative_indices(shape, idx):
    # torch's IndexError, or its RuntimeError for an empty multi-dim input / a 0-d one
    check_error(lambda m, x: m.index_select(x, 0, m.tensor(idx)), arr(*shape))


def test_index_select_of_a_0d_tensor():
    check(lambda m, x: m.index_select(x, 0, m.tensor([0])), arr())
    check(lambda m, x: m.index_select(x, 0, m.tensor(0)), arr())
