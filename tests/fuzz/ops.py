"""The op families a statement is drawn from. Each ``f(g)`` returns one line of Python (or None
when the current names offer nothing to apply it to)."""

from __future__ import annotations

import torch

SCALARS = ("0.5", "1.5", "-2.0", "2", "3", "-1", "0.0", "0.25", "-0.75")

UNARY = (
    "torch.exp({a})", "torch.tanh({a})", "torch.sigmoid({a})", "torch.relu({a})", "F.relu({a})",
    "{a}.abs()", "-{a}", "torch.sin({a})", "torch.cos({a})", "{a} ** 2", "{a} ** 3", "{a} ** 0",
    "{a}.pow(1)", "torch.sqrt({a}.abs() + 0.1)", "torch.log({a}.abs() + 0.5)", "{a}.square()",
    "torch.reciprocal({a}.abs() + 1)", "F.softplus({a})", "F.gelu({a})", "torch.sign({a})",
    "torch.floor({a})", "F.leaky_relu({a}, 0.1)", "F.threshold({a}, 0.1, -0.5)", "F.elu({a})",
    "torch.erf({a})", "torch.atan({a})", "F.silu({a})", "F.hardtanh({a})",
    "{a}.abs().pow(1.5)", "torch.rsqrt({a}.abs() + 0.5)", "{a}.clone()", "{a}.detach()",
    "F.relu6({a})", "torch.expm1({a})", "torch.log1p({a}.abs())", "{a}.sinh()", "{a}.round()",
    "torch.trunc({a})", "{a}.to({a}.dtype)", "{a} * 1", "{a}.contiguous()", "F.logsigmoid({a})",
)
SCALAR = (
    "{a} * {s}", "{a} + {s}", "{s} - {a}", "{a} / {s}", "{s} / ({a}.abs() + 1)", "{a} - {s}",
    "torch.add({a}, {s}, alpha=2)", "torch.mul({a}, {s})", "{a} ** 2.0", "torch.pow(2.0, {a})",
    "{s} * {a}", "{a}.clamp(min={s})", "{a}.clamp(max={s})", "torch.fmod({a}, 1.5)",
    "{a} % 1.5", "torch.maximum({a}, torch.tensor({s}))", "{a}.pow({s})",
)
BINARY = (
    "{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / ({b}.abs() + 0.5)", "torch.maximum({a}, {b})",
    "torch.minimum({a}, {b})", "torch.atan2({a}, {b})", "torch.add({a}, {b}, alpha=0.5)",
    "torch.sub({a}, {b}, alpha=2)", "torch.lerp({a}, {b}, 0.3)", "torch.hypot({a}, {b})",
    "torch.mul({a}, {b})", "{a} / {b}", "{a} * {b} + {a}", "torch.where({a} > {b}, {a}, {b})",
)
INPLACE_B = ("{a}.add_({b})", "{a}.sub_({b})", "{a}.mul_({b})", "{a}.div_({b}.abs() + 1)",
             "{a}.copy_({b})", "{a} += {b}", "{a} -= {b}", "{a}.add_({b}, alpha=-0.5)",
             "{a}.clamp_(min={b})")
INPLACE_S = ("{a}.mul_({s})", "{a}.add_({s})", "{a}.sub_({s}, alpha=2)", "{a}.relu_()",
             "{a}.clamp_(min={s})", "{a}.clamp_(-0.5, 0.5)", "{a}.exp_()", "{a}.tanh_()",
             "{a}.sigmoid_()", "{a}.abs_()", "{a}.neg_()", "{a}.zero_()", "{a}.fill_({s})",
             "{a} *= {s}", "{a}.pow_(2)", "F.relu({a}, inplace=True)", "{a}.div_(2)",
             "{a}.sin_()", "{a}.square_()", "{a}.masked_fill_({a} > 0.5, {s})")
