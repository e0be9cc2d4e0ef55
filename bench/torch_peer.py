"""PyTorch peer of webtorch's benchmark suite (bench/run.mjs starts it; it is not run by hand).

Reads {"budget": {...}, "jobs": [{"key", "op", ...params}]} as JSON on stdin, runs each job on CUDA
when there is one (TF32 off) and otherwise on the CPU, and prints one JSON object: the device, and
for each key the median seconds of one iteration, timed like the JS side: a checked run, warm-up,
then samples of `inner` iterations around a sync point (torch.cuda.synchronize, or a read).
Inputs are uniform in [-1, 1); each result is checked against float64 before timing.
"""
import copy
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

CUDA = torch.cuda.is_available() and os.environ.get("WEBTORCH_BENCH_TORCH_DEVICE", "") != "cpu"
DEV = torch.device("cuda:0" if CUDA else "cpu")
if CUDA:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
elif os.environ.get("WEBTORCH_BENCH_TORCH_THREADS"):
    torch.set_num_threads(int(os.environ["WEBTORCH_BENCH_TORCH_THREADS"]))


def sync():
    if CUDA:
        torch.cuda.synchronize()


def rand(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(*shape, generator=g) * 2 - 1).to(DEV)


def close(out, ref, rtol, atol):
    out, ref = out.double().cpu(), ref.double().cpu()
    err = (out - ref).abs() - (atol + rtol * ref.abs())
    if err.max().item() > 0:
        i = int(err.flatten().argmax())
        return "mismatch at %d: got %r, expected %r" % (i, out.flatten()[i].item(), ref.flatten()[i].item())
    return None


class Job:
    """launch() queues one iteration; read() is the sync point; check() validates the last result."""

    inner = None
    last = None

    def read(self):
        sync()

    def check(self):
        return None


def matmul(b, m, k, n):
    j = Job()
    a = rand(*([b] if b > 1 else []), m, k, seed=1)
    w = rand(*([b] if b > 1 else []), k, n, seed=2)
    j.launch = lambda: setattr(j, "last", torch.matmul(a, w))

    def check():
        rows = slice(0, min(m, 16))  # a few rows in float64 on the CPU
        ref = torch.matmul(a[..., rows, :].double().cpu(), w.double().cpu())
        absref = torch.matmul(a[..., rows, :].double().abs().cpu(), w.double().abs().cpu())
        err = (j.last[..., rows, :].double().cpu() - ref).abs() - (1e-5 * absref + 1e-6)
        return None if err.max().item() <= 0 else "matmul mismatch (max excess %g)" % err.max().item()

    j.check = check
    return j


def unary_like(fn, ref_fn, n=None, shape=None, rtol=1e-5, atol=1e-6, inputs=1, scale=1):
    j = Job()
    xs = [rand(*(shape or (n,)), seed=11 + i) * scale for i in range(inputs)]
    j.launch = lambda: setattr(j, "last", fn(*xs))
    j.check = lambda: close(j.last, ref_fn(*[x.double() for x in xs]), rtol, atol)
    return j


def softmax_composed(x):
    e = (x - x.max(-1, keepdim=True).values).exp()
    return e / e.sum(-1, keepdim=True)


def chain_add(n, ops):
    j = Job()
    x = torch.ones(n, device=DEV)
    j.inner = 1

    def launch():
        y = x
        for _ in range(ops):
            y = y + x
        j.pending = y

    j.launch = launch
    j.read = lambda: setattr(j, "last", j.pending.cpu().numpy())
    j.check = lambda: None if (j.last == ops + 1).all() else "chain result %r" % j.last
    return j


def roundtrip(n):
    j = Job()
    x = torch.ones(n, device=DEV)
    j.inner = 1
    j.launch = lambda: setattr(j, "pending", x + 1)
    j.read = lambda: setattr(j, "last", j.pending.cpu().numpy())
    j.check = lambda: None if (j.last == 2).all() else "round trip result %r" % j.last
    return j


