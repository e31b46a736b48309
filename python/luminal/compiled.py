"""CompiledModule: a translated torch.export program behind a torch-tensor calling convention."""

import os
import tempfile

import torch
import torch.utils._pytree as pytree

from . import _luminal

# torch dtype -> luminal dtype name (the C++ side's dtype_name).
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


class CompiledModule:
    """A compiled program: call it with the same (nested) inputs the model takes.

    Inputs are checked strictly: a tensor of the wrong dtype, rank, static size or device is an
    error naming the input; nothing is cast. Outputs are new tensors on the input device.
    """

    def __init__(self, program, in_spec=None, out_spec=None, path=None):
        self._program = program
        self._in_spec = in_spec
        self._out_spec = out_spec
        self._inputs = program.inputs  # [(name, dtype, dims)]
        self._outputs = program.outputs
        self.path = path
        self.device = program.device

    @property
    def input_names(self):
        """The flat user-input names, in torch.export's order."""
        return [name for name, _, _ in self._inputs]

    def stats(self):
        """The loaded plan: {'kernels': n, 'plan': [steps]}."""
        return self._program.stats()

    def _flat_tensors(self, args, kwargs):
        flat, spec = pytree.tree_flatten((args, kwargs))
        if self._in_spec is not None and spec != self._in_spec:
            raise TypeError(f"luminal: the inputs' structure {spec} differs from the exported one {self._in_spec}")
        tensors = [x for x in flat if isinstance(x, torch.Tensor)]
        if len(tensors) != len(self._inputs):
            raise TypeError(f"luminal: {len(tensors)} tensor inputs given, the program takes {len(self._inputs)} "
                            f"({', '.join(self.input_names)})")
        return tensors

    def _check(self, i, t):
        name, dtype, dims = self._inputs[i]
        if _DTYPES.get(t.dtype) != dtype:
            raise TypeError(f"luminal: input '{name}' is {t.dtype}, the program takes {_TORCH_DTYPES.get(dtype, dtype)}")
        if t.dim() != len(dims):
            raise ValueError(f"luminal: input '{name}' has shape {list(t.shape)}, the program takes rank {len(dims)} "
                             f"{dims}")
        for d, (got, want) in enumerate(zip(t.shape, dims)):
            if isinstance(want, int) and got != want:
                raise ValueError(f"luminal: input '{name}' has shape {list(t.shape)}, the program takes {dims} "
                                 f"(dim {d} must be {want})")
        want_cuda = self.device == "cuda"
        if t.is_cuda != want_cuda:
            raise ValueError(f"luminal: input '{name}' is on {t.device}, the program runs on {self.device}")

    def __call__(self, *args, **kwargs):
        tensors = self._flat_tensors(args, kwargs)
        keep = []
        for i, t in enumerate(tensors):
            self._check(i, t)
            t = t.contiguous()
            keep.append(t)
            nbytes = t.numel() * t.element_size()
            if self.device == "cuda":
                self._program.set_input_device(i, t.data_ptr(), nbytes, list(t.shape))
            else:
                self._program.set_input_host(i, t.data_ptr(), nbytes, list(t.shape))
        self._program.run()
        outs = []
        for i, (_, dtype, _) in enumerate(self._outputs):
            out = torch.empty(self._program.output_shape(i), dtype=_TORCH_DTYPES[dtype])
            self._program.output_to_host(i, out.data_ptr(), out.numel() * out.element_size())
            outs.append(out.to(tensors[0].device) if tensors and tensors[0].is_cuda else out)
        if self._out_spec is not None:
            return pytree.tree_unflatten(outs, self._out_spec)
        return outs[0] if len(outs) == 1 else tuple(outs)


def _device_of(example_inputs):
    flat, _ = pytree.tree_flatten(example_inputs)
    return "cuda" if any(isinstance(x, torch.Tensor) and x.is_cuda for x in flat) else "cpu"


def compile(model, example_inputs, dynamic_shapes=None, precision="fp32", device=None, cuda_graph=True,
            decompose=False):
    """AOT-compiles `model` for `example_inputs` through torch.export; returns a CompiledModule.

    dynamic_shapes is torch.export's argument (torch.export.Dim per dynamic dim); those dims
    become graph symbols and any size in their range runs without recompiling.
    decompose=True translates the core-ATen form (ExportedProgram.run_decompositions()) instead
    of the default export's higher-level ops.
    """
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    if isinstance(model, torch.nn.Module):
        model = model.eval()
    ep = torch.export.export(model, args, dynamic_shapes=dynamic_shapes)
    if decompose:
        ep = ep.run_decompositions()
    with tempfile.TemporaryDirectory(prefix="luminal_") as tmp:
        path = os.path.join(tmp, "model.pt2")
        torch.export.save(ep, path)
        program = _luminal.Program.load(path, device or _device_of(args), precision, cuda_graph)
    return CompiledModule(program, ep.call_spec.in_spec, ep.call_spec.out_spec)


def load(path, device="cpu", precision="fp32", cuda_graph=True):
    """Loads a saved torch.export archive (.pt2): translated, compiled and ready to call."""
    program = _luminal.Program.load(os.fspath(path), device, precision, cuda_graph)
    return CompiledModule(program, path=os.fspath(path))