SELF_ALIAS = ("{a}.add_({a})", "{a}.mul_({a})", "{a}.copy_({a})", "{a}.sub_({a} * 2)",
              "{a}[1:].copy_({a}[:-1])", "{a}[:-1].add_({a}[1:])", "{a}[1:] = {a}[:-1]",
              "{a}.add_({a}.flip(0))", "{a}[0].mul_({a}[-1])", "{a}.mul_({a}[0])",
              "{a}.add_({a}.t())", "{a}.copy_({a}.transpose(0, -1))",
              "{a}.view(-1)[1:].mul_({a}.view(-1)[:-1])")
VIEW_INPLACE = ("{v}.mul_({s})", "{v}.add_({s})", "{v}.zero_()", "{v}.fill_({s})",
                "{v}.relu_()", "{v}.exp_()", "{v}.neg_()", "{v}.clamp_(max={s})",
                "{v}.copy_({b})", "{v}.add_({b})", "{v}.mul_({b})")
REDUCE = (
    "{a}.sum()", "{a}.sum({d})", "{a}.sum({d}, keepdim=True)", "{a}.mean({d})", "{a}.mean()",
    "{a}.amax({d})", "{a}.amin({d}, keepdim=True)", "{a}.max()", "{a}.min()",
    "{a}.max({d}).values", "{a}.max({d})[0]", "{a}.min({d}, keepdim=True).values",
    "{a}.prod({d})", "{a}.prod()", "{a}.var({d})", "{a}.std()", "torch.logsumexp({a}, {d})",
    "{a}.norm()", "{a}.norm(dim={d})", "torch.cumsum({a}, {d})", "{a}.softmax({d})",
    "F.log_softmax({a}, {d})", "{a}.sum(-1)", "{a}.sort({d}).values", "{a}.amax()",
    "{a}.mean({d}, keepdim=True)", "torch.cumprod({a}, {d})", "{a}.logsumexp(({d}, {e}))",
    "{a}.sum(({d}, {e}))", "{a}.amax(({d}, {e}), keepdim=True)", "{a}.std({d}, keepdim=True)",
)
INT_MAKERS = ("{a}.argmax({d})", "{a}.argmin()", "{a}.max({d}).indices", "({a} > 0).long()",
              "{a}.argsort(dim={d}, stable=True)", "{a}.sort(dim={d}, stable=True).indices")
BOOL_MAKERS = ("{a} > 0", "{a} < {b}", "{a} >= {s}", "({a} > 0) & ({a} < 1)", "~({a} > 0)",
               "{a} == {b}", "{a}.isnan()", "{a} != 0")
WHERE = (
    "torch.where({m}, {a}, {b})", "torch.where({m}, {a}, {s})", "torch.where({m}, {s}, {a})",
    "torch.where({a} > 0, {a}, 0.0)", "{a}.masked_fill({m}, {s})", "torch.clamp({a}, {b}, {c})",
    "{a}.clamp(min={b})", "{a}.clamp(max={b})", "{a}.clamp(-0.5, 0.5)", "{a} * ({a} > 0)",
    "{a}.where({m}, {b})", "torch.where({m}, {a}, {a} * 2)", "{a}.masked_fill({a} < 0, 0.0)",
)


def unary(g):
    a = g.pick()
    return a and f"{g.fresh()} = " + g.choice(UNARY).format(a=a)


def scalar(g):
    a = g.pick()
    return a and f"{g.fresh()} = " + g.choice(SCALAR).format(a=a, s=g.choice(SCALARS))


def binary(g):
    a = g.pick()
    if a is None:
        return None
    b = g.operand(tuple(g.value(a).shape))
    if g.chance(0.5):
        a, b = b, a
    template = g.choice(BINARY)
    if a == b and template == "{a} / {b}":
        # x / x is 1 with derivatives that cancel exactly, so that its second derivative is
        # rounding noise around 0 of the size of 1 / x^3: not comparable between libraries
        template = "{a} * {b}"
    return f"{g.fresh()} = " + template.format(a=a, b=b)


def _target(g):
    """A float name to write in place: mostly non-leaf tensors and views."""
    a = g.pick("f", lambda v: v.grad_fn is not None or not v.requires_grad)
    return a if a is not None and not g.chance(0.08) else g.pick()


