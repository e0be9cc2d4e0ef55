"""PyTorch's side of bench/amp.mjs: the same MLP and CNN steps in float32 and under autocast, and
the 512² matmul in float32 and the low dtype. On the CPU: bfloat16 autocast without GradScaler
(PyTorch 1.13's GradScaler is CUDA-only); on CUDA: float16 autocast with GradScaler.
Run: /usr/bin/python3 bench/amp_torch.py [iters] [cpu|cuda]
"""
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

ITERS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
DEV = sys.argv[2] if len(sys.argv) > 2 else 'cpu'
LOW = torch.float16 if DEV == 'cuda' else torch.bfloat16
torch.manual_seed(0)
if DEV == 'cpu':
    torch.set_num_threads(2)  # this machine's cores


def rate(step, warm=5):
    for _ in range(warm):
        step()
    t0 = time.perf_counter()
    for _ in range(ITERS):
        step()
    return ITERS / (time.perf_counter() - t0)


def trainer(model, x, y, amp):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.cuda.amp.GradScaler(enabled=amp and DEV == 'cuda')

    def step():
        opt.zero_grad()
        with torch.autocast(DEV, dtype=LOW, enabled=amp):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss.item()
    return step


mlp = lambda: nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
cnn = lambda: nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
                            nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 7 * 7, 10))
print('| case | device | mode | per second |\n|---|---|---|---|')
for name, make, x, y in [('MLP step', mlp, torch.randn(64, 784), torch.randint(0, 10, (64,))),
                         ('CNN step', cnn, torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,)))]:
    for amp in (False, True):
        r = rate(trainer(make().to(DEV), x.to(DEV), y.to(DEV), amp))
        print(f"| {name} | torch {DEV} | {'AMP ' + str(LOW).replace('torch.', '') if amp else 'float32'} | {r:.3g} |")
for dt in (torch.float32, LOW):
    a, b = torch.randn(512, 512, device=DEV).to(dt), torch.randn(512, 512, device=DEV).to(dt)
    r = rate(lambda: (a @ b).sum().item())
    print(f"| matmul 512² | torch {DEV} | {str(dt).replace('torch.', '')} | {r:.3g} |")
