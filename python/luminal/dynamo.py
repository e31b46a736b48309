"""luminal.backend: a torch.compile backend.

    fast = torch.compile(model, backend=luminal.backend)
    fast = torch.compile(model, backend=luminal.backend, options={"precision": "tf32", "outputs": "reuse"})

Dynamo hands over an FX graph whose placeholders are tensors (parameters too, with nn-module
inlining) and, for dynamic dims, SymInts. The graph is exported with torch.export: every SymInt
placeholder is recomputed from the tensor dim it names, and the tensor dims dynamo made dynamic
become torch.export.Dim symbols, so one luminal program serves every size dynamo sends (no
recompile per size). Compilation happens at the first call (with its real tensors), outside
dynamo's tracing context, where torch.export can run; errors (an unsupported op) surface there.
Parameters stay inputs, bound zero-copy on CUDA, because dynamo may reuse one graph for several
module instances; small integer buffers (index tensors such as DLRM's li / lj) become constants of
the program, so the compiler's rules can read them, and the program is rebuilt if they change.
"""

import sympy
import torch
from torch.export import Dim

from .aot import OPTION_KEYS, check_options
from .aot import compile as aot_compile

_OPTIONS = {"precision": "fp32", "outputs": "fresh", "cuda_graph": True, "alternative": "auto",
            **{k: None for k in OPTION_KEYS}}


def backend(gm, example_inputs, options=None, **kwargs):
    """The torch.compile backend: returns a callable equal to gm on luminal.

    options: precision ("fp32" | "tf32" | "bf16"), outputs ("fresh", the default: new tensors per
    call as in eager | "reuse": views of the module's own outputs, a call while one is alive
    raises), cuda_graph (True), alternative ("auto", as for luminal.compile), and luminal.compile's
    other options (search, search_candidates, search_seconds, max_batch, ...).
    """
    opts = dict(_OPTIONS)
    for k, v in dict(options or {}, **kwargs).items():
        if k not in _OPTIONS:
            raise ValueError(f"luminal.backend: unknown option {k!r} (options: {', '.join(_OPTIONS)})")
        opts[k] = v
    device = "cuda" if any(isinstance(x, torch.Tensor) and x.is_cuda for x in example_inputs) else "cpu"
    check_options(opts["precision"], device, {k: v for k, v in opts.items() if k in OPTION_KEYS})
    compiled = _Compiled(gm, example_inputs, opts)
    return compiled.call


class _Graph(torch.nn.Module):
    """gm behind a tensor-only signature: SymInt placeholders read back from tensor dims, small
    integer module buffers (DLRM's li / lj) held as constants of the export."""

    def __init__(self, gm, plan, baked):
        super().__init__()
        self.gm = gm
        self.plan = plan  # per placeholder: ("t", k) | ("s", k, dim) | ("c", value) | ("b", name)
        for name, value in baked.items():
            self.register_buffer(name, value.detach().clone(), persistent=False)

    def forward(self, *ts):
        args = [ts[p[1]] if p[0] == "t" else ts[p[1]].size(p[2]) if p[0] == "s"
                else getattr(self, p[1]) if p[0] == "b" else p[1] for p in self.plan]
        return self.gm(*args)


_BAKE_MAX_NUMEL = 1 << 16


def _bakeable(node, fake):
    """A module buffer of integers small enough to be a constant of the program (index tensors
    such as DLRM's li / lj: the compiler's rules can then read their values)."""
    source = getattr(node.meta.get("grapharg"), "source", None)
    name = getattr(source, "name", "")
    name = name() if callable(name) else name
    return ("._buffers[" in str(name) and isinstance(fake, torch.Tensor) and not fake.dtype.is_floating_point
            and not fake.dtype.is_complex and fake.numel() <= _BAKE_MAX_NUMEL)