def inplace(g):
    a = _target(g)
    if a is None:
        return None
    shape = tuple(g.value(a).shape)
    r = g.rng.random()
    if r < 0.35:
        return g.choice(INPLACE_B).format(a=a, b=g.operand(shape, into=True,
                                                             target=g.value(a)))
    if r < 0.65:
        return g.choice(INPLACE_S).format(a=a, s=g.choice(SCALARS))
    if r < 0.8:
        # Only on a contiguous tensor: where torch finds an overlap "too hard" to check (a
        # strided tensor), the result of a partly self-overlapping write depends on the order
        # its kernel visits the elements in, which nothing else reproduces.
        if g.value(a).is_contiguous():
            return g.choice(SELF_ALIAS).format(a=a)
        return f"{a}.add_({a})"
    v = view_expr(g, a)
    try:
        vshape = tuple(_eval(g, v).shape)
    except Exception:  # noqa: BLE001 - an invalid view: keep it (the error is compared)
        return f"{v}.mul_(2)"
    return g.choice(VIEW_INPLACE).format(v=v, s=g.choice(SCALARS),
                                         b=g.operand(vshape, into=True))


def _eval(g, expr: str):
    return eval(expr, dict(g.ns))  # noqa: S307 - our own generated expression


def view_expr(g, a: str) -> str | None:
    """A view of ``a`` as an expression (without assignment)."""
    v = g.value(a)
    shape, nd = tuple(v.shape), v.ndim
    n = v.numel()
    opts = ["{a}.view(-1)", "{a}.reshape(-1)", "{a}.flatten()", "{a}[None]", "{a}.unsqueeze({u})",
            "{a}.squeeze()", "{a}.view({f})", "{a}.reshape({f})", "{a}.view_as({a})",
            "{a}.expand({x})", "{a}[...]"]
    if nd >= 1:
        opts += ["{a}.squeeze({d})", "{a}[{i}]", "{a}[{lo}:{hi}]", "{a}.narrow({d}, {st}, {ln})",
                 "{a}.select({d}, {j})", "{a}[..., ::2]", "torch.flatten({a}, {d})",
                 "{a}.unbind({d})[{j}]", "{a}.split(2, {d})[0]", "{a}.chunk(2, {d})[-1]",
                 "{a}.movedim({d}, 0)", "{a}[{lo}:]", "{a}.flip(0)"]
    if nd >= 2:
        opts += ["{a}.transpose({d}, {e})", "{a}.t()" if nd == 2 else "{a}.mT",
                 "{a}.permute({p})", "{a}[:, {i}]", "{a}.diagonal()", "{a}[:, None]",
                 "torch.flatten({a}, {d}, {e2})", "{a}.unflatten(0, (1, -1))"]
    t = g.choice(opts)
    d = g.dim(nd)
    dd = d % nd if nd else 0
    size = shape[dd] if nd else 1
    e = g.dim(nd)
    st = g.randint(0, max(size - 1, 0))
    lo = g.randint(0, max(shape[0] - 1, 0)) if nd else 0
    fields = dict(
        a=a, d=d, e=e, e2=max(dd, e % nd if nd else 0), u=g.randint(-nd - 1, nd),
        i=g.randint(-size, size - 1) if size else 0, j=g.randint(0, max(size - 1, 0)),
        lo=lo, hi=g.randint(lo, shape[0]) if nd else 0, st=st, ln=g.randint(0, size - st),
        f=_factor_shape(g, n), x=_expand_shape(g, shape),
        p=", ".join(str(int(i)) for i in g.rng.permutation(nd)) if nd else "")
    return t.format(**fields)


def _factor_shape(g, n: int) -> str:
    """A random shape with ``n`` elements (sometimes with a -1), as text."""
    if n == 0:
        dims = [g.choice((0, 1, 2)), 0] if g.chance(0.5) else [0]
        g.rng.shuffle(dims)
    else:
        dims, left = [], n
        for p in (2, 3, 5, 7):
            while left % p == 0:
                left //= p
                dims.append(p)
        if left > 1:
            dims.append(left)
        g.rng.shuffle(dims)
        merged = []
        for f in dims:
            if merged and g.chance(0.4):
                merged[-1] *= f
            else:
                merged.append(f)
        dims = merged or [1]
        while len(dims) < 4 and g.chance(0.25):
            dims.insert(g.randint(0, len(dims)), 1)
        if g.chance(0.3):
            dims[g.randint(0, len(dims) - 1)] = -1
    return ", ".join(str(x) for x in dims)