def h2d(n):
    if not CUDA:
        return None
    j = Job()
    host = (torch.rand(n, generator=torch.Generator().manual_seed(41)) * 2 - 1).numpy()
    j.inner = 1
    j.launch = lambda: setattr(j, "last", torch.from_numpy(host).to(DEV))
    j.check = lambda: None if (j.last.cpu().numpy() == host).all() else "h2d mismatch"
    return j


def h2d_pinned(n):
    if not CUDA:
        return None
    j = Job()
    host = (torch.rand(n, generator=torch.Generator().manual_seed(41)) * 2 - 1).pin_memory()
    j.inner = 1
    j.launch = lambda: setattr(j, "last", host.to(DEV, non_blocking=True))
    j.check = lambda: None if (j.last.cpu() == host).all() else "h2d_pinned mismatch"
    return j


def d2h_pinned(n):
    if not CUDA:
        return None
    j = Job()
    x = rand(n, seed=41)
    out = torch.empty(n, pin_memory=True)
    j.inner = 1
    j.launch = lambda: out.copy_(x, non_blocking=True)
    j.check = lambda: None if (out == x.cpu()).all() else "d2h_pinned mismatch"
    return j


def overlap(mode, n, m, steps):
    if not CUDA:
        return None
    j = Job()
    host = (torch.rand(n, generator=torch.Generator().manual_seed(43)) * 2 - 1).pin_memory()
    a = rand(m, m, seed=3) / m
    side = torch.cuda.Stream()
    j.inner = 1

    def launch():
        if mode != "compute":
            with torch.cuda.stream(side):
                j.copied = host.to(DEV, non_blocking=True)
        if mode != "copy":
            y = a
            for _ in range(steps):
                y = y @ a
            j.last = y

    j.launch = launch
    j.check = lambda: None if mode == "compute" or (j.copied.cpu() == host).all() else "overlap copy mismatch"
    return j


def d2h(n):
    if not CUDA:
        return None
    j = Job()
    x = rand(n, seed=41)
    j.inner = 1
    j.launch = lambda: setattr(j, "pending", x)
    j.read = lambda: setattr(j, "last", j.pending.cpu().numpy())
    j.check = lambda: None if (j.last == x.cpu().numpy()).all() else "d2h mismatch"
    return j


def conv2d(n, c, h, w, k):
    j = Job()
    x = rand(n, c, h, w, seed=61)
    wt = rand(k, c, 3, 3, seed=62) / (c * 9) ** 0.5
    j.launch = lambda: setattr(j, "last", F.conv2d(x, wt, padding=1))

    def check():
        ref = F.conv2d(x.double(), wt.double(), padding=1)
        bound = F.conv2d(x.double().abs(), wt.double().abs(), padding=1)
        err = (j.last.double() - ref).abs() - (1e-5 * bound + 1e-6)
        return None if err.max().item() <= 0 else "conv2d mismatch (max excess %g)" % err.max().item()

    j.check = check
    return j


def train_job(model, x, y, lr):
    """One SGD step of `model` on (x, y) with cross-entropy; checked against a float64 copy."""
    j = Job()
    ref = copy.deepcopy(model).double()
    opt = torch.optim.SGD(model.parameters(), lr=lr)

    def launch():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        j.last = loss

    def check():
        loss = F.cross_entropy(ref(x.double()), y)
        loss.backward()
        if abs(j.last.item() - loss.item()) > 1e-4 * abs(loss.item()) + 1e-6:
            return "loss %r, expected %r" % (j.last.item(), loss.item())
        for p, q in zip(model.parameters(), ref.parameters()):
            if (p.grad.double() - q.grad).abs().max().item() > 1e-3 * q.grad.abs().max().item() + 1e-7:
                return "gradient mismatch"
        return None

    j.launch = launch
    j.check = check
    return j


def graph_train_job(model, x, y, lr):
    """train_job's step captured once with torch.cuda.graph (PyTorch's whole-network capture) and
    replayed: warm-up steps on a side stream, then capture; the weights are put back to where they
    started (in place: the graph reads them), so the checked replay is the first step. None on the CPU."""
    if not CUDA:
        return None
    j = train_job(model, x, y, lr)
    start = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        static_loss = F.cross_entropy(model(x), y)
        static_loss.backward()
        opt.step()
    with torch.no_grad():
        for p, v in zip(model.parameters(), start):
            p.copy_(v)

    def launch():
        g.replay()
        j.last = static_loss

    j.launch = launch
    return j


