"""luminal.compile (AOT through torch.export) and luminal.load (a saved .pt2 archive).

luminal.compile hands the exported program to C++ in memory: the graph as the JSON that
torch.export.save would write into the archive, the weights as pointers to the model's own tensors
(CUDA weights bound in place, zero-copy; small buffers and lifted constants as host copies the
compiler's rules can read). Nothing is written to disk.
"""

import contextlib
import copy
import json
import os
import zipfile

import torch
import torch.utils._pytree as pytree

from . import _luminal
from .compiled import CompiledModule, dtype_name

PRECISIONS = ("fp32", "tf32", "tf32x3", "bf16")
# The keyword options every entry point accepts and hands to C++ (python/src/options.h).
OPTION_KEYS = ("search", "search_candidates", "search_seconds", "search_seed", "research", "plan_cache",
               "max_batch", "dim_hints", "candidate", "graph_branches", "branch_priorities", "matmul_autotune")
_HOST_CONSTANT_MAX = 1 << 20  # buffers up to this many bytes go over as host copies (rules read them)


def check_options(precision, device, options=None):
    """Refuses a precision, device or option the Python API does not offer, before anything is
    exported."""
    if precision not in PRECISIONS:
        raise ValueError(f"luminal: precision {precision!r} is not supported; use 'fp32' (exact, the default), "
                         f"'tf32' (CUDA matmuls on TF32 tensor cores), 'tf32x3' (CUDA matmuls as three TF32 products: "
                         f"fp32 accuracy) or 'bf16' (the model in bfloat16)")
    if device not in ("cpu", "cuda") and not str(device).startswith("cuda:") and device != "reference":
        raise ValueError(f"luminal: device {device!r}; expected 'cpu', 'cuda', 'cuda:N' or 'reference'")
    if precision in ("tf32", "tf32x3") and not str(device).startswith("cuda"):
        raise ValueError(f"luminal: precision {precision!r} needs the CUDA backend (the CPU computes fp32 exactly)")
    for k in options or {}:
        if k not in OPTION_KEYS:
            raise ValueError(f"luminal: unknown option {k!r} (options: {', '.join(OPTION_KEYS)})")


def _device_of(tree):
    flat, _ = pytree.tree_flatten(tree)
    return "cuda" if any(isinstance(x, torch.Tensor) and x.is_cuda for x in flat) else "cpu"


def _leaf_kinds(flat):
    return [None if isinstance(x, torch.Tensor) else ("const", x) for x in flat]


def _c_options(device, precision, cuda_graph, alternative, options):
    return dict(options or {}, device=device, precision=precision, cuda_graph=cuda_graph, alternative=alternative)


def load_program(path, device, precision, cuda_graph=True, alternative="auto", options=None):
    """The C++ program of a .pt2 file (translated, compiled for the device, weights uploaded)."""
    return _luminal.Program.load(os.fspath(path), _c_options(device, precision, cuda_graph, alternative, options))


def _is_float(t):
    return isinstance(t, torch.Tensor) and t.is_floating_point()


def _bf16_copy(model):
    """A bfloat16 copy of the model behind its float32 interface: float inputs cast to bf16 on entry,
    floating outputs back to float32 (what precision='bf16' compiles). Hooks on the copy, not a wrapper
    module: the forward keeps its signature (dynamic_shapes written for the model apply) and the
    parameters their names."""
    copy_ = copy.deepcopy(model).to(torch.bfloat16)
    to_bf16 = lambda t: t.to(torch.bfloat16) if _is_float(t) else t  # noqa: E731
    copy_.register_forward_pre_hook(
        lambda mod, args, kwargs: (pytree.tree_map(to_bf16, args), pytree.tree_map(to_bf16, kwargs)), with_kwargs=True)
    copy_.register_forward_hook(lambda mod, args, out: pytree.tree_map(lambda t: t.float() if _is_float(t) else t, out))
    return copy_


def _program_json(ep):
    """The serialized ExportedProgram (models/<name>.json of an archive), without pickling the
    weights where this torch version allows it."""
    from torch._export.serde.serialize import serialize

    try:
        return serialize(ep, serialize_state_dict=False, serialize_constants=False,
                         serialize_example_inputs=False).exported_program
    except TypeError:  # a torch without the keywords (2.11)
        return _program_json_unpickled(ep)


def _program_json_unpickled(ep):
    """serialize(ep)'s JSON with its tensor pickler stubbed out: the weights stay in ep (the
    serializer validates them) but are not pickled, which took seconds for GBs of tables."""
    import torch._export.serde.serialize as serde

    pickler = serde.serialize_torch_artifact
    serde.serialize_torch_artifact = lambda *args, **kwargs: b""
    try:
        return serde.serialize(ep).exported_program
    finally:
        serde.serialize_torch_artifact = pickler


