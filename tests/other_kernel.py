"""Print an OpenBLAS kernel other than the one this CPU runs natively (for ``make test``'s
second pass): Haswell, or SandyBridge where the native kernel is Haswell."""

import numpy as np  # noqa: F401 - loads OpenBLAS, so that threadpoolctl sees it
from threadpoolctl import threadpool_info

native = {i.get("architecture") for i in threadpool_info() if i.get("internal_api") == "openblas"}
print("SandyBridge" if "Haswell" in native else "Haswell")
