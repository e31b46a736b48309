# temporary device diagnostic (not committed): search best vs run-only vs call per cell
import os, sys, time, statistics, resource, subprocess, tempfile, json
if len(sys.argv) == 1:
    for cell in ["kaggle 2048 bf16 1", "mlperf 64 fp32 1", "kaggle 1 fp32 1", "kaggle 2048 bf16 16"]:
        t = cell.split()[-1]
        env = dict(os.environ, OMP_NUM_THREADS=t, MKL_NUM_THREADS=t, LUMINAL_CACHE_DIR=tempfile.mkdtemp())
        print("==", cell, flush=True)
        subprocess.run([sys.executable, __file__] + cell.split(), env=env)
    sys.exit(0)
import torch
sys.path.insert(0, "bench")
import cpu_rows as cr, luminal
name, batch, prec, th = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
torch.set_num_threads(th)
cfg, m32 = cr.build(name, 20000)
x = cr.make_inputs(cfg, batch)
m = cr.prepare(m32, prec); xi = cr.cast_inputs(x, prec)
def med(f, n=30):
    s = []
    for _ in range(n):
        t = time.perf_counter(); f(); s.append((time.perf_counter() - t) * 1e6)
    return statistics.median(s)
with torch.no_grad():
    print("eager before", med(lambda: m(*xi)), flush=True)
c = luminal.compile(m32, x, device="cpu", precision=prec)
c(*x)
p = c._program
flat = c._flatten(tuple(x), {})
def setin():
    for i, t in enumerate(flat): p.set_input_host(i, t.data_ptr(), t.numel() * t.element_size(), t.shape)
def faults(): return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for k in range(3):
    f0 = faults(); call = med(lambda: c(*x)); fc = (faults() - f0) / 30
    run = med(lambda: p.run())
    print(f"call {call:.1f} (faults/call {fc:.1f}) | run only {run:.1f}", flush=True)
with torch.no_grad():
    print("eager after", med(lambda: m(*xi)), flush=True)
print("plan:", [s for s in c.stats()["plan"]][:40])
