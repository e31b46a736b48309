"""CompiledModule: a translated torch.export program behind a torch-tensor calling convention.

The call path is built for microseconds (docs/python.md measures it):
- inputs are flattened by code generated from the in_spec (flatten.py), not by pytree;
- CUDA inputs are bound zero-copy: the data pointer and shape are cached per input, and an
  unchanged tensor costs four attribute reads and no call into C++;
- outputs are written by the CUDA graph straight into preallocated CUDA tensors (one set per
  output shape), and the run is enqueued on PyTorch's current stream: no sync, no copy;
- one call into C++ runs the program.

Output lifetime (outputs="reuse", the default of luminal.compile): like CUDA-graph replay, the
returned tensors belong to the module and are overwritten by the next call that produces the
same output shapes; .clone() what you keep. outputs="fresh" returns new tensors every call (one
device copy per output), the default of luminal.backend, where callers expect eager semantics.
"""

import collections

import torch

from . import _luminal
from .flatten import StructureError, describe_mismatch, make_flattener, make_unflattener

# torch dtype <-> luminal dtype name (the C++ side's dtype_name).
_DTYPES = {
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float64: "f64",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.bool: "bool",
}
_TORCH_DTYPES = {v: k for k, v in _DTYPES.items()}
_OUTPUT_MODES = ("reuse", "fresh")
_MAX_OUTPUT_SETS = 8  # output shapes kept allocated (dynamic dims); the oldest is dropped


def _torch_dtype(name, what):
    if name not in _TORCH_DTYPES:
        raise TypeError(f"luminal: {what} has dtype {name}, which has no torch dtype")
    return _TORCH_DTYPES[name]


