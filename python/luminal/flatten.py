"""Input flatteners and output builders generated once from torch.export's TreeSpecs.

A call must not pay for torch.utils._pytree (a few microseconds per call): make_flattener turns
the in_spec into straight-line Python (index the args, check each container's type and length)
compiled once; make_unflattener does the same for the out_spec. Specs with containers other than
tuple/list/dict fall back to pytree, still checked against the spec.
"""

import torch
import torch.utils._pytree as pytree

_CONTAINERS = (tuple, list, dict)


class StructureError(TypeError):
    """The inputs' nesting differs from the exported one."""


def _children(spec):
    kids = getattr(spec, "children", None)
    return list(kids()) if callable(kids) else list(spec.children_specs)


def _generatable(spec):
    if spec.is_leaf():
        return True
    return spec.type in _CONTAINERS and all(_generatable(c) for c in _children(spec))


def _walk(spec, expr, lines, leaves, depth):
    """Emits the checks of one node; appends the expressions of its leaves."""
    if spec.is_leaf():
        leaves.append(expr)
        return
    kids = _children(spec)
    var = f"n{depth}_{len(lines)}"
    lines.append(f"{var} = {expr}")
    name = spec.type.__name__
    lines.append(f"if type({var}) is not {name} or len({var}) != {len(kids)}: raise _Bad")
    if spec.type is dict:
        keys = list(spec.context)
        for k, c in zip(keys, kids):
            _walk(c, f"{var}[{k!r}]", lines, leaves, depth + 1)
    else:
        for i, c in enumerate(kids):
            _walk(c, f"{var}[{i}]", lines, leaves, depth + 1)


def flatten_source(in_spec, leaf_kinds):
    """Straight-line code that checks (args, kwargs) against in_spec and the specialized
    constants, raising _Bad: (lines, expressions of the tensor leaves), or None when the spec
    has containers other than tuple/list/dict. The tensors land in t0, t1, ... in flat order."""
    if not _generatable(in_spec):
        return None
    args_spec, kwargs_spec = _children(in_spec)
    lines, leaves = [], []
    # The root is (args, kwargs) from a call: a tuple and a dict by construction.
    lines.append(f"if len(args) != {len(_children(args_spec))}: raise _Bad")
    for i, c in enumerate(_children(args_spec)):
        _walk(c, f"args[{i}]", lines, leaves, 1)
    if kwargs_spec.num_children == 0:
        lines.append("if kwargs: raise _Bad")
    else:
        _walk(kwargs_spec, "kwargs", lines, leaves, 1)
    consts = {i: k[1] for i, k in enumerate(leaf_kinds) if k is not None}
    tensors = [e for i, e in enumerate(leaves) if i not in consts]
    lines += [f"t{k} = {e}" for k, e in enumerate(tensors)]
    for i in consts:
        lines.append(f"if not _same(({leaves[i]}), _c[{i}]): raise _Bad")
    body = ["try:"] + [f"    {ln}" for ln in lines]
    body += ["except (TypeError, KeyError, IndexError):", "    raise _Bad from None"]
    return body, [f"t{k}" for k in range(len(tensors))]


def compile_function(name, params, body, scope):
    """Defines `def name(params): body` in scope (generated from specs, never from user data)."""
    src = f"def {name}({params}):\n" + "\n".join(f"    {ln}" for ln in body)
    exec(src, scope)  # noqa: S102
    return scope[name]


def base_scope(leaf_kinds):
    """The names flatten_source's code refers to."""
    return {"_Bad": StructureError, "_same": _same,
            "_c": {i: k[1] for i, k in enumerate(leaf_kinds) if k is not None}}


def make_flattener(in_spec, leaf_kinds):
    """Returns f(args, kwargs) -> tuple of the tensor leaves, in torch.export's flat order.

    leaf_kinds: per flat leaf, None for a tensor, else ("const", value) for a constant the
    export specialized on (checked for equality). Raises StructureError on a mismatch.
    """
    src = flatten_source(in_spec, leaf_kinds)
    if src is None:
        return _pytree_flattener(in_spec, leaf_kinds)
    body, tensors = src
    body = body + [f"return ({', '.join(tensors)}{',' if len(tensors) == 1 else ''})"]
    return compile_function("flatten", "args, kwargs", body, base_scope(leaf_kinds))


def _same(got, want):
    if want is None or isinstance(want, bool):
        return got is want
    return type(got) is type(want) and got == want


def _is_kjt(x):
    return type(x).__name__ == "KeyedJaggedTensor" and hasattr(x, "lengths") and hasattr(x, "keys")


def _canonical_kjt(kjt):
    """A KeyedJaggedTensor as torch.export saw one built from lengths (from_lengths_sync): keys,
    values, weights and lengths, no cached offsets. A KJT built from offsets (or whose offsets a
    module computed and cached) carries a tensor where the export recorded None; the program reads
    only values and lengths, so the two are one input."""
    if kjt.variable_stride_per_key():
        raise StructureError("a KeyedJaggedTensor with a batch size per key (variable stride) is not supported")
    return type(kjt)(keys=kjt.keys(), values=kjt.values(), weights=kjt.weights_or_none(), lengths=kjt.lengths())


def _canonical(tree):
    """tree with every KeyedJaggedTensor canonical (_canonical_kjt)."""
    return pytree.tree_map(lambda x: _canonical_kjt(x) if _is_kjt(x) else x, tree, is_leaf=_is_kjt)