class _Compiled:
    """The callable handed back to dynamo: takes gm's flat placeholder values."""

    def __init__(self, gm, example_inputs, opts):
        self.gm, self.opts = gm, opts
        nodes = [n for n in gm.graph.nodes if n.op == "placeholder"]
        fakes = [n.meta.get("example_value") for n in nodes]
        fakes = [f if isinstance(f, torch.Tensor) else x for f, x in zip(fakes, example_inputs)]
        # Baked buffers are constants of the program, keyed by (storage, version): an in-place
        # change or another module's buffer compiles another program instead of a stale one.
        self.baked_pos = [i for i, x in enumerate(example_inputs)
                          if isinstance(x, torch.Tensor) and _bakeable(nodes[i], fakes[i])]
        # 0-d CPU tensors beside CUDA ones are Python numbers dynamo passes as tensors (an
        # EmbeddingBag's norm_type under dynamic=True): constants keyed by value, as eager mixes them.
        cuda = any(isinstance(x, torch.Tensor) and x.is_cuda for x in example_inputs)
        self.scalar_pos = [i for i, x in enumerate(example_inputs) if cuda and isinstance(x, torch.Tensor)
                           and not x.is_cuda and x.dim() == 0 and i not in self.baked_pos]
        self.baked_pos += self.scalar_pos
        self.bake_keys = [(i, i in self.scalar_pos) for i in self.baked_pos]  # (position, by value)
        self.tensor_pos = [i for i, x in enumerate(example_inputs)
                           if isinstance(x, torch.Tensor) and i not in self.baked_pos]
        tensor_fakes = [fakes[i] for i in self.tensor_pos]
        sources = _dim_sources(tensor_fakes)
        self.plan = []  # per placeholder: ("t", k) | ("s", k, dim) | ("b", i) | ("c",): a value the program specializes on
        for i, x in enumerate(example_inputs):
            if i in self.baked_pos:
                self.plan.append(("b", i))
            elif isinstance(x, torch.Tensor):
                self.plan.append(("t", self.tensor_pos.index(i)))
            elif isinstance(x, torch.SymInt) and str(x.node.expr) in sources:
                self.plan.append(("s",) + sources[str(x.node.expr)])
            else:  # a plain value, or a symbol no tensor dim carries
                self.plan.append(("c",))
        self.const_pos = [i for i, p in enumerate(self.plan) if p[0] == "c"]
        self.dynamic = [_dynamic_dims(f) for f in tensor_fakes]
        self.programs = {}  # the specialized values -> CompiledModule (one entry without them)
        self.impl = self._first_call  # what call() runs: compiles on the first call

    def call(self, *args):
        """What dynamo calls with gm's placeholder values."""
        return self.impl(*args)

    def _first_call(self, *args):
        # Compiled at the first call, with its real tensors, outside dynamo's tracing context.
        out = self._keyed(*args)
        key = self._key(args)
        fast = self.programs[key].positional_call(self.tensor_pos)
        if not self.const_pos and not self.bake_keys:
            self.impl = fast  # one program for every call: no key, no list
        else:  # the first call's specialization straight, any other through the keyed lookup
            self.impl = lambda *a: fast(*a) if self._key(a) == key else self._keyed(*a)
        return out

    def _key(self, args):
        key = tuple(args[i] for i in self.const_pos)
        if self.bake_keys:
            key += tuple(args[i].item() if by_value else (args[i].data_ptr(), args[i]._version)
                         for i, by_value in self.bake_keys)
        return key

    def _keyed(self, *args):
        tensors = [args[i] for i in self.tensor_pos]
        key = self._key(args)
        compiled = self.programs.get(key)
        if compiled is None:
            compiled = self.programs[key] = self._compile(tensors, args)
        return compiled.run_flat(tensors)

    def _compile(self, tensors, args):
        plan = [("c", args[i]) if p[0] == "c" else ("b", f"baked_{i}") if p[0] == "b" else p
                for i, p in enumerate(self.plan)]
        baked = {f"baked_{i}": args[i] for i in self.baked_pos}
        dyn = (tuple(d or None for d in self.dynamic),) if any(self.dynamic) else None
        extra = {k: self.opts[k] for k in OPTION_KEYS if self.opts[k] is not None}

        def export(dynamic_shapes):
            return aot_compile(_Graph(self.gm, plan, baked), tuple(tensors), dynamic_shapes=dynamic_shapes,
                               precision=self.opts["precision"], outputs=self.opts["outputs"],
                               cuda_graph=self.opts["cuda_graph"], alternative=self.opts["alternative"], **extra)

        try:
            return export(dyn)
        except torch._dynamo.exc.UserError as e:
            # Named dims that torch.export finds related (a KeyedJaggedTensor's lengths are
            # keys x batch, a relation dynamo kept as a guard): let export derive the relations.
            if dyn is None or "Constraints violated" not in str(e):
                raise
            return export((tuple({d: Dim.AUTO for d in dims} or None for dims in self.dynamic),))


def _dim_sources(fakes):
    """{symbol name: (tensor index, dim)} for every dim that is a plain symbol."""
    out = {}
    for k, f in enumerate(fakes):
        for d, s in enumerate(f.shape):
            if isinstance(s, torch.SymInt) and isinstance(s.node.expr, sympy.Symbol):
                out.setdefault(str(s.node.expr), (k, d))
    return out


def _dynamic_dims(fake):
    """torch.export dynamic_shapes entry of one tensor: its symbolic dims as named Dims (one name
    per dynamo symbol, so equal dims stay equal), Dim.AUTO for a derived one (2 * s0)."""
    dims = {}
    for d, s in enumerate(fake.shape):
        if not isinstance(s, torch.SymInt):
            continue
        expr = s.node.expr
        if isinstance(expr, sympy.Symbol):
            dims[d] = Dim(str(expr), **_range(s))
        elif expr.free_symbols:
            dims[d] = Dim.AUTO
    return dims


def _range(s):
    vr = s.node.shape_env.var_to_range.get(s.node.expr)
    if vr is None:
        return {}
    out = {"min": max(int(vr.lower), 0)}
    try:
        out["max"] = int(vr.upper)
    except (TypeError, ValueError, OverflowError, AttributeError):  # unbounded (int_oo)
        pass
    return out
