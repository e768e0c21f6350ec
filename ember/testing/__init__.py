"""ember.testing (torch.testing): ``assert_close`` and ``make_tensor`` for writing tests."""

from ember.testing._comparison import assert_close, make_tensor

__all__ = ["assert_close", "make_tensor"]
