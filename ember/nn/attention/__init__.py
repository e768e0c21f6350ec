"""ember.nn.attention (torch.nn.attention): choosing scaled-dot-product-attention backends."""

from ember._sdp import SDPBackend, sdpa_kernel

_SDPBackend = SDPBackend  # the class's qualified name, as torch's (where pickles look it up)

WARN_FOR_UNFUSED_KERNELS = False

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]
