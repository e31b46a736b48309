"""Bad input at the Python API: wrong dtype, shape, device, structure, unsupported ops and options;
each error names the input and both dtypes/shapes, and nothing is silently cast."""
import pytest
import torch
from torch.export import Dim

import luminal
from aten_check import DEVICE, on_device
from dlrm_net import seed_inputs, seed_model

OTHER = "cpu" if DEVICE == "cuda" else "meta"  # a device the program does not run on


@pytest.fixture(scope="module")
def dlrm():
    m = seed_model().to(DEVICE)
    inputs = on_device(seed_inputs(16))
    batch = Dim("batch", min=2, max=1024)
    dyn = {"dense_x": {0: batch}, "lS_o": {1: batch}, "lS_i": [{0: Dim(f"n{k}", min=2)} for k in range(3)]}
    return luminal.compile(m, inputs, dynamic_shapes=dyn), inputs


def test_wrong_dtype_names_input_and_both_dtypes(dlrm):
    fast, (x, off, idx) = dlrm
    with pytest.raises(TypeError, match=r"input 'dense_x' is torch\.float64, the program takes torch\.float32"):
        fast(x.double(), off, idx)
    with pytest.raises(TypeError, match=r"input 'ls_i_1' is torch\.int32, the program takes torch\.int64"):
        fast(x, off, [idx[0], idx[1].int(), idx[2]])


def test_wrong_static_dim_names_input_and_both_shapes(dlrm):
    fast, (x, off, idx) = dlrm
    with pytest.raises(ValueError, match=r"input 'dense_x' has shape \[16, 12\], the program takes \[.*, 13\]"):
        fast(x[:, :12], off, idx)
    with pytest.raises(ValueError, match=r"input 'dense_x' has shape \[16\], the program takes"):
        fast(x[:, 0], off, idx)


def test_inconsistent_dynamic_dims(dlrm):
    fast, (x, off, idx) = dlrm
    # dense_x says batch 8, lS_o says 16: the symbol cannot be both.
    with pytest.raises(ValueError, match=r"input '.*' .*(symbol|must be)"):
        fast(x[:8], off, idx)


def test_outside_the_exported_range(dlrm):
    fast, _ = dlrm
    x, off, idx = on_device(seed_inputs(2000, seed=5))
    with pytest.raises(ValueError, match=r"outside its exported range"):
        fast(x, off, idx)


def test_wrong_device(dlrm):
    fast, (x, off, idx) = dlrm
    if OTHER == "meta":
        bad = torch.empty(x.shape, dtype=x.dtype, device="meta")
    else:
        bad = x.to(OTHER)
    with pytest.raises(ValueError, match=rf"input 'dense_x' is on {OTHER}.*, the program runs on {DEVICE}"):
        fast(bad, off, idx)


def test_wrong_structure(dlrm):
    fast, (x, off, idx) = dlrm
    with pytest.raises(TypeError, match=r"args\[2\] is a list of 2, the program takes a list of 3"):
        fast(x, off, idx[:2])
    with pytest.raises(TypeError, match=r"args\[2\] is a tuple of 3, the program takes a list of 3"):
        fast(x, off, tuple(idx))
    with pytest.raises(TypeError, match=r"input 'ls_o' is list, the program takes a torch.int64 tensor"):
        fast(x, list(off), idx)
    with pytest.raises(TypeError, match=r"the inputs is a tuple of 2|args is a tuple of 2"):
        fast(x, off)
    with pytest.raises(TypeError, match=r"kwargs"):
        fast(x, off, idx, extra=1)


def test_not_a_tensor_at_a_tensor_leaf():
    m = torch.nn.Linear(3, 2).to(DEVICE)
    fast = luminal.compile(m, (on_device(torch.randn(2, 3)),))
    with pytest.raises(TypeError, match=r"input 'input' is list, the program takes a torch.float32 tensor"):
        fast([[1.0, 2.0, 3.0]])


def test_unsupported_op_names_the_op():
    class Bad(torch.nn.Module):
        def forward(self, x):
            return torch.cumprod(x, 0)

    with pytest.raises((RuntimeError, ValueError), match=r"aten\.cumprod"):
        luminal.compile(Bad(), (on_device(torch.randn(3)),))
    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"aten\.cumprod"):
        torch.compile(Bad(), backend=luminal.backend)(on_device(torch.randn(3)))
    torch._dynamo.reset()


@pytest.mark.parametrize("precision", ["fp8", "fp16", "int8", "FP32"])
def test_unsupported_precision(precision):
    with pytest.raises(ValueError, match=rf"precision '{precision}' is not supported; use 'fp32'"):
        luminal.compile(torch.nn.Linear(3, 2), (torch.randn(2, 3),), precision=precision)


@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
def test_tf32_needs_cuda(precision):
    with pytest.raises(ValueError, match=rf"'{precision}' needs the CUDA backend"):
        luminal.compile(torch.nn.Linear(3, 2), (torch.randn(2, 3),), precision=precision, device="cpu")


def test_load_missing_file(tmp_path):
    with pytest.raises((RuntimeError, ValueError, OSError), match=r"missing\.pt2"):
        luminal.load(tmp_path / "missing.pt2", device=DEVICE)


def test_out_of_range_index_is_reported(dlrm):
    # CPU: the reference runtime raises during the call. CUDA: the kernels clamp and flag it, and
    # check_errors() (the next synchronizing point) raises.
    fast, (x, off, idx) = dlrm
    bad = idx[0].clone()
    bad[1] = 10  # table 0 has 10 rows
    with pytest.raises(RuntimeError, match=r"out[- ]of[- ]range"):
        fast(x, off, [bad, idx[1], idx[2]])
        fast.check_errors()
    torch.testing.assert_close(fast(x, off, idx), fast(x, off, idx))  # good input runs again
    fast.check_errors()