def _pytree_flattener(in_spec, leaf_kinds):
    def flatten(args, kwargs):
        flat, spec = pytree.tree_flatten((args, kwargs))
        if spec != in_spec or any(k is not None and not _same(x, k[1]) for x, k in zip(flat, leaf_kinds)):
            flat, spec = pytree.tree_flatten(_canonical((args, kwargs)))
        if spec != in_spec:
            raise StructureError("structure")
        out = []
        for x, kind in zip(flat, leaf_kinds):
            if kind is None:
                out.append(x)
            elif not _same(x, kind[1]):
                raise StructureError("constant")
        return tuple(out)

    return flatten


def make_unflattener(out_spec):
    """Returns g(outputs) -> the model's output structure (a tensor, tuple, list or dict)."""
    if out_spec is None:
        return lambda outs: outs[0] if len(outs) == 1 else tuple(outs)
    if not _generatable(out_spec):
        return lambda outs: pytree.tree_unflatten(list(outs), out_spec)
    counter = [0]

    def build(spec):
        if spec.is_leaf():
            counter[0] += 1
            return f"o[{counter[0] - 1}]"
        kids = [build(c) for c in _children(spec)]
        if spec.type is dict:
            return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(spec.context, kids)) + "}"
        inner = ", ".join(kids) + ("," if len(kids) == 1 and spec.type is tuple else "")
        return f"({inner})" if spec.type is tuple else f"[{inner}]"

    scope = {}
    exec(f"def unflatten(o):\n    return {build(out_spec)}", scope)  # noqa: S102
    return scope["unflatten"]


def describe_mismatch(in_spec, leaf_kinds, args, kwargs):
    """A sentence naming where the inputs' structure first differs from the exported one."""
    try:
        want = pytree.tree_unflatten([_Leaf(k) for k in leaf_kinds], in_spec)
    except Exception:  # noqa: BLE001 - a container (KeyedJaggedTensor) that checks its leaves
        try:
            got = pytree.tree_structure(_canonical((args, kwargs)))
        except StructureError as e:
            return str(e)
        return _spec_diff(in_spec, got, "") or _leaf_diff(leaf_kinds, args, kwargs)
    return _diff(want, (args, kwargs), "") or "the inputs differ from the exported ones"


def _leaf_diff(leaf_kinds, args, kwargs):
    """Names the first flat leaf that differs from a constant the export specialized on."""
    flat = pytree.tree_leaves(_canonical((args, kwargs)))
    for i, (x, k) in enumerate(zip(flat, leaf_kinds)):
        if k is not None and not _same(x, k[1]):
            return (f"flat input {i} is {_what(x)}, the program was exported with {k[1]!r} (a KeyedJaggedTensor's "
                    f"weights: export the model with the same kind of input)")
    return "the inputs differ from the exported ones"


def _spec_diff(want, got, path):
    """Where two TreeSpecs first differ (containers that cannot hold placeholder leaves)."""
    where = _path_name(path)
    if want.is_leaf() or got.is_leaf():
        return None if want.is_leaf() and got.is_leaf() else f"{where}'s structure differs from the exported one"
    if want.type is not got.type:
        return f"{where} is a {got.type.__name__}, the program takes a {want.type.__name__}"
    if want.context != got.context:
        label = "keys" if want.type.__name__ == "KeyedJaggedTensor" else "context"
        return f"{where} has {label} {got.context!r}, the program was exported with {want.context!r}"
    kids_w, kids_g = _children(want), _children(got)
    if len(kids_w) != len(kids_g):
        return f"{where} has {len(kids_g)} parts, the program takes {len(kids_w)}"
    for i, (w, g) in enumerate(zip(kids_w, kids_g)):
        d = _spec_diff(w, g, f"{path}[{i}]")
        if d:
            return d
    return None


class _Leaf:
    def __init__(self, kind):
        self.kind = kind

    def __repr__(self):
        return "a tensor" if self.kind is None else repr(self.kind[1])


def _what(x):
    if isinstance(x, torch.Tensor):
        return "a tensor"
    if isinstance(x, (tuple, list, dict)):
        return f"a {type(x).__name__} of {len(x)}"
    return f"{type(x).__name__} {x!r}"


def _diff(want, got, path):
    where = _path_name(path)
    if isinstance(want, _Leaf):
        if want.kind is None:
            return None if isinstance(got, torch.Tensor) else f"{where} is {_what(got)}, the program takes a tensor"
        return None if _same(got, want.kind[1]) else (
            f"{where} is {_what(got)}, the program was exported with {want.kind[1]!r}")
    if type(got) is not type(want) or len(got) != len(want):
        return f"{where} is {_what(got)}, the program takes {_what(want)}"
    if isinstance(want, dict):
        for k in want:
            if k not in got:
                return f"{where} lacks key {k!r}"
            d = _diff(want[k], got[k], f"{path}[{k!r}]")
            if d:
                return d
        return None
    for i, (w, g) in enumerate(zip(want, got)):
        d = _diff(w, g, f"{path}[{i}]")
        if d:
            return d
    return None


def _path_name(path):
    # "(args, kwargs)[0][2][1]" reads better as "args[2][1]"; kwargs as "kwargs['x']".
    if not path:
        return "the inputs"
    head, rest = path[:3], path[3:]
    return ("args" if head == "[0]" else "kwargs") + rest
