"""state_dict / load_state_dict for nn.Module, torch's keys, hook points and error texts."""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ember._tensor import Tensor
from ember.autograd.grad_mode import no_grad
from ember.nn.parameter import Parameter
from ember.utils.hooks import RemovableHandle

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class StateDictMixin:
    """The state-dict half of ``Module`` (mixed into it)."""

    def get_extra_state(self):
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be "
                           "called. Please file an issue at https://github.com/pytorch/pytorch/"
                           "issues/new?template=bug-report.yml to report this bug.")

    def set_extra_state(self, state) -> None:
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be "
                           "called. Please file an issue at https://github.com/pytorch/pytorch/"
                           "issues/new?template=bug-report.yml to report this bug.")

    def register_state_dict_pre_hook(self, hook) -> RemovableHandle:
        return RemovableHandle.add(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook) -> RemovableHandle:
        return RemovableHandle.add(self._state_dict_hooks, hook)

    def _register_state_dict_hook(self, hook) -> RemovableHandle:
        return RemovableHandle.add(self._state_dict_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook) -> RemovableHandle:
        module = self
        return RemovableHandle.add(self._load_state_dict_pre_hooks,
                                   lambda *args: hook(module, *args))

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        if with_module:
            return self.register_load_state_dict_pre_hook(hook)
        return RemovableHandle.add(self._load_state_dict_pre_hooks, hook)

    def register_load_state_dict_post_hook(self, hook) -> RemovableHandle:
        return RemovableHandle.add(self._load_state_dict_post_hooks, hook)

    # --- state dict ----------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not StateDictMixin.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An OrderedDict of parameters and persistent buffers, keyed by dotted names."""
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.state_dict for details.", FutureWarning,
                          stacklevel=2)
            destination = args[0] if destination is None else destination
            prefix = args[1] if len(args) > 1 and prefix == "" else prefix
            keep_vars = args[2] if len(args) > 2 and keep_vars is False else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                destination = result
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(),
                                                        persistent.items()) if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            _load_one(self, name, key, param, state_dict[key], assign, error_msgs)
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not StateDictMixin.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Mapping, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict``; returns missing/unexpected keys."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list[str] = []
        unexpected_keys: list[str] = []
        error_msgs: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True,
                                         missing_keys, unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state = {k: v for k, v in local_state_dict.items()
                                   if k.startswith(child_prefix)}
                    load(child, child_state, child_prefix)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible) is not None:
                    raise AssertionError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                        "expected to return new values, if incompatible_keys need to be "
                        "modified, it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)


def _load_one(module, name, key, param, input_param, assign, error_msgs) -> None:
    """Copy (or assign) one checkpoint entry into ``param``, collecting torch's errors."""
    if not isinstance(input_param, Tensor):
        error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                          f"Tensor-like object from checkpoint but received {type(input_param)}")
        return
    if param.ndim == 0 and input_param.ndim == 1 and input_param.shape[0] == 1:
        input_param = input_param[0]
    if input_param.shape != param.shape:
        error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                          f"{input_param.shape} from checkpoint, the shape in current model is "
                          f"{param.shape}.")
        return
    try:
        with no_grad():
            if assign:
                if isinstance(param, Parameter) and not isinstance(input_param, Parameter):
                    input_param = Parameter(input_param, requires_grad=param.requires_grad)
                elif isinstance(param, Parameter):
                    input_param.requires_grad_(param.requires_grad)
                setattr(module, name, input_param)
            else:
                param.copy_(input_param)
    except Exception as ex:  # noqa: BLE001 - reported with the other errors, as torch does
        error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the '
                          f"model are {param.size()} and whose dimensions in the checkpoint are "
                          f"{input_param.size()}, an exception occurred : {ex.args}.")
