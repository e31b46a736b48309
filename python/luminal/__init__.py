"""luminal: run PyTorch models on luminal-cpp.

    import luminal
    fast = luminal.compile(model, example_inputs)       # AOT through torch.export
    out = fast(*inputs)
    luminal.load("model.pt2")                           # a saved torch.export archive
    torch.compile(model, backend=luminal.backend)       # as a torch.compile backend

CUDA tensors run on the CUDA runtime, CPU tensors on the CPU reference runtime.
"""

from ._luminal import cuda_available, cuda_device
from .compiled import CompiledModule, compile, load

__all__ = ["CompiledModule", "compile", "load", "cuda_available", "cuda_device"]
