"""Programs for CUDA tensors: a program captured on the CPU, replayed with CuPy.

How data flows: ``program.build`` captures a function whose tensors live on ``cuda:0`` on
host copies of their arrays (capture records NumPy calls, and CuPy mirrors NumPy's API), so
the recorded graph is the same as for CPU tensors. For the GPU, ``fusion`` turns runs of
elementwise calls into generated ``cupy.ElementwiseKernel``s, and ``codegen`` writes the
program against ``CupyNumpy`` (``np.add`` is ``cupy.add``; constants move to the GPU once).
Random draws stay on the host generator and are copied over, as in eager ember (GPU
tensors draw from ember's CPU generator), so a seeded run equals the eager one. ``validate``
then checks the replay against the eager function on the GPU, so a call CuPy
lacks or computes differently makes the signature run eagerly, with the reason.
With ``mode="reduce-overhead"`` (or ``"max-autotune"``) ``GraphReplay`` records each program
into a CUDA graph (``cupy.cuda.Graph``) and launches that once per call.
"""

from __future__ import annotations

import numpy as np

from ember._backend import strided_view


class CupyNumpy:
    """``np`` for generated GPU code: CuPy's function of the same name, else NumPy's (which
    hands CuPy arrays to CuPy through ``__array_function__``); ``overrides`` first."""

    def __init__(self, cupy, overrides: dict | None = None) -> None:
        self._cupy = cupy
        self.__dict__.update(overrides or {})

    def __getattr__(self, name: str):
        fn = getattr(self._cupy, name, None)
        if fn is None:
            fn = getattr(np, name)
        setattr(self, name, fn)
        return fn


_NAMESPACE: dict = {}


def namespace(graphs: bool = False) -> CupyNumpy:
    """The namespace of GPU programs; for programs recorded into CUDA graphs, matrix products
    go to ``graph_matmul`` (CuPy refuses cuBLAS calls during stream capture)."""
    if graphs not in _NAMESPACE:
        import cupy  # noqa: PLC0415 - only GPU programs get here

        _NAMESPACE[graphs] = CupyNumpy(cupy, {"matmul": graph_matmul} if graphs else None)
    return _NAMESPACE[graphs]


CAPTURING = [False]  # set while a CUDA graph is being recorded


def unless_capturing(fn):
    """A data check (``traced.check``: targets in range, say) reads values on the host, which
    a CUDA graph cannot record: it runs on plain calls and is left out of the graph."""
    def check(*args, **kwargs):
        if not CAPTURING[0]:
            fn(*args, **kwargs)
    check.__name__ = getattr(fn, "__name__", "check")
    return check


_GEMM = r"""
extern "C" __global__ void NAME(const TYPE* A, const TYPE* B, TYPE* C, int M, int N, int K,
    long long sab, long long sam, long long sak, long long sbb, long long sbk, long long sbn,
    long long scb, long long scm, long long scn) {
  // A 64x64 tile of C per block of 16x16 threads, 4x4 outputs per thread (rows ty + 16i,
  // columns tx + 16j); 64x16 tiles of A and 16x64 of B staged in shared memory. Any strides:
  // a transposed view needs no copy.
  __shared__ TYPE As[16][65];
  __shared__ TYPE Bs[16][65];
  const TYPE* a = A + blockIdx.z * sab;
  const TYPE* b = B + blockIdx.z * sbb;
  int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
  int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
  TYPE acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0;
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int l = 0; l < 4; ++l) {
      int idx = tid + l * 256;
      int r = idx / 16, ka = idx % 16;  // A: consecutive threads read along k
      int gr = row0 + r, gk = k0 + ka;
      As[ka][r] = (gr < M && gk < K) ? a[gr * sam + gk * sak] : (TYPE)0;
      int kb = idx / 64, c = idx % 64;  // B: consecutive threads read along n
      int gkb = k0 + kb, gc = col0 + c;
      Bs[kb][c] = (gkb < K && gc < N) ? b[gkb * sbk + gc * sbn] : (TYPE)0;
    }
    __syncthreads();
    for (int kk = 0; kk < 16; ++kk) {
      TYPE av[4], bv[4];
      for (int i = 0; i < 4; ++i) av[i] = As[kk][ty + 16 * i];
      for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      int r = row0 + ty + 16 * i, c = col0 + tx + 16 * j;
      if (r < M && c < N) C[blockIdx.z * scb + r * scm + c * scn] = acc[i][j];
    }
}
"""
_KERNELS: dict = {}


