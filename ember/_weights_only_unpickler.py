"""The unpickler behind ``ember.load(weights_only=True)``: torch's rules for what a file may build.

A checkpoint may name only allow-listed globals (torch's rebuild functions, dtypes, containers,
the classes given to ``add_safe_globals``), and, as in torch/_weights_only_unpickler.py, it may
change state only on objects that this load created:

- BUILD only on instances made here by NEWOBJ/REDUCE of an allowed class (an OrderedDict's
  ``_metadata``, a safe-listed class's ``__dict__``), never on a class, function, dtype or other
  global, and never on a tensor (whose state goes through the rebuild functions' checks);
- SETITEM(S) only on dicts, OrderedDicts and Counters, APPEND(S) only on lists, ADDITEMS only on
  sets, each built by this stream;
- only the opcodes that build plain data (protocols 2-5); the rest is refused as torch does.

Without these rules a few bytes (``ctorch\\nfloat32\\n ... b``) set attributes on ember's own
objects and change every later computation in the process.
"""

from __future__ import annotations

import _compat_pickle
import contextlib
import pickle
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

from ember._backend import device
from ember._tensor import Tensor

UnpicklingError = pickle.UnpicklingError

# --- user allow-list (torch.serialization.add_safe_globals & co.) ----------------------------
_SAFE_GLOBALS: dict[str, Any] = {}

# Never importable from a weights-only checkpoint, even when allow-listed (as in torch).
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")


def _global_name(obj) -> str:
    if isinstance(obj, tuple):
        if len(obj) != 2:
            raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), "
                             f"but got tuple of length: {len(obj)}")
        if type(obj[1]) is not str:
            raise TypeError(f"Expected second item in tuple to be str of callable full path, "
                            f"but got: {type(obj[1])}")
        return obj[1]
    return f"{obj.__module__}.{obj.__qualname__}"


def add_safe_globals(safe_globals: list) -> None:
    """Allow these classes/functions (or ``(obj, "module.name")`` pairs) in weights-only loads."""
    for g in safe_globals:
        _SAFE_GLOBALS[_global_name(g)] = g[0] if isinstance(g, tuple) else g


def get_safe_globals() -> list:
    """The globals added with ``add_safe_globals``."""
    return list(_SAFE_GLOBALS.values())


def clear_safe_globals() -> None:
    """Forget every global added with ``add_safe_globals``."""
    _SAFE_GLOBALS.clear()


@contextlib.contextmanager
def safe_globals(globals_list: list):
    """Context manager: allow these globals only inside the block."""
    saved = dict(_SAFE_GLOBALS)
    add_safe_globals(globals_list)
    try:
        yield
    finally:
        _SAFE_GLOBALS.clear()
        _SAFE_GLOBALS.update(saved)


# --- messages ---------------------------------------------------------------------------------
_UNSAFE = ("Re-running `ember.load` with `weights_only` set to `False` will likely succeed, but "
           "it can result in arbitrary code execution. Do it only if you got the file from a "
           "trusted source.")


def weights_only_message(message: str) -> str:
    """torch's wrapping of a weights-only refusal (torch.serialization._get_wo_message)."""
    if "was not an allowed global by default" in message:
        return ("Weights only load failed. This file can still be loaded, to do so you have two "
                "options, do those steps only if you trust the source of the checkpoint. "
                f"\n\t(1) {_UNSAFE}\n\t(2) Alternatively, to load with `weights_only=True` please "
                "check the recommended steps in the following error message.\n\t"
                "WeightsUnpickler error: " + message)
    return f"Weights only load failed. {_UNSAFE}\nWeightsUnpickler error: \n\n{message}"


def _unsupported_global(full: str) -> str:
    return (f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
            f"`ember.serialization.add_safe_globals([{full}])` or the "
            f"`ember.serialization.safe_globals([{full}])` context manager to allowlist this "
            "global if you trust this class/function.")


# --- the unpickler ----------------------------------------------------------------------------
_P = pickle._Unpickler  # the pure-Python unpickler: one method per opcode, each one vetted here

