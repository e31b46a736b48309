"""luminal.flatten: the generated flatteners agree with torch.utils._pytree and refuse every other
structure."""
import collections

import pytest
import torch
import torch.utils._pytree as pytree

from luminal.flatten import StructureError, describe_mismatch, make_flattener, make_unflattener

T = torch.zeros
CASES = [
    ((T(1),), {}),
    ((T(1), [T(2), T(3), T(4)], T(5)), {}),
    ((T(1), (T(2), [T(3)]), {"a": T(4), "b": [T(5), T(6)]}), {"k": T(7)}),
    ((T(1), 3, None, 2.5), {}),  # constants torch.export specialized on
]


def kinds_of(args, kwargs):
    flat, spec = pytree.tree_flatten((args, kwargs))
    return flat, spec, [None if isinstance(x, torch.Tensor) else ("const", x) for x in flat]


@pytest.mark.parametrize("args,kwargs", CASES)
def test_flattener_equals_pytree(args, kwargs):
    flat, spec, kinds = kinds_of(args, kwargs)
    got = make_flattener(spec, kinds)(args, kwargs)
    want = [x for x in flat if isinstance(x, torch.Tensor)]
    assert len(got) == len(want) and all(g is w for g, w in zip(got, want))


@pytest.mark.parametrize("args,kwargs", CASES)
def test_unflattener_round_trips(args, kwargs):
    flat, spec = pytree.tree_flatten((args, kwargs))
    rebuilt = make_unflattener(spec)(flat)
    assert pytree.tree_flatten(rebuilt)[1] == spec


def test_flattener_refuses_other_structures():
    args, kwargs = CASES[2]
    _, spec, kinds = kinds_of(args, kwargs)
    f = make_flattener(spec, kinds)
    bad = [
        ((T(1), (T(2), (T(3),)), args[2]), kwargs),  # tuple for a list
        ((T(1), (T(2), [T(3), T(9)]), args[2]), kwargs),  # one more item
        ((T(1), (T(2), [T(3)]), {"a": T(4), "c": [T(5), T(6)]}), kwargs),  # another key
        (args, {}),  # a missing kwarg
        (args[:2], kwargs),
    ]
    for a, k in bad:
        with pytest.raises(StructureError):
            f(a, k)
        assert describe_mismatch(spec, kinds, a, k)


def test_constants_must_match():
    args, kwargs = CASES[3]
    _, spec, kinds = kinds_of(args, kwargs)
    f = make_flattener(spec, kinds)
    for wrong in ((T(1), 4, None, 2.5), (T(1), 3, 0, 2.5), (T(1), True, None, 2.5)):
        with pytest.raises(StructureError):
            f(wrong, {})
    msg = describe_mismatch(spec, kinds, (T(1), 4, None, 2.5), {})
    assert msg == "args[1] is int 4, the program was exported with 3"


def test_other_containers_fall_back_to_pytree():
    Pair = collections.namedtuple("Pair", "a b")
    args = (Pair(T(1), [T(2), T(3)]),)
    flat, spec, kinds = kinds_of(args, {})
    f = make_flattener(spec, kinds)
    assert len(f(args, {})) == 3
    with pytest.raises(StructureError):
        f(((T(1), [T(2), T(3)]),), {})
    (rebuilt,), kwargs = make_unflattener(spec)(flat)
    assert type(rebuilt) is Pair and rebuilt.a is flat[0] and rebuilt.b[1] is flat[2] and kwargs == {}