class CompiledModule:
    """A compiled program: call it with the same (nested) inputs the model takes.

    Inputs are checked strictly: a tensor of the wrong dtype, shape or device is an error naming
    the input and both dtypes/shapes; nothing is cast. CUDA programs take CUDA tensors (used in
    place), CPU programs CPU tensors.
    """

    def __init__(self, program, in_spec=None, leaf_kinds=None, out_spec=None, path=None, outputs="reuse"):
        if outputs not in _OUTPUT_MODES:
            raise ValueError(f"luminal: outputs={outputs!r}; expected one of {', '.join(_OUTPUT_MODES)}")
        self._program = program
        self._inputs = program.inputs  # [(name, dtype, dims)]
        self._outputs = program.outputs
        self.path = path
        self.device = program.device
        self.outputs = outputs
        n = len(self._inputs)
        self._dtypes = [_torch_dtype(d, f"input '{name}'") for name, d, _ in self._inputs]
        self._out_dtypes = [_torch_dtype(d, f"output '{name}'") for name, d, _ in self._outputs]
        self._ptrs = [0] * n  # CUDA: the data pointer bound per input
        self._shapes = [None] * n  # the shape bound per input (torch.Size)
        self._keep = [None] * n  # contiguous copies of non-contiguous inputs, alive until the next call
        self._in_spec, self._leaf_kinds = in_spec, leaf_kinds
        if in_spec is not None:
            self._flatten = make_flattener(in_spec, leaf_kinds)
        else:
            self._flatten = lambda args, kwargs: args if not kwargs else self._no_kwargs()
        self._unflatten = make_unflattener(out_spec)
        self._sets = collections.OrderedDict()  # output shapes -> (tensors, unflattened result)
        self._outs, self._result = (), None  # the output set bound now
        self._fresh = outputs == "fresh"
        self._cuda = self.device == "cuda"
        self._device = torch.device("cuda", 0) if self._cuda else torch.device("cpu")
        self._run = self._run_cuda if self._cuda else self._run_cpu
        self._stream = torch._C._cuda_getCurrentRawStream if self._cuda else None

    @property
    def input_names(self):
        """The flat user-input names, in torch.export's order."""
        return [name for name, _, _ in self._inputs]

    def stats(self):
        """The loaded plan: {'device', 'kernels': n, 'steps': n, 'plan': [steps]}."""
        s = self._program.stats()
        s["device"] = self.device
        s["steps"] = len(s["plan"])
        return s

    def __call__(self, *args, **kwargs):
        try:
            tensors = self._flatten(args, kwargs)
        except StructureError:
            raise TypeError(f"luminal: {self._structure_error(args, kwargs)}") from None
        if len(tensors) != len(self._dtypes):
            raise TypeError(f"luminal: {len(tensors)} tensor inputs given, the program takes {len(self._dtypes)} "
                            f"({', '.join(self.input_names)})")
        return self._run(tensors)

    def run_flat(self, tensors):
        """Runs with the flat tensor inputs (torch.export's order), no structure check."""
        return self._run(tensors)

    # ---- the CUDA path: cached zero-copy bindings, one C++ call ----

    def _run_cuda(self, tensors):
        ptrs, shapes, dtypes = self._ptrs, self._shapes, self._dtypes
        i = 0
        reshaped = False
        try:
            for t in tensors:
                if t.data_ptr() != ptrs[i] or t.shape != shapes[i] or t.dtype is not dtypes[i] or not t.is_contiguous():
                    reshaped |= self._bind_cuda(i, t)
                i += 1
        except AttributeError:
            self._check(i, tensors[i])  # not a tensor: raises naming the input
            raise
        if reshaped or not self._outs:
            self._bind_outputs()
        self._program.run(self._stream(0))
        if self._fresh:
            return self._unflatten([o.clone() for o in self._outs])
        return self._result

    def _bind_cuda(self, i, t):
        """Checks and binds input i (a changed pointer, shape, dtype or layout); True if the
        shape changed."""
        self._check(i, t)
        self._keep[i] = None
        if not t.is_contiguous():
            t = self._keep[i] = t.contiguous()
        self._program.set_input_device(i, t.data_ptr(), t.numel() * t.element_size(), list(t.shape))
        reshaped = t.shape != self._shapes[i]
        self._ptrs[i], self._shapes[i] = t.data_ptr(), t.shape
        return reshaped

    def _bind_outputs(self):
        """After a shape change: the output set of the new shapes (allocated on first use)."""
        shapes = tuple(tuple(s) for s in self._program.bind())
        entry = self._sets.get(shapes)
        if entry is None:
            outs = tuple(torch.empty(s, dtype=d, device=self._device) for s, d in zip(shapes, self._out_dtypes))
            entry = (outs, self._unflatten(list(outs)))
            self._sets[shapes] = entry
            if len(self._sets) > _MAX_OUTPUT_SETS:
                self._sets.popitem(last=False)
        else:
            self._sets.move_to_end(shapes)
        if self._cuda and entry[0] is not self._outs:
            for j, o in enumerate(entry[0]):
                # Zero-size outputs stay runtime-owned (nothing is written).
                self._program.set_output_device(j, o.data_ptr() if o.numel() else 0, o.numel() * o.element_size())
        self._outs, self._result = entry

    # ---- the CPU path: the reference runtime copies host inputs and outputs ----

    def _run_cpu(self, tensors):
        program = self._program
        for i, t in enumerate(tensors):
            if not isinstance(t, torch.Tensor) or t.dtype is not self._dtypes[i] or t.shape != self._shapes[i] or not t.is_cpu:
                self._check(i, t)
                self._shapes[i] = t.shape
            if not t.is_contiguous():
                t = t.contiguous()
            program.set_input_host(i, t.data_ptr(), t.numel() * t.element_size(), t.shape)
        self._bind_outputs()
        program.run()
        outs = self._outs
        if self._fresh:
            outs = tuple(torch.empty_like(o) for o in outs)
        for j, o in enumerate(outs):
            program.output_to_host(j, o.data_ptr(), o.numel() * o.element_size())
        return self._unflatten(list(outs)) if self._fresh else self._result

    # ---- errors ----

    def _check(self, i, t):
        """Raises naming input i unless t matches its dtype, rank, static dims and device."""
        name, dtype, dims = self._inputs[i]
        want = self._dtypes[i]
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"luminal: input '{name}' is {type(t).__name__}, the program takes a {want} tensor")
        if t.dtype is not want:
            raise TypeError(f"luminal: input '{name}' is {t.dtype}, the program takes {want} (inputs are never "
                            f"cast; convert it with .to({want}))")
        if t.dim() != len(dims):
            raise ValueError(f"luminal: input '{name}' has shape {list(t.shape)}, the program takes {dims} "
                             f"(rank {len(dims)})")
        for d, (got, w) in enumerate(zip(t.shape, dims)):
            if isinstance(w, int) and got != w:
                raise ValueError(f"luminal: input '{name}' has shape {list(t.shape)}, the program takes {dims} "
                                 f"(dim {d} must be {w})")
        if t.device != self._device:
            raise ValueError(f"luminal: input '{name}' is on {t.device}, the program runs on {self._device}")

    def _structure_error(self, args, kwargs):
        if self._in_spec is None:
            return "this program takes its tensors as positional arguments"
        return describe_mismatch(self._in_spec, self._leaf_kinds, args, kwargs)

    def _no_kwargs(self):
        raise StructureError("kwargs")