# Opcodes that only push data read from the stream, or move it around: taken as they are.
_DATA_OPCODES = (
    pickle.PROTO, pickle.FRAME, pickle.STOP, pickle.MARK, pickle.POP, pickle.POP_MARK,
    pickle.DUP, pickle.NONE, pickle.NEWTRUE, pickle.NEWFALSE, pickle.BININT, pickle.BININT1,
    pickle.BININT2, pickle.LONG1, pickle.LONG4, pickle.BINFLOAT, pickle.BINSTRING,
    pickle.SHORT_BINSTRING, pickle.BINBYTES, pickle.SHORT_BINBYTES, pickle.BINBYTES8,
    pickle.BINUNICODE, pickle.SHORT_BINUNICODE, pickle.BINUNICODE8,
    pickle.EMPTY_TUPLE, pickle.TUPLE, pickle.TUPLE1, pickle.TUPLE2, pickle.TUPLE3,
    pickle.FROZENSET, pickle.BINGET, pickle.LONG_BINGET, pickle.BINPUT, pickle.LONG_BINPUT,
    pickle.MEMOIZE, pickle.BINPERSID, pickle.GLOBAL, pickle.STACK_GLOBAL,
)
# Opcodes that make a new mutable container: the only targets SETITEM/APPEND/ADDITEMS accept.
_CONTAINER_OPCODES = (pickle.EMPTY_LIST, pickle.LIST, pickle.EMPTY_DICT, pickle.DICT,
                      pickle.EMPTY_SET)


class _Dispatch(dict):
    def __missing__(self, key: int):
        raise UnpicklingError(f"Unsupported operand {key}")


def _made_here(load_op):
    """An opcode handler whose result (the new top of the stack) counts as built by this load."""

    def op(self) -> None:
        load_op(self)
        self._fresh[id(self.stack[-1])] = self.stack[-1]

    return op


