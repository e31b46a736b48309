"""CUDA-only behaviour of the Python API (LUMINAL_TEST_DEVICE=cuda): zero-copy input binding with
the pointer cached per input, outputs written into preallocated CUDA tensors, runs ordered on
PyTorch's current stream (side streams too) and asynchronous like a torch op."""
import pytest
import torch
from torch.export import Dim

import luminal
from aten_check import DEVICE
from dlrm_net import seed_inputs, seed_model

pytestmark = pytest.mark.skipif(DEVICE != "cuda", reason="CUDA runtime tests (LUMINAL_TEST_DEVICE=cuda)")


class CountingProgram:
    """Stands in for luminal._luminal.Program and counts the calls the hot path makes into C++."""

    def __init__(self, program):
        self._p = program
        self.calls = {}

    def __getattr__(self, name):
        attr = getattr(self._p, name)
        if not callable(attr):
            return attr

        def counted(*a, **kw):
            self.calls[name] = self.calls.get(name, 0) + 1
            return attr(*a, **kw)

        return counted


def counted(fast):
    fast._program = CountingProgram(fast._program)
    return fast._program


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).cuda().eval()


def eager(m, *x):
    with torch.no_grad():
        return m(*x)


def test_unchanged_pointers_cost_one_call_into_cpp():
    m = mlp()
    x = torch.randn(16, 8, device="cuda")
    fast = luminal.compile(m, (x,))
    fast(x)
    prog = counted(fast)
    for _ in range(5):
        fast(x)
    assert prog.calls == {"run": 5}, prog.calls  # no set_input_device, no output rebinding
    x.copy_(torch.randn(16, 8, device="cuda"))  # same memory, new values: read in place
    torch.testing.assert_close(fast(x), eager(m, x))
    assert prog.calls == {"run": 6}


def test_new_pointer_rebinds_only_that_input():
    m = seed_model().cuda()
    inputs = [t.cuda() if isinstance(t, torch.Tensor) else [i.cuda() for i in t] for t in seed_inputs(32)]
    fast = luminal.compile(m, tuple(inputs))
    fast(*inputs)
    prog = counted(fast)
    dense2 = inputs[0].clone()  # another pointer, same shape
    torch.testing.assert_close(fast(dense2, inputs[1], inputs[2]), eager(m, dense2, inputs[1], inputs[2]))
    assert prog.calls == {"set_input_device": 1, "run": 1}, prog.calls
    for t in (inputs[0], dense2, inputs[0]):  # alternating pointers stay correct
        torch.testing.assert_close(fast(t, inputs[1], inputs[2]), eager(m, t, inputs[1], inputs[2]))


def test_reuse_outputs_are_preallocated_cuda_tensors_per_shape():
    m = mlp()
    dyn = ({0: Dim("b", min=1, max=256)},)
    fast = luminal.compile(m, (torch.randn(4, 8, device="cuda"),), dynamic_shapes=dyn, outputs="reuse")
    a = fast(torch.randn(4, 8, device="cuda"))
    assert a.is_cuda and a.device.index == 0 and a.shape == (4, 4)
    ptr4 = a.data_ptr()
    del a
    b = fast(torch.randn(9, 8, device="cuda"))
    assert b.shape == (9, 4) and b.data_ptr() != ptr4
    del b
    x = torch.randn(4, 8, device="cuda")
    c = fast(x)
    assert c.data_ptr() == ptr4  # the batch-4 set again, no new allocation
    torch.testing.assert_close(c, eager(m, x))
    with pytest.raises(luminal.OutputStillAlive):
        fast(x)  # c is alive: refused, not overwritten
    fresh = luminal.compile(m, (x,), dynamic_shapes=dyn)
    d, e = fresh(x), fresh(x)
    assert d.data_ptr() != e.data_ptr()  # the default: new tensors every call
    torch.testing.assert_close(d, eager(m, x))


def test_runs_on_the_current_stream_without_sync():
    m = mlp()
    x = torch.randn(64, 8, device="cuda")
    fast = luminal.compile(m, (x,))
    fast(x)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)  # keeps the side stream busy
        x2 = x * 3.0  # written on the side stream after the sleep
        out = fast(x2)
        assert not side.query()  # the call returned without waiting: asynchronous
        res = out * 1.0  # a torch op after it on the same stream sees the result
    side.synchronize()
    torch.testing.assert_close(res, eager(m, x * 3.0))


def test_default_stream_after_side_stream():
    m = mlp()
    x = torch.randn(8, 8, device="cuda")
    fast = luminal.compile(m, (x,), outputs="fresh")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        y = fast(x)
    side.synchronize()
    z = fast(x)  # back on the default stream
    torch.testing.assert_close(y, z)
    torch.testing.assert_close(z, eager(m, x))


def test_non_contiguous_cuda_input():
    m = mlp()
    x = torch.randn(8, 8, device="cuda")
    fast = luminal.compile(m, (x,))
    xt = x.t()  # same pointer and shape as x, transposed strides
    torch.testing.assert_close(fast(xt), eager(m, xt))
    torch.testing.assert_close(fast(x), eager(m, x))


def test_backend_on_cuda_dynamic():
    torch._dynamo.reset()
    m = seed_model().cuda()
    fast = torch.compile(m, backend=luminal.backend, dynamic=True)
    for batch in (8, 100, 2048):
        x = [t.cuda() if isinstance(t, torch.Tensor) else [i.cuda() for i in t] for t in seed_inputs(batch)]
        torch.testing.assert_close(fast(*x), eager(m, *x), atol=1e-5, rtol=1e-5)
    torch._dynamo.reset()


def test_tf32_precision_close_to_fp32():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64)).cuda().eval()
    x = torch.randn(128, 256, device="cuda")
    fast = luminal.compile(m, (x,), precision="tf32")
    torch.testing.assert_close(fast(x), eager(m, x), atol=2e-2, rtol=2e-2)


def test_dlrm_stats_report_the_plan():
    m = seed_model().cuda()
    x = [t.cuda() if isinstance(t, torch.Tensor) else [i.cuda() for i in t] for t in seed_inputs(2048)]
    fast = luminal.compile(m, tuple(x))
    s = fast.stats()
    assert s["kernels"] == 1 and s["steps"] == len(s["plan"]), s  # the DLRM rule's megakernel
    assert "batch 2048 -> mega" in s["rules"][0], s["rules"]
    print("DLRM seed plan:", s["kernels"], "kernels:", s["plan"])