def chain_add_graph(n, ops):
    """chain_add captured once and replayed (None on the CPU)."""
    if not CUDA:
        return None
    j = chain_add(n, ops)
    x = torch.ones(n, device=DEV)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = x
        for _ in range(ops):
            y = y + x
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x
        for _ in range(ops):
            y = y + x
    static = y

    def launch():
        g.replay()
        j.pending = static

    j.launch = launch
    return j


def mlp_train(b, din, h, dout, lr, graph=False):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(din, h), torch.nn.ReLU(), torch.nn.Linear(h, h), torch.nn.ReLU(), torch.nn.Linear(h, dout)
    ).to(DEV)
    g = torch.Generator().manual_seed(80)
    x = torch.rand(b, din, generator=g).to(DEV)
    y = torch.randint(0, dout, (b,), generator=g).to(DEV)
    return (graph_train_job if graph else train_job)(model, x, y, lr)


def cnn_train(b, lr, graph=False):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(16 * 7 * 7, 10),
    ).to(DEV)
    g = torch.Generator().manual_seed(96)
    x = torch.rand(b, 1, 28, 28, generator=g).to(DEV)
    y = torch.randint(0, 10, (b,), generator=g).to(DEV)
    return (graph_train_job if graph else train_job)(model, x, y, lr)


def draw(fn, n, lo, hi, mean, std):
    """rand/randn: n numbers per iteration, checked by range and moments."""
    j = Job()
    j.launch = lambda: setattr(j, "last", fn(n, device=DEV))

    def check():
        x = j.last.double().cpu()
        if x.numel() != n or x.min().item() < lo or x.max().item() >= hi:
            return "values outside [%g, %g)" % (lo, hi)
        if abs(x.mean().item() - mean) > 0.01 or abs(x.std().item() - std) > 0.01:
            return "mean %g std %g" % (x.mean().item(), x.std().item())
        return None

    j.check = check
    return j


def alloc(n, count):
    j = Job()

    def launch():
        for _ in range(count):
            t = torch.empty(n, device=DEV)
            del t

    j.launch = launch
    return j


OPS = {
    "matmul": lambda p: matmul(p["b"], p["m"], p["k"], p["n"]),
    "mul_add": lambda p: unary_like(lambda a, b, c: a * b + c, lambda a, b, c: a * b + c, n=p["n"], inputs=3),
    "relu": lambda p: unary_like(torch.relu, torch.relu, n=p["n"], rtol=0, atol=0),
    "sum_last": lambda p: unary_like(lambda x: x.sum(-1), lambda x: x.sum(-1), shape=(p["r"], p["c"]), atol=1e-5 * p["c"] ** 0.5),
    "softmax": lambda p: unary_like(lambda x: torch.softmax(x, -1), lambda x: torch.softmax(x, -1), shape=(p["r"], p["c"]), atol=1e-7, scale=4),
    "softmax_composed": lambda p: unary_like(softmax_composed, lambda x: torch.softmax(x, -1), shape=(p["r"], p["c"]), atol=1e-7, scale=4),
    "chain_add": lambda p: chain_add(p["n"], p["ops"]),
    "roundtrip": lambda p: roundtrip(p["n"]),
    "h2d": lambda p: h2d(p["n"]),
    "d2h": lambda p: d2h(p["n"]),
    "overlap": lambda p: overlap(p["mode"], p["n"], p["m"], p["steps"]),
    "h2d_pinned": lambda p: h2d_pinned(p["n"]),
    "d2h_pinned": lambda p: d2h_pinned(p["n"]),
    "clone": lambda p: unary_like(lambda x: x.clone(), lambda x: x, n=p["n"], rtol=0, atol=0),
    "alloc": lambda p: alloc(p["n"], p["count"]),
    "rand": lambda p: draw(torch.rand, p["n"], 0, 1, 0.5, (1 / 12) ** 0.5),
    "randn": lambda p: draw(torch.randn, p["n"], -math.inf, math.inf, 0, 1),
    "layer_norm": lambda p: unary_like(lambda x: F.layer_norm(x, (p["c"],)), lambda x: F.layer_norm(x, (p["c"],)), shape=(p["r"], p["c"]), rtol=1e-4, atol=1e-5, scale=2),
    "conv2d": lambda p: conv2d(p["n"], p["c"], p["h"], p["w"], p["k"]),
    "mlp_train": lambda p: mlp_train(p["b"], p["din"], p["h"], p["dout"], p["lr"]),
    "cnn_train": lambda p: cnn_train(p["b"], p["lr"]),
    # graphs (bench/cases/graphs.mjs): the same, captured with torch.cuda.graph and replayed
    "mlp_train_graph": lambda p: mlp_train(p["b"], p["din"], p["h"], p["dout"], p["lr"], graph=True),
    "cnn_train_graph": lambda p: cnn_train(p["b"], p["lr"], graph=True),
    "chain_add_graph": lambda p: chain_add_graph(p["n"], p["ops"]),
}


