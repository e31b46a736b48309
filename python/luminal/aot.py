"""luminal.compile (AOT through torch.export) and luminal.load (a saved .pt2 archive)."""

import contextlib
import json
import os
import shutil
import tempfile
import zipfile

import torch
import torch.utils._pytree as pytree

from . import _luminal
from .compiled import CompiledModule

PRECISIONS = ("fp32", "tf32")


def check_options(precision, device):
    """Refuses a precision or device the Python API does not offer, before anything is exported."""
    if precision not in PRECISIONS:
        raise ValueError(f"luminal: precision {precision!r} is not supported; use 'fp32' (exact, the default) or "
                         f"'tf32' (CUDA matmuls on TF32 tensor cores)")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"luminal: device {device!r}; expected 'cpu' or 'cuda'")
    if precision == "tf32" and device != "cuda":
        raise ValueError("luminal: precision 'tf32' needs the CUDA runtime (the CPU reference runtime is fp32 only)")


def _device_of(tree):
    flat, _ = pytree.tree_flatten(tree)
    return "cuda" if any(isinstance(x, torch.Tensor) and x.is_cuda for x in flat) else "cpu"


def _leaf_kinds(flat):
    return [None if isinstance(x, torch.Tensor) else ("const", x) for x in flat]


def load_program(path, device, precision, cuda_graph=True, alternative="auto"):
    """The C++ program of a .pt2 file (translated, rewritten by the rules, compiled, weights
    uploaded)."""
    return _luminal.Program.load(os.fspath(path), device, precision, cuda_graph, alternative)


def compile(model, example_inputs, dynamic_shapes=None, precision="fp32", device=None, outputs="reuse",
            example_kwargs=None, cuda_graph=True, decompose=False, alternative="auto"):
    """AOT-compiles `model` for `example_inputs` through torch.export; returns a CompiledModule.

    example_inputs: a tuple of positional arguments (nested lists/tuples/dicts of tensors as the
    model takes them), or a single tensor. dynamic_shapes is torch.export's argument
    (torch.export.Dim per dynamic dim): those dims become graph symbols, and every size in their
    range runs without recompiling. device defaults to where the example tensors are.
    outputs: "reuse" (returned tensors are overwritten by the next call of the same shapes) or
    "fresh" (new tensors per call); see luminal.compiled.
    decompose=True translates the core-ATen form (ExportedProgram.run_decompositions()) instead
    of the default export's higher-level ops.
    alternative: what the compiler's rewrite rules apply to the regions they recognize ("auto":
    on CUDA the best available, e.g. the DLRM megakernel; "none": the graph as exported; or a
    name such as "mega" or "fused_sparse"); stats()["rules"] reports it.
    """
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    kwargs = dict(example_kwargs or {})
    device = device or _device_of((args, kwargs))
    check_options(precision, device)
    if isinstance(model, torch.nn.Module):
        model = model.eval()
    with torch.no_grad():
        ep = torch.export.export(model, args, kwargs, dynamic_shapes=dynamic_shapes, strict=False)
        if decompose:
            ep = ep.run_decompositions()
    flat, _ = pytree.tree_flatten((args, kwargs))
    in_spec, out_spec = ep.call_spec.in_spec, ep.call_spec.out_spec
    with tempfile.TemporaryDirectory(prefix="luminal_", dir=_scratch_dir(ep)) as tmp:
        path = os.path.join(tmp, "model.pt2")
        with _flat_output_spec(ep):
            torch.export.save(ep, path)
        program = load_program(path, device, precision, cuda_graph, alternative)
    return CompiledModule(program, in_spec, _leaf_kinds(flat), out_spec, outputs=outputs)


def _scratch_dir(ep):
    """Where the archive handed to C++ is written: /dev/shm (memory) when it has room for the
    weights, else the default temporary folder. The Kaggle DLRM's 2 GB archive took 7.4 s to write
    to disk on the development machine and 4.5 s to /dev/shm."""
    try:
        need = sum(t.numel() * t.element_size() for t in ep.state_dict.values() if isinstance(t, torch.Tensor))
        need += sum(t.numel() * t.element_size() for t in ep.constants.values() if isinstance(t, torch.Tensor))
        if os.path.isdir("/dev/shm") and shutil.disk_usage("/dev/shm").free > 2 * need + (64 << 20):
            return "/dev/shm"
    except (OSError, AttributeError):
        pass
    return None


@contextlib.contextmanager
def _flat_output_spec(ep):
    """Saves ep with its outputs as a flat tuple when their structure has no serialized name
    (torch 2.11 cannot save torch.return_types such as max's): the archive only carries the
    program to C++, and the module keeps the real structure."""
    sig = next((e.signature for e in ep._module_call_graph if e.fqn == "" and e.signature), None)
    if sig is None or _serializable(sig.out_spec):
        yield
        return
    real = sig.out_spec
    sig.out_spec = pytree.tree_structure(tuple(range(real.num_leaves)))
    try:
        yield
    finally:
        sig.out_spec = real


def _serializable(spec):
    try:
        pytree.treespec_dumps(spec)
        return True
    except Exception:  # noqa: BLE001 - NotImplementedError on torch 2.11, others elsewhere
        return False


def load(path, device="cpu", precision="fp32", outputs="reuse", cuda_graph=True, alternative="auto"):
    """Loads a saved torch.export archive (.pt2): translated, compiled and ready to call with the
    same (nested) inputs as the exported model (alternative: as for compile())."""
    check_options(precision, device)
    program = load_program(path, device, precision, cuda_graph, alternative)
    in_spec, kinds, out_spec = archive_specs(path)
    return CompiledModule(program, in_spec, kinds, out_spec, path=os.fspath(path), outputs=outputs)


def archive_specs(path):
    """(in_spec, leaf kinds, out_spec) of a .pt2 file's top module, or (None, None, None) when the
    archive does not record them (then the module takes its tensors flat)."""
    try:
        with zipfile.ZipFile(os.fspath(path)) as z:
            name = next(n for n in z.namelist() if n.endswith("models/model.json"))
            gm = json.loads(z.read(name))["graph_module"]
        sig = next(m["signature"] for m in gm["module_call_graph"] if m["fqn"] == "")
        in_spec = pytree.treespec_loads(sig["in_spec"])
        out_spec = pytree.treespec_loads(sig["out_spec"])
        kinds = [_archive_leaf(s["user_input"]["arg"]) for s in gm["signature"]["input_specs"] if "user_input" in s]
    except (KeyError, StopIteration, ValueError, TypeError, zipfile.BadZipFile):
        return None, None, None
    if len(kinds) != in_spec.num_leaves:
        return None, None, None
    return in_spec, kinds, out_spec


def _archive_leaf(arg):
    # A user input is a tensor ("as_tensor") or a constant the export specialized on.
    if "as_tensor" in arg:
        return None
    if "as_none" in arg:
        return ("const", None)
    for key in ("as_int", "as_float", "as_bool", "as_string"):
        if key in arg:
            return ("const", arg[key])
    raise ValueError(f"unsupported user input {arg}")
