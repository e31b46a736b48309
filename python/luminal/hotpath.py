"""The call of a CompiledModule bound in place (CUDA, the CPU backend), generated per program as
straight-line Python.

For the DLRM seed shape the budget of a whole call is about 2 us, so nothing runs that a changed
input does not require: per input, four reads (data pointer, shape, dtype, layout) compared with the
cached binding; nothing else for unchanged tensors; then one C++ call that enqueues the captured
CUDA graph on PyTorch's current stream (a CPU program runs there and then, without the GIL). A
changed pointer, shape or layout goes to the slow path (rebind: full checks and one C++ call for
that input), a changed shape also re-picks the output tensors (bind_outputs). Generated code indexes
constant positions: no loop, no enumerate, no pytree.
"""

from .flatten import base_scope, compile_function, flatten_source

_NO_KWARGS = {}


def _check_lines(n):
    lines = ["r = False"]
    for i in range(n):
        lines.append(f"if t{i}.data_ptr() != P[{i}] or t{i}.shape != S[{i}] or t{i}.dtype is not D{i} "
                     f"or not t{i}.is_contiguous(): r = rebind({i}, t{i}) or r")
    return lines


def _call_body(prelude, exprs, fresh):
    body = list(prelude) + [f"t{i} = {e}" for i, e in enumerate(exprs) if e != f"t{i}"]
    body += _check_lines(len(exprs))
    body += ["if r: bind_outputs()"]
    if not fresh:  # reuse: refuse to overwrite memory an earlier result still uses
        body += ["for o, b in zip(OUT[0], BASE[0]):", "    if USES(o) != b: still_alive()"]
    body += ["PROG.run(stream(0))"]
    # fresh: the graph writes the module's tensors; the clones are the caller's. reuse: new views.
    body.append("return unflatten([o.clone() for o in OUT[0]])" if fresh
                else "return unflatten([o.detach() for o in OUT[0]])")
    return body


def _trusted_check_lines(dynamic):
    # Dynamo's guards already hold each input's dtype, static sizes, strides and device: only the
    # pointer (another module instance, a new batch tensor) and the dynamic dims can change.
    lines = ["r = False"]
    for i, dyn in enumerate(dynamic):
        shape = f" or t{i}.shape != S[{i}]" if dyn else ""
        lines.append(f"if t{i}.data_ptr() != P[{i}]{shape}: r = rebind({i}, t{i}) or r")
    return lines


def make_positional_call(positions, dynamic, state, fresh):
    """call(*args) for an in-place program whose inputs are args[positions[i]] (a torch.compile
    backend's placeholders), checked as dynamo's guards leave them to check: the pointer of every
    input, the shape of those with dynamic dims (dynamic[i]). Runs in a copy of `state`."""
    scope = dict(state)
    body = [f"t{i} = args[{p}]" for i, p in enumerate(positions)]
    body += _trusted_check_lines(dynamic)
    body += ["if r: bind_outputs()"]
    if not fresh:
        body += ["for o, b in zip(OUT[0], BASE[0]):", "    if USES(o) != b: still_alive()"]
    body += ["PROG.run(stream(0))"]
    body.append("return unflatten([o.clone() for o in OUT[0]])" if fresh
                else "return unflatten([o.detach() for o in OUT[0]])")
    return compile_function("call_positional", "*args", body, scope)


def make_in_place_calls(in_spec, leaf_kinds, dtypes, state, fresh):
    """(call(args, kwargs), call_flat(tensors), scope) for an in-place program; both run in scope.

    state: the scope the code runs in; it must hold P and S (the bound pointers and shapes, lists
    updated by rebind), rebind(i, t) -> shape changed, bind_outputs(), PROG (the C++ program),
    FLATTEN (the pytree flattener, for specs with other containers),
    stream (the current-stream query), OUT and BASE (one-element holders of the output tensors and
    of their storage use counts when no result is alive), USES (a tensor's storage use count),
    still_alive() (raises for reuse), unflatten. Both raise StructureError on a structure mismatch and
    AttributeError for a non-tensor leaf.
    """
    n = len(dtypes)
    scope = dict(state)
    scope.update(base_scope(leaf_kinds or []))
    scope.update({f"D{i}": d for i, d in enumerate(dtypes)})
    scope["_NO_KWARGS"] = _NO_KWARGS
    flat_prelude = [f"if kwargs or len(args) != {n}: raise _Bad"]
    flat_exprs = [f"args[{i}]" for i in range(n)]
    call_flat = compile_function("call_flat", "args, kwargs=_NO_KWARGS", _call_body(flat_prelude, flat_exprs, fresh),
                                 scope)
    src = flatten_source(in_spec, leaf_kinds) if in_spec is not None else None
    if in_spec is None:
        call = call_flat
    elif src is None:  # containers pytree must flatten: still one generated check sequence
        body = ["flat = FLATTEN(args, kwargs)"] + _call_body([], [f"flat[{i}]" for i in range(n)], fresh)
        call = compile_function("call", "args, kwargs", body, scope)
    else:
        prelude, exprs = src
        call = compile_function("call", "args, kwargs", _call_body(prelude, exprs, fresh), scope)
    return call, call_flat, scope