def measure(job, budget):
    job.launch()
    job.read()
    why = job.check()
    if why:
        return {"error": "wrong result: " + why}
    # `inner` from the median warm-up sample, as bench/lib/harness.mjs does (one slow spell must not set it)
    warm = []
    w0 = time.perf_counter()
    i = 0
    while i < budget["warmup"] or ((time.perf_counter() - w0) * 1e3 < budget["warmupMs"] and i < 10000):
        t0 = time.perf_counter()
        job.launch()
        job.read()
        warm.append((time.perf_counter() - t0) * 1e3)
        i += 1
    last = statistics.median(warm[1:] if len(warm) > 1 else warm) if warm else budget["sampleMs"]
    inner = job.inner or max(1, min(budget["maxInner"], int(budget["sampleMs"] / max(last, 1e-3))))
    # then grow `inner` until a trial sample lasts `sampleMs`, as bench/lib/harness.mjs does
    trial = 0
    while not job.inner and trial < 3 and inner < budget["maxInner"]:
        t0 = time.perf_counter()
        for _ in range(inner):
            job.launch()
        job.read()
        ms = (time.perf_counter() - t0) * 1e3
        if ms >= 0.8 * budget["sampleMs"]:
            break
        inner = min(budget["maxInner"], math.ceil(inner * budget["sampleMs"] / max(ms, 1e-3)))
        trial += 1
    samples = []
    start = time.perf_counter()
    while len(samples) < budget["minSamples"] or (
        len(samples) < budget["maxSamples"] and (time.perf_counter() - start) * 1e3 < budget["budgetMs"]
    ):
        t0 = time.perf_counter()
        for _ in range(inner):
            job.launch()
        job.read()
        samples.append((time.perf_counter() - t0) / inner)
    return {"seconds": statistics.median(samples), "samples": len(samples), "inner": inner, "min": min(samples)}


def main():
    spec = json.load(sys.stdin)
    name = torch.cuda.get_device_name(0) if CUDA else "cpu"
    out = {
        "torch": torch.__version__,
        "device": "cuda" if CUDA else "cpu",
        "deviceName": name,
        "threads": torch.get_num_threads(),
        "tf32": False if CUDA else None,
        "blas": next((w.split("=")[1] for w in torch.__config__.show().replace(",", " ").split() if w.startswith("BLAS_INFO=")), None),
        "results": {},
    }
    for job in spec["jobs"]:
        try:
            j = OPS[job["op"]](job)
            budget = dict(spec["budget"], warmupMs=max(spec["budget"]["warmupMs"], job.get("warmupMs", 0)))
            out["results"][job["key"]] = {"skipped": "no CUDA"} if j is None else measure(j, budget)
        except Exception as e:  # a failing case is reported, not fatal
            out["results"][job["key"]] = {"error": ("%s: %s" % (type(e).__name__, e))[:300]}
        finally:
            if CUDA:
                torch.cuda.empty_cache()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
