"""pytest setup for the Python tests: bench/ and examples/dlrm/ on sys.path (no GPU needed)."""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
for sub in ("bench", os.path.join("examples", "dlrm")):
    p = os.path.join(ROOT, sub)
    if p not in sys.path:
        sys.path.insert(0, p)
