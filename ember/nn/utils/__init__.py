"""nn.utils: gradient clipping, parameter/vector conversion, ``rnn`` sequence packing."""

from ember.nn.utils import rnn
from ember.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from ember.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "rnn",
           "vector_to_parameters"]

# Added by the API coverage work.
from ember.nn.utils.fusion import (  # noqa: E402
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from ember.nn.utils.init import skip_init  # noqa: E402
from ember.nn.utils.memory_format import (  # noqa: E402
    convert_conv2d_weight_memory_format,
    convert_conv3d_weight_memory_format,
)

__all__ += ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format",
            "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
            "fuse_linear_bn_weights", "skip_init"]