def _tensor_entries(ep, device, keep):
    """(weights, constants) as (name, is_param, dtype, shape, host_ptr, device_ptr) tuples for C++.
    CUDA weights of a CUDA program are bound in place; anything else goes over as contiguous host
    memory. Tensors whose memory C++ reads are appended to `keep`, which must outlive the program."""
    params = set(ep.graph_signature.parameters)
    cuda = str(device).startswith("cuda")

    def entry(name, t):
        t = t.detach()
        small_buffer = name not in params and t.numel() * t.element_size() <= _HOST_CONSTANT_MAX
        if cuda and t.is_cuda and not small_buffer:
            t = t.contiguous()
            keep.append(t)
            return (name, name in params, dtype_name(t.dtype, name), list(t.shape), 0, t.data_ptr())
        t = t.cpu().contiguous()
        keep.append(t)
        return (name, name in params, dtype_name(t.dtype, name), list(t.shape), t.data_ptr(), 0)

    weights = [entry(n, t) for n, t in ep.state_dict.items() if isinstance(t, torch.Tensor)]
    constants = [entry(n, t) for n, t in ep.constants.items() if isinstance(t, torch.Tensor)]
    return weights, constants


def compile(model, example_inputs, dynamic_shapes=None, precision="fp32", device=None, outputs="fresh",
            example_kwargs=None, cuda_graph=True, decompose=False, alternative="auto", **options):
    """AOT-compiles `model` for `example_inputs` through torch.export; returns a CompiledModule.

    example_inputs: a tuple of positional arguments (nested lists/tuples/dicts of tensors as the
    model takes them), or a single tensor. dynamic_shapes is torch.export's argument
    (torch.export.Dim per dynamic dim): those dims become graph symbols, and every size in their
    range runs without recompiling. device defaults to where the example tensors are.
    precision: "fp32" (exact), "tf32" (CUDA matmuls on TF32 tensor cores) or "bf16" (a bfloat16
    copy of the model behind its float32 inputs and outputs).
    outputs: "fresh" (the default: every call returns new tensors) or "reuse" (calls write into
    the module's own output tensors; a call while an earlier result is still referenced raises
    instead of overwriting it); see luminal.compiled.
    decompose=True translates the core-ATen form (ExportedProgram.run_decompositions()) instead
    of the default export's higher-level ops.
    alternative: what the compiler's rewrite rules may apply to the regions they recognize ("auto":
    every available alternative, the search picks; "none": the graph as exported; or a name such
    as "mega" or "fused_sparse"); stats()["rules"] reports it.
    options: search (True: time the candidates at the first call), search_candidates,
    search_seconds, search_seed, research, plan_cache, max_batch (dim buckets 1..N over a dynamic
    batch), dim_hints, candidate, graph_branches, matmul_autotune (docs/python.md).
    """
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    kwargs = dict(example_kwargs or {})
    device = device or _device_of((args, kwargs))
    check_options(precision, device, options)
    if isinstance(model, torch.nn.Module):
        model = model.eval()
    keep = []
    if precision == "bf16":
        model = _bf16_copy(model)
        keep.append(model)
    with torch.no_grad():
        ep = torch.export.export(model, args, kwargs, dynamic_shapes=dynamic_shapes, strict=False)
        if decompose:
            ep = ep.run_decompositions()
    flat, _ = pytree.tree_flatten((args, kwargs))
    in_spec, out_spec = ep.call_spec.in_spec, ep.call_spec.out_spec
    weights, constants = _tensor_entries(ep, device, keep)
    with _flat_output_spec(ep):
        program_json = _program_json(ep)
    program = _luminal.Program.from_memory(program_json, weights, constants,
                                           _c_options(device, precision, cuda_graph, alternative, options))
    return CompiledModule(program, in_spec, _leaf_kinds(flat), out_spec, outputs=outputs, keepalive=keep)


@contextlib.contextmanager
def _flat_output_spec(ep):
    """Serializes ep with its outputs as a flat tuple when their structure has no serialized name
    (torch 2.11 cannot serialize torch.return_types such as max's): the JSON only carries the
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


def load(path, device="cpu", precision="fp32", outputs="fresh", cuda_graph=True, alternative="auto", **options):
    """Loads a saved torch.export archive (.pt2): translated, compiled and ready to call with the
    same (nested) inputs as the exported model (alternative, outputs and options as for
    compile(); precision "bf16" needs a program exported in bf16)."""
    check_options(precision, device, options)
    program = load_program(path, device, precision, cuda_graph, alternative, options)
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
        # User inputs and the constants the export specialized on (None leaves of a
        # KeyedJaggedTensor: its weights, offsets, ...), in flat order.
        kinds = [_archive_leaf(s["user_input"]["arg"]) if "user_input" in s else _archive_leaf(s["constant_input"]["value"])
                 for s in gm["signature"]["input_specs"] if "user_input" in s or "constant_input" in s]
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
