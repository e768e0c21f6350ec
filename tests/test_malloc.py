"""ember keeps freed array memory in the process (glibc): big arrays allocated again at every
step are not faulted in again."""

import os
import subprocess
import sys

import pytest

from ember import _malloc

CHILD = """
import resource, sys, numpy as np
if sys.argv[1] == "ember":
    import ember
def step():
    a = np.empty(48 << 18, np.float32)  # 48 MiB: above glibc's largest adaptive threshold
    a[...] = 1.0
for _ in range(2):
    step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    step()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) // 10)
"""


def _faults(mode: str, env=None) -> int:
    out = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True,
                         check=True, env=env)
    return int(out.stdout)


@pytest.mark.skipif(not _malloc.TUNED, reason="glibc's malloc only")
def test_big_arrays_reuse_freed_memory():
    # Without the tuning each step maps the array afresh and faults it in (NumPy asks for
    # huge pages, so a few hundred faults rather than 12,288); with it, the heap reuses it.
    tuned, plain = _faults("ember"), _faults("numpy")
    if plain < 100:  # e.g. transparent huge pages "always": a fresh mapping costs few faults
        pytest.skip(f"this kernel maps the array in {plain} faults: nothing to compare")
    assert tuned * 10 <= plain, (tuned, plain)


def test_opt_out_leaves_malloc_alone():
    env = dict(os.environ, EMBER_MALLOC_TUNING="0")
    code = "import ember._malloc as m; print(m.TUNED)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.strip() == "False"