def _gemm_kernel(dtype):
    import cupy  # noqa: PLC0415

    key = np.dtype(dtype)
    if key not in _KERNELS:
        ctype = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}[key]
        name = f"ember_gemm_{ctype}"
        _KERNELS[key] = cupy.RawKernel(_GEMM.replace("NAME", name).replace("TYPE", ctype),
                                       name)
    return _KERNELS[key]


def graph_matmul(a, b, out=None):
    """``matmul`` for float32/float64 programs recorded into CUDA graphs: one kernel of ember's
    own per product (batched over leading dimensions), which stream capture accepts. Other
    dtypes go to CuPy's (cuBLAS: the capture then fails and the program replays plainly)."""
    import cupy  # noqa: PLC0415

    if (a.dtype != b.dtype or a.dtype not in (np.float32, np.float64) or not a.ndim
            or not b.ndim or out is not None and not out.flags.c_contiguous):
        return cupy.matmul(a, b, out=out)
    va, vb = a.ndim == 1, b.ndim == 1
    a2 = a[None, :] if va else a
    b2 = b[:, None] if vb else b
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    m, k = a2.shape[-2:]
    n = b2.shape[-1]
    nb = int(np.prod(batch))  # (not -1 in the reshapes: a size may be 0)
    a3 = cupy.broadcast_to(a2, (*batch, m, k)).reshape(nb, m, k)
    b3 = cupy.broadcast_to(b2, (*batch, k, n)).reshape(nb, k, n)
    shape = (*batch, *(() if va else (m,)), *(() if vb else (n,)))
    res = out if out is not None else cupy.empty(shape, a.dtype)
    c3 = res.reshape(nb, m, n)  # a view of ``res``: buffers the program hands are contiguous
    if c3.size:  # (k == 0 leaves the sums at 0, as they should be)
        s = [x // a.itemsize for arr in (a3, b3, c3) for x in arr.strides]
        if a3.shape[0] == 1:
            s[0] = s[3] = s[6] = 0
        grid = ((n + 63) // 64, (m + 63) // 64, c3.shape[0])
        _gemm_kernel(a.dtype)(grid, (16, 16), (a3, b3, c3, np.int32(m), np.int32(n),
                                                np.int32(k), *map(np.int64, s)))
    return res


def device_object(obj):
    """A global the generated code binds, as the GPU program needs it: NumPy arrays (captured
    constants, persistent buffers) become CuPy arrays; NumPy functions their CuPy
    counterparts where CuPy has one."""
    import cupy  # noqa: PLC0415

    if isinstance(obj, np.ndarray):
        return cupy.asarray(obj)
    if obj is np.lib.stride_tricks.as_strided or obj is strided_view:
        return _as_strided  # CuPy's takes no ``writeable``
    if callable(obj) and (getattr(obj, "__module__", None) or "").startswith("numpy"):
        import importlib  # noqa: PLC0415

        for where in (obj.__module__.replace("numpy", "cupy", 1), "cupy"):
            try:
                found = getattr(importlib.import_module(where), obj.__name__, None)
            except ImportError:
                found = None
            if found is not None:
                return found
    return obj


def _as_strided(x, shape=None, strides=None, *_, **__):
    import cupy  # noqa: PLC0415

    return cupy.lib.stride_tricks.as_strided(x, shape, strides)


def host(a):
    """A NumPy copy of a CuPy (or NumPy) array."""
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.array(a)


class GraphReplay:
    """A generated program recorded into a CUDA graph (``mode="reduce-overhead"``).

    Its first call runs plainly and notes its arrays. The second runs for real on the capture
    stream (the kernels compile and CuPy's caches warm up, from a pool of the graph's own)
    and is then recorded. Later calls copy their fresh inputs into the graph's static input
    buffers and launch the graph on the current stream. Arrays passed again as the same
    object (parameters, buffers, values saved by the forward) are read in place; if one of
    them is replaced, the program is recorded again. Outputs come back as copies, except
    those named ``keep_static`` (the values a forward saves for its backward: ``generation``
    tells the backward whether a later launch overwrote them). Whatever the capture refuses
    (a host synchronisation, say) sends the program back to plain replay, with the reason in
    ``failed``."""

    def __init__(self, fn, static_tail: bool = False, warm: int = 1) -> None:
        self.fn, self.warm = fn, warm  # plain calls before the graph is recorded
        self.static_tail = static_tail  # the result is (outputs, saved): saved stay static
        self.calls = 0
        self.graph = None
        self.generation = 0
        self.failed: str | None = None
        self.last: tuple = ()

    def __call__(self, *arrays):
        self.calls += 1
        self.generation += 1
        if self.failed is not None:
            return self.fn(*arrays)
        if self.calls <= self.warm:
            self.last = arrays
            return self.fn(*arrays)
        if self.graph is None or not self._same(arrays):
            return self._capture(arrays)
        for dst, src, mine in zip(self.static, arrays, self.owned):
            if mine and src is not dst:
                dst[...] = src
        self.graph.launch(self._current())
        return self._out(self.result)

    def _current(self):
        import cupy  # noqa: PLC0415

        return cupy.cuda.get_current_stream()

    def _same(self, arrays) -> bool:
        return all(mine or a is s for a, s, mine in zip(arrays, self.static, self.owned))

    def _out(self, result):
        if self.static_tail:
            return _copy_out(result[0]), result[1]
        return _copy_out(result)

    def _capture(self, arrays):
        import cupy  # noqa: PLC0415

        self.owned = [a is not b for a, b in zip(arrays, self.last)]
        self.last = arrays
        self.static = [cupy.array(a, copy=True) if mine else a
                       for a, mine in zip(arrays, self.owned)]
        pool = cupy.cuda.MemoryPool()
        stream = cupy.cuda.Stream(non_blocking=True)
        mode = getattr(cupy.cuda.runtime, "streamCaptureModeRelaxed", None)
        cupy.cuda.Device().synchronize()
        try:
            with cupy.cuda.using_allocator(pool.malloc), stream:
                now = self.fn(*self.static)  # this call's own run
                stream.synchronize()
                stream.begin_capture() if mode is None else stream.begin_capture(mode)
                CAPTURING[0] = True
                try:
                    self.result = self.fn(*self.static)
                finally:
                    CAPTURING[0] = False
                    self.graph = stream.end_capture()
        except Exception as e:  # noqa: BLE001 - any refusal: replay without a graph
            self.failed = f"{type(e).__name__}: {e}"
            self.graph = None
            cupy.cuda.Device().synchronize()
            return self.fn(*arrays)
        self.pool, self.stream = pool, stream  # the graph's memory lives as long as it does
        if not self.static_tail:
            return _copy_out(now)
        for dst, src in zip(self.result[1], now[1]):  # the graph's saved values hold this
            if dst is not src:                          # call's, for its backward
                dst[...] = src
        stream.synchronize()
        return _copy_out(now[0]), self.result[1]


def _copy_out(obj):
    if isinstance(obj, tuple):
        return tuple(_copy_out(o) for o in obj)
    return obj.copy() if getattr(obj, "ndim", None) is not None else obj
