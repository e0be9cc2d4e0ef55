"""PyTorch's side of bench/amp.mjs on this machine's CPU: the same MLP and CNN steps in float32 and
under CPU autocast (bfloat16) with GradScaler's arithmetic left out (PyTorch 1.13's GradScaler is
CUDA-only), and the 512² matmul in float32 and bfloat16. Run: /usr/bin/python3 bench/amp_torch.py [iters]
"""
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

ITERS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
torch.manual_seed(0)
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

    def step():
        opt.zero_grad()
        with torch.autocast('cpu', dtype=torch.bfloat16, enabled=amp):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    return step


mlp = lambda: nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
cnn = lambda: nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
                            nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 7 * 7, 10))
print('| case | device | mode | per second |\n|---|---|---|---|')
for name, make, x, y in [('MLP step', mlp, torch.randn(64, 784), torch.randint(0, 10, (64,))),
                         ('CNN step', cnn, torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,)))]:
    for amp in (False, True):
        r = rate(trainer(make(), x, y, amp))
        print(f"| {name} | torch cpu | {'AMP bfloat16' if amp else 'float32'} | {r:.3g} |")
for dt in (torch.float32, torch.bfloat16):
    a, b = torch.randn(512, 512).to(dt), torch.randn(512, 512).to(dt)
    r = rate(lambda: (a @ b).sum().item())
    print(f"| matmul 512² | torch cpu | {str(dt).replace('torch.', '')} | {r:.3g} |")