def python3_name(module: str, name: str) -> tuple:
    """Protocol 2 writes Python 2 names (``__builtin__.set``, ...): map them as pickle does."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


class WeightsOnlyUnpickler(_P):
    """Loads a checkpoint's pickle under torch's weights-only rules (see the module docstring).

    ``allowed`` maps ``"module.name"`` to the object a GLOBAL gets; ``persistent_load`` turns
    storage records into storages; ``refuse(full_name)`` may raise a more specific error for
    a known but unsupported global before the generic refusal.
    """

    dispatch = _Dispatch({op[0]: _P.dispatch[op[0]] for op in _DATA_OPCODES})
    dispatch.update({op[0]: _made_here(_P.dispatch[op[0]]) for op in _CONTAINER_OPCODES})

    def __init__(self, file, allowed: dict[str, Any], persistent_load: Callable,
                 refuse: Callable[[str], None], encoding: str = "utf-8") -> None:
        super().__init__(file, encoding=encoding)
        self._allowed = {**allowed, **_SAFE_GLOBALS}
        self._allowed_ids = {id(v) for v in self._allowed.values()}
        self._classes = {id(v) for v in self._allowed.values() if isinstance(v, type)}
        self._persistent = persistent_load
        self._refuse = refuse
        # id -> object for everything built by this load (the object kept alive, so that its
        # id cannot be reused by another one while loading)
        self._fresh: dict[int, Any] = {}

    def persistent_load(self, pid):
        return self._persistent(pid)

    def find_class(self, module: str, name: str):
        module, name = python3_name(module, name)
        full = f"{module}.{name}"
        if module in _BLOCKED_MODULES:
            raise UnpicklingError(f"Trying to load unsupported GLOBAL {full} whose module "
                                  f"{module} is blocked.")
        if full in self._allowed:
            return self._allowed[full]
        if module == "torch" or module.startswith("torch."):  # a torch checkpoint naming a
            twin = "ember" + full[len("torch"):]  # class allow-listed under ember's name
            if twin in _SAFE_GLOBALS:
                return _SAFE_GLOBALS[twin]
        self._refuse(full)
        if full.startswith("builtins."):
            full = full[len("builtins."):]
        raise UnpicklingError(_unsupported_global(full))

    def _new_instance(self, cls, args: tuple, kwargs: dict) -> Any:
        if not (id(cls) in self._classes and type(args) is tuple and type(kwargs) is dict):
            raise UnpicklingError("Can only create new object for nn.Parameter or classes "
                                  f"allowlisted via `add_safe_globals` but got {_kind(cls)}")
        # __new__ alone leaves a tensor or device empty; torch's C types construct in __new__.
        obj = (cls(*args, **kwargs) if issubclass(cls, Tensor | device)
               else cls.__new__(cls, *args, **kwargs))
        self._fresh[id(obj)] = obj
        return obj

    def load_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack.pop()
        self.append(self._new_instance(cls, args, {}))

    def load_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        self.append(self._new_instance(cls, args, kwargs))

    def load_reduce(self) -> None:
        args = self.stack.pop()
        func = self.stack[-1]
        if id(func) not in self._allowed_ids:
            raise UnpicklingError(f"Trying to call reduce for unrecognized function "
                                  f"{_kind(func)}")
        if type(args) is not tuple:
            raise UnpicklingError(f"REDUCE expects a tuple of arguments, got {_kind(args)}")
        result = func(*args)
        if id(func) in self._classes:  # an instance of an allowed class: built here
            self._fresh[id(result)] = result
        self.stack[-1] = result

    def load_build(self) -> None:
        state = self.stack.pop()
        inst = self.stack[-1]
        if (id(inst) not in self._fresh or id(type(inst)) not in self._classes
                or isinstance(inst, Tensor)):
            raise UnpicklingError("Can only build instances of OrderedDict or of types "
                                  "allowlisted via `add_safe_globals` that this checkpoint "
                                  f"created, but got {_kind(inst)}")
        setstate = getattr(type(inst), "__setstate__", None)
        if setstate is not None and setstate is not getattr(object, "__setstate__", None):
            inst.__setstate__(state)
            return
        slotstate = None
        if isinstance(state, tuple) and len(state) == 2:
            state, slotstate = state
        if state:
            inst.__dict__.update(state)
        if slotstate:
            for k, v in slotstate.items():
                setattr(inst, k, v)

    def _target(self, opcode: str, types: tuple, names: str):
        target = self.stack[-1]
        if type(target) not in types or id(target) not in self._fresh:
            raise UnpicklingError(f"Can only {opcode} for {names} built by this checkpoint, "
                                  f"but got {_kind(target)}")
        return target

    def load_setitem(self) -> None:
        value = self.stack.pop()
        key = self.stack.pop()
        self._target("SETITEM", _DICTS, _DICT_NAMES)[key] = value

    def load_setitems(self) -> None:
        items = self.pop_mark()
        if len(items) % 2:
            raise UnpicklingError("SETITEMS needs key/value pairs, got an odd number of items")
        target = self._target("SETITEMS", _DICTS, _DICT_NAMES)
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def load_append(self) -> None:
        item = self.stack.pop()
        self._target("append", (list,), "lists").append(item)

    def load_appends(self) -> None:
        items = self.pop_mark()
        self._target("extend", (list,), "lists").extend(items)

    def load_bytearray8(self) -> None:
        # pickle's own handler allocates the declared size before reading: 8 bytes of a hostile
        # file could ask for exabytes
        n = int.from_bytes(self.read(8), "little")
        data = self.read(n)
        if len(data) != n:
            raise UnpicklingError(f"BYTEARRAY8 declares {n} bytes, the stream holds {len(data)}")
        self.append(bytearray(data))

    def load_additems(self) -> None:
        items = self.pop_mark()
        self._target("add items", (set,), "sets").update(items)

    dispatch[pickle.NEWOBJ[0]] = load_newobj
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex
    dispatch[pickle.REDUCE[0]] = load_reduce
    dispatch[pickle.BUILD[0]] = load_build
    dispatch[pickle.SETITEM[0]] = load_setitem
    dispatch[pickle.SETITEMS[0]] = load_setitems
    dispatch[pickle.APPEND[0]] = load_append
    dispatch[pickle.APPENDS[0]] = load_appends
    dispatch[pickle.ADDITEMS[0]] = load_additems
    dispatch[pickle.BYTEARRAY8[0]] = load_bytearray8


_DICTS = (dict, OrderedDict, Counter)
_DICT_NAMES = "dict, collections.OrderedDict, collections.Counter"


def _kind(obj) -> str:
    """How an object from the stream is named in an error: its type, or for a class or
    function its name (never its repr, which a hostile file could make huge)."""
    if isinstance(obj, type) or callable(obj):
        name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
        return f"{type(obj)} {getattr(obj, '__module__', '')}.{name}"
    return str(type(obj))
