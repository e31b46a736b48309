"""CompiledModule: a translated torch.export program behind a torch-tensor calling convention.

The call path is built for microseconds (docs/python.md measures it):
- inputs are flattened by code generated from the in_spec (flatten.py), not by pytree;
- inputs are bound zero-copy (CUDA and the CPU backend; the reference oracle copies): the data
  pointer and shape are cached per input, and an unchanged tensor costs four attribute reads and
  no call into C++;
- outputs are written by the plan straight into preallocated tensors (one set per output shape);
  a CUDA run is enqueued on PyTorch's current stream: no sync, no copy;
- one call into C++ runs the program.

Output lifetime: a returned tensor is the caller's; nothing luminal does later changes it.
outputs="fresh" (the default everywhere) returns new tensors every call (one copy per output).
outputs="reuse" saves that copy: the plan writes into the module's own output tensors and each call
returns new views of them; a call while a view from an earlier call (or anything derived from its
memory) is still alive raises RuntimeError instead of overwriting it, so drop results (or .clone()
them) before the next call.
"""

import collections
import weakref

import torch

from .flatten import StructureError, describe_mismatch, make_flattener, make_unflattener
from .hotpath import make_in_place_calls, make_positional_call

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
_OUTPUT_MODES = ("fresh", "reuse")
_MAX_OUTPUT_SETS = 8  # output shapes kept allocated (dynamic dims); the oldest is dropped


def dtype_name(dtype, what):
    """The luminal dtype name of a torch dtype, or a TypeError naming `what`."""
    if dtype not in _DTYPES:
        raise TypeError(f"luminal: {what} has dtype {dtype}, which luminal does not support")
    return _DTYPES[dtype]


class OutputStillAlive(RuntimeError):
    """A call of an outputs="reuse" module while an earlier result still uses its memory."""


def _storage_uses(t):
    return torch._C._storage_Use_Count(t.untyped_storage()._cdata)


def _torch_dtype(name, what):
    if name not in _TORCH_DTYPES:
        raise TypeError(f"luminal: {what} has dtype {name}, which has no torch dtype")
    return _TORCH_DTYPES[name]


def _no_stream(device):
    return 0  # host programs run on the calling thread: no stream


def _flat_args(args, kwargs):
    # Programs without an in_spec (luminal.load of an archive that records none) take flat tensors.
    if kwargs:
        raise StructureError("kwargs")
    return args


