"""PyTorch's GPU time for the kernels of bench/profile-kernels.mjs (which starts it).

Reads {"jobs": [{"key", "op", ...}], "minMs", "samples"} as JSON on stdin and prints
{"torch", "device", "results": {key: {"seconds", "min", "reps"}}}: the median over samples of
CUDA-event time around `reps` back-to-back launches, divided by `reps` (kernel time, as the WGSL
side's timestamp queries give it), after a checked run and a warm-up. TF32 is off.
Ops: matmul (m, k, n, batch), relu, mul, a*b+c (n), sum (rows, cols; over the last dim).
"""
import json
import sys

import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def rand(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(*shape, generator=g) * 2 - 1).cuda()


def make(job):
    """The launch function of a job, and its float64 check."""
    op = job["op"]
    if op == "matmul":
        batch = [job["batch"]] if job.get("batch", 1) > 1 else []
        a, b = rand(*batch, job["m"], job["k"], seed=1), rand(*batch, job["k"], job["n"], seed=2)
        return (lambda: torch.matmul(a, b)), (lambda out: (out[..., :8, :].double() - a[..., :8, :].double() @ b.double()).abs().max().item() < 1e-3)
    if op == "sum":
        x = rand(job["rows"], job["cols"], seed=3)
        return (lambda: x.sum(-1)), (lambda out: (out.double() - x.double().sum(-1)).abs().max().item() < 1e-2)
    xs = [rand(job["n"], seed=4 + i) for i in range(3)]
    fn = {"relu": lambda: torch.relu(xs[0]), "mul": lambda: xs[0] * xs[1], "a*b+c": lambda: xs[0] * xs[1] + xs[2]}[op]
    ref = {"relu": lambda: torch.relu(xs[0]), "mul": lambda: xs[0] * xs[1], "a*b+c": lambda: xs[0] * xs[1] + xs[2]}[op]
    return fn, (lambda out: torch.equal(out, ref()))


def gpu_time(fn, min_ms, samples):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def measure(reps):
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / reps

    for _ in range(3):
        measure(1)
    reps = max(1, min(500, int(min_ms / 1e3 / max(measure(1), 1e-7)) + 1))
    secs = sorted(measure(reps) for _ in range(samples))
    return {"seconds": secs[len(secs) // 2], "min": secs[0], "reps": reps}


def main():
    spec = json.load(sys.stdin)
    results = {}
    for job in spec["jobs"]:
        fn, check = make(job)
        out = fn()
        torch.cuda.synchronize()
        if not check(out):
            results[job["key"]] = {"error": "mismatch against float64"}
            continue
        results[job["key"]] = gpu_time(fn, spec.get("minMs", 20), spec.get("samples", 7))
        torch.cuda.empty_cache()
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "results": results}))


if __name__ == "__main__":
    main()