def _expand_shape(g, shape: tuple) -> str:
    dims = [g.choice((2, 3)) if n == 1 and g.chance(0.6) else
            (-1 if g.chance(0.3) else n) for n in shape]
    if len(dims) < 4 and g.chance(0.4):
        dims.insert(0, g.choice((1, 2)))
    return ", ".join(str(x) for x in dims) if dims else "()"


def view(g):
    a = g.pick()
    if a is None:
        return None
    v = view_expr(g, a)
    return v and f"{g.fresh()} = {v}"


def indexing(g):
    a = g.pick("f", lambda v: v.ndim >= 1)
    if a is None:
        return None
    v = g.value(a)
    s0 = v.shape[0]
    l0 = g.index_list(s0)
    opts = [f"{a}[{l0}]", f"{a}[torch.tensor({l0}, dtype=torch.int64)]", f"{a}[{a} > 0]",
            f"torch.index_select({a}, 0, torch.tensor({l0}, dtype=torch.int64))",
            f"{a}.take(torch.tensor({g.index_list(v.numel())}, dtype=torch.int64))",
            f"{a}[..., {g.index_list(v.shape[-1])}]"]
    if v.ndim >= 2:
        l1 = g.index_list(v.shape[1], len(l0))
        opts += [f"{a}[:, {l1}]", f"{a}[{l0}, {l1}]", f"{a}[{l0}, :, None]",
                 f"{a}[{a}[:, 0] > 0]"]
    idx = g.pick("i", lambda t: t.ndim <= 2)
    if idx is not None:
        opts.append(f"{a}[{idx}]")
    m = g.pick("b", lambda t: tuple(t.shape) == tuple(v.shape[:t.ndim]) and t.ndim >= 1)
    if m is not None:
        opts.append(f"{a}[{m}]")
    if v.ndim >= 1 and v.numel():
        d = g.dim(v.ndim)
        size = v.shape[d]
        ishape = [g.randint(1, n) if n else 0 for n in v.shape]
        vals = g.rng.integers(0, max(size, 1), size=ishape).tolist()
        opts.append(f"torch.gather({a}, {d}, torch.tensor({vals}, dtype=torch.int64))")
    return f"{g.fresh()} = " + g.choice(opts)


def setitem(g):
    a = _target(g)
    if a is None:
        return None
    v = g.value(a)
    s = g.choice(SCALARS)
    if v.ndim == 0:
        return g.choice((f"{a}[...] = {s}", f"{a}[None] = {s}", f"{a}[()] = {s}"))
    s0 = v.shape[0]
    uniq = sorted(set(int(i) % s0 for i in g.index_list(s0))) if s0 else []
    i = g.randint(-s0, s0 - 1) if s0 else 0
    keys = [str(i), f"{uniq}", f"torch.tensor({uniq}, dtype=torch.int64)", f"{a} > 0",
            "1:", "..., :1", ":-1"]
    if v.ndim >= 2:
        j = g.randint(0, v.shape[1] - 1) if v.shape[1] else 0
        keys += [f":, {j}", f"{i}, {j}", f"{a}[:, 0] > 0"]
    key = g.choice(keys)
    try:
        target = _eval(g, f"{a}[{key}]")
    except Exception:  # noqa: BLE001 - an invalid key: keep it (the error is compared)
        return f"{a}[{key}] = {s}"
    r = g.rng.random()
    if r < 0.4:
        return f"{a}[{key}] = {s}"
    val = g.operand(tuple(target.shape), into=True)
    if r < 0.8 or key.endswith("> 0"):
        return f"{a}[{key}] = {val}" if not key.endswith("> 0") else f"{a}[{key}] = {s}"
    return f"{a}[{key}] += {val}"


def reduce(g):
    a = g.pick()
    if a is None:
        return None
    nd = g.value(a).ndim
    d, e = g.dim(nd), g.dim(nd)
    return f"{g.fresh()} = " + g.choice(REDUCE).format(a=a, d=d, e=e)