class CompiledModule:
    """A compiled program: call it with the same (nested) inputs the model takes.

    Inputs are checked strictly: a tensor of the wrong dtype, shape or device is an error naming
    the input and both dtypes/shapes; nothing is cast. CUDA programs take CUDA tensors, CPU
    programs CPU tensors (both read in place; the reference oracle copies them).
    """

    def __init__(self, program, in_spec=None, leaf_kinds=None, out_spec=None, path=None, outputs="fresh", *,
                 keepalive=None, _tensor_device=None):
        if outputs not in _OUTPUT_MODES:
            raise ValueError(f"luminal: outputs={outputs!r}; expected one of {', '.join(_OUTPUT_MODES)}")
        self._inputs = program.inputs  # [(name, dtype, dims)]
        self._outputs = program.outputs
        self.path = path
        self._keepalive = keepalive  # tensors (and a bf16 model copy) whose memory the program reads
        self.device = program.device
        self.outputs = outputs
        n = len(self._inputs)
        self._dtypes = [_torch_dtype(d, f"input '{name}'") for name, d, _ in self._inputs]
        self._out_dtypes = [_torch_dtype(d, f"output '{name}'") for name, d, _ in self._outputs]
        self._ptrs = [0] * n  # CUDA: the data pointer bound per input
        self._shapes = [None] * n  # the shape bound per input (torch.Size)
        self._keep = [None] * n  # contiguous copies of non-contiguous inputs, alive until the next call
        self._in_spec, self._leaf_kinds, self._out_spec = in_spec, leaf_kinds, out_spec
        if in_spec is not None:
            self._flatten = make_flattener(in_spec, leaf_kinds)
        else:
            self._flatten = _flat_args
        self._unflatten = make_unflattener(out_spec)
        self._sets = collections.OrderedDict()  # output shapes -> (tensors, their storage use counts)
        self._out, self._base = [()], [()]  # the output set bound now, and its unreferenced use counts
        self._fresh = outputs == "fresh"
        self._cuda = self.device == "cuda"
        # The CPU backend reads and writes host tensors in place as CUDA does device tensors; the
        # reference oracle keeps its own copies (set_input_host / output_to_host).
        self._in_place = self._cuda or getattr(program, "backend", self.device) == "cpu"
        self._device = torch.device("cuda", 0) if self._cuda else torch.device("cpu")
        if _tensor_device is not None:  # tests drive the CUDA call path with CPU tensors and a stand-in program
            self._device = torch.device(_tensor_device)
        self._scope = {"PROG": program}
        if self._in_place:
            self._call, self._call_flat, self._scope = make_in_place_calls(
                in_spec, leaf_kinds, self._dtypes, self._call_state(program), self._fresh)
        else:
            self._call = lambda args, kwargs: self._run_reference(self._flatten(args, kwargs))
            self._call_flat = lambda tensors: self._run_reference(tensors)

    @property
    def _program(self):
        """The C++ program (luminal._luminal.Program)."""
        return self._scope["PROG"]

    @_program.setter
    def _program(self, program):
        self._scope["PROG"] = program  # the generated call reads it from there

    def _call_state(self, program):
        # The generated code reaches the module only through a weak reference: no cycle keeps
        # the program (and its device memory) alive after the module is dropped.
        ref = weakref.ref(self)
        return {"P": self._ptrs, "S": self._shapes, "PROG": program, "OUT": self._out, "BASE": self._base,
                "USES": _storage_uses, "still_alive": lambda: ref()._still_alive(),
                "rebind": lambda i, t: ref()._bind_in_place(i, t), "bind_outputs": lambda: ref()._bind_outputs(),
                "stream": torch._C._cuda_getCurrentRawStream if self._cuda else _no_stream,
                "unflatten": self._unflatten, "FLATTEN": self._flatten}

    @property
    def input_names(self):
        """The flat user-input names, in torch.export's order."""
        return [name for name, _, _ in self._inputs]

    def stats(self):
        """The loaded plan: {'device', 'kernels': n, 'steps': n, 'plan': [steps], 'rules': [lines]}
        ('rules': what each rewrite rule recognized, e.g. a DLRM, and which alternative runs)."""
        s = self._program.stats()
        s["device"] = self.device
        s["steps"] = len(s["plan"])
        return s

    def check_errors(self):
        """Waits for this module's queued CUDA work and raises RuntimeError if a kernel reported
        bad input (an out-of-range index: the kernels clamp it, so those results are invalid)
        since the last check. Calls are asynchronous like torch ops, so such errors surface here,
        not at the call; on the CPU the call itself raises."""
        self._program.check_errors()

    def __call__(self, *args, **kwargs):
        try:
            return self._call(args, kwargs)
        except StructureError:
            raise TypeError(f"luminal: {self._structure_error(args, kwargs)}") from None
        except AttributeError:
            self._diagnose(self._flatten(args, kwargs))  # a non-tensor where a tensor belongs
            raise

    def positional_call(self, positions):
        """A function f(*args) running the program on args[positions[i]] as input i, for callers
        whose own checks already hold dtypes, static sizes, layouts and devices (dynamo's guards):
        per call it compares only pointers and dynamic shapes (a mismatch still goes through the
        full checks of a rebind). Reference programs get the checked flat call."""
        positions = list(positions)
        if not self._in_place:
            return lambda *args: self._call_flat([args[p] for p in positions])
        dynamic = [any(not isinstance(d, int) for d in dims) for _, _, dims in self._inputs]
        return make_positional_call(positions, dynamic, self._scope, self._fresh)

    def run_flat(self, tensors):
        """Runs with the flat tensor inputs (torch.export's order), no structure check."""
        try:
            return self._call_flat(tensors)
        except StructureError:
            raise TypeError(f"luminal: {len(tensors)} tensor inputs given, the program takes "
                            f"{len(self._dtypes)} ({', '.join(self.input_names)})") from None
        except AttributeError:
            self._diagnose(tensors)
            raise

    # ---- the in-place slow path: a changed input, a new output shape ----

    def _bind_in_place(self, i, t):
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
            entry = (outs, tuple(_storage_uses(o) for o in outs))
            self._sets[shapes] = entry
            if len(self._sets) > _MAX_OUTPUT_SETS:
                self._sets.popitem(last=False)
        else:
            self._sets.move_to_end(shapes)
        if self._in_place and entry[0] is not self._out[0]:
            for j, o in enumerate(entry[0]):
                # Zero-size outputs stay runtime-owned (nothing is written).
                self._program.set_output_device(j, o.data_ptr() if o.numel() else 0, o.numel() * o.element_size())
        self._out[0], self._base[0] = entry

    def _still_alive(self):
        """Raises OutputStillAlive naming the first output whose memory an earlier result still
        uses (outputs="reuse")."""
        for (name, _, _), o, base in zip(self._outputs, self._out[0], self._base[0]):
            if _storage_uses(o) != base:
                raise OutputStillAlive(
                    f"luminal: output '{name}' of an earlier call is still alive (a returned tensor, a view of "
                    f"it, or another tensor on its memory); with outputs='reuse' the next call would overwrite "
                    f"it. Drop it (del, or reassign before calling), keep a copy (.clone()), or compile with "
                    f"outputs='fresh'")

    # ---- the reference path: the oracle copies host inputs and outputs ----

    def _run_reference(self, tensors):
        if len(tensors) != len(self._dtypes):
            raise StructureError("count")
        program = self._program
        for i, t in enumerate(tensors):
            if (not isinstance(t, torch.Tensor) or t.dtype is not self._dtypes[i] or t.shape != self._shapes[i]
                    or not t.is_cpu):
                self._check(i, t)
                self._shapes[i] = t.shape
            if not t.is_contiguous():
                t = t.contiguous()
            program.set_input_host(i, t.data_ptr(), t.numel() * t.element_size(), t.shape)
        self._bind_outputs()
        if not self._fresh:
            self._still_alive()
        program.run()
        outs = self._out[0]
        if self._fresh:
            outs = tuple(torch.empty_like(o) for o in outs)
        for j, o in enumerate(outs):
            program.output_to_host(j, o.data_ptr(), o.numel() * o.element_size())
        return self._unflatten(list(outs) if self._fresh else [o.detach() for o in outs])

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

    def _diagnose(self, tensors):
        """Raises the error naming the first input that is not a tensor of the program's kind."""
        for i, t in enumerate(tensors):
            self._check(i, t)

    def _structure_error(self, args, kwargs):
        if self._in_spec is None:
            n = len(self._dtypes)
            return (f"{len(args)} positional inputs{' and keyword inputs' if kwargs else ''} given, the program "
                    f"takes {n} tensors ({', '.join(self.input_names)})")
        return describe_mismatch(self._in_spec, self._leaf_kinds, args, kwargs)
