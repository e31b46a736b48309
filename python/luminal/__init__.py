"""luminal: run PyTorch models on luminal-cpp.

    import luminal
    fast = luminal.compile(model, example_inputs)       # AOT through torch.export
    out = fast(*inputs)
    fast = luminal.load("model.pt2")                    # a saved torch.export archive
    fast = torch.compile(model, backend=luminal.backend)

CUDA tensors run on the CUDA backend (zero-copy, on PyTorch's current stream), CPU tensors on the
CPU reference. Every call returns new tensors unless outputs="reuse" is asked for. See
docs/python.md.
"""

from ._luminal import cuda_available, cuda_device
from .aot import compile, load
from .dynamo import backend
from .compiled import CompiledModule, OutputStillAlive

__all__ = ["CompiledModule", "OutputStillAlive", "backend", "compile", "load", "cuda_available", "cuda_device"]