def maker(g):
    a = g.pick()
    if a is None:
        return None
    nd = g.value(a).ndim
    if g.chance(0.6):
        b = g.operand(tuple(g.value(a).shape))
        return f"{g.fresh()} = " + g.choice(BOOL_MAKERS).format(a=a, b=b, s=g.choice(SCALARS))
    return f"{g.fresh()} = " + g.choice(INT_MAKERS).format(a=a, d=g.dim(nd))


def where(g):
    a = g.pick()
    if a is None:
        return None
    shape = tuple(g.value(a).shape)

    def bcast(t):
        try:
            torch.broadcast_shapes(tuple(t.shape), shape)
        except RuntimeError:
            return False
        return True

    m = g.pick("b", bcast) if g.chance(0.5) else None
    if m is None:
        m = f"({g.operand(shape)} > 0)"
    b, c = g.operand(shape), g.operand(shape)
    return f"{g.fresh()} = " + g.choice(WHERE).format(a=a, b=b, c=c, m=m, s=g.choice(SCALARS))


def join(g):
    a = g.pick()
    if a is None:
        return None
    shape = list(g.value(a).shape)
    nd = len(shape)
    d = g.dim(nd)
    if g.chance(0.5) or nd == 0:
        others = [g.operand(tuple(shape), into=True) if g.chance(0.2) else
                  _same_shape(g, shape) for _ in range(g.randint(1, 2))]
        fn = "stack" if nd == 0 or g.chance(0.5) else "cat"
        if fn == "stack":
            d = g.randint(-nd - 1, nd)
    else:
        s2 = list(shape)
        s2[d] = g.choice((0, 1, 2, 3))
        others = [_same_shape(g, s2)]
        fn = "cat"
    names = [a, *others]
    g.rng.shuffle(names)
    return f"{g.fresh()} = torch.{fn}([{', '.join(names)}], {d})"


def _same_shape(g, shape) -> str:
    found = g.pick("f", lambda t: list(t.shape) == list(shape)) if g.chance(0.4) else None
    return found or g.new_input(tuple(shape))


def matmul(g):
    a = g.pick("f", lambda t: 1 <= t.ndim <= 3)
    if a is None:
        return None
    shape = tuple(g.value(a).shape)
    k = shape[-1]
    m = g.choice((1, 2, 3, 4))
    if len(shape) == 1:
        bshape = g.choice(((k,), (k, m), (2, k, m)))
    elif len(shape) == 2:
        bshape = g.choice(((k,), (k, m), (k, m), (3, k, m)))
    else:
        bshape = g.choice(((k, m), (shape[0], k, m), (1, k, m)))
    found = g.pick("f", lambda t: tuple(t.shape) == bshape) if g.chance(0.3) else None
    b = found or g.new_input(bshape)
    opts = ["{a} @ {b}", "torch.matmul({a}, {b})"]
    if len(shape) == 2 and len(bshape) == 2:
        opts += ["torch.mm({a}, {b})", "F.linear({a}, {b}.t())"]
    if len(shape) == 2 and len(bshape) == 1:
        opts.append("{a}.mv({b})")
    if len(shape) == 1 and len(bshape) == 1:
        opts += ["torch.dot({a}, {b})", "torch.outer({a}, {b})"]
    if len(shape) == 3 and len(bshape) == 3 and bshape[0] == shape[0]:
        opts.append("torch.bmm({a}, {b})")
    return f"{g.fresh()} = " + g.choice(opts).format(a=a, b=b)


FAMILIES = ((unary, 10), (scalar, 7), (binary, 11), (view, 16), (inplace, 17), (indexing, 7),
            (setitem, 8), (reduce, 10), (maker, 3), (where, 7), (join, 4), (matmul, 5))
_WEIGHTS = [w for _, w in FAMILIES]


def draw(g) -> str | None:
    """One statement from a family drawn by weight."""
    total = sum(_WEIGHTS)
    r = g.rng.random() * total
    for fn, w in FAMILIES:
        if r < w:
            return fn(g)
        r -= w
    return None
