"""PyTorch's side of bench/models.mjs: loads the initial weights and batch webtorch saved (torch.save,
PyTorch's .pt format), checks that the first losses match webtorch's, and times the same training
steps on CUDA (or the CPU), eager or under autocast (bfloat16).

    python3 bench/models_torch.py --model gpt|resnet18 [--amp] [--graph] [--steps 20] [--warmup 5] [--dir DIR] [--expect LOSSES_JSON]
prints one JSON line like bench/models.mjs's; with --expect (webtorch's line) it also reports the
largest difference of the first losses relative to the first, and exits 3 if it is over 1e-3 (2e-2 under autocast).
Under torchrun (WORLD_SIZE set) each rank wraps the model in DistributedDataParallel (NCCL) on
cuda:LOCAL_RANK and trains the same batch, as bench/models.mjs's ranks do; rank 0 prints.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import GPT, resnet18  # noqa: E402

GPT_CFG = dict(block_size=256, vocab_size=65, n_layer=6, n_head=6, n_embd=384, dropout=0.0, bias=False)

p = argparse.ArgumentParser()
p.add_argument('--model', default='gpt')
p.add_argument('--amp', action='store_true')
p.add_argument('--graph', action='store_true')
p.add_argument('--steps', type=int, default=20)
p.add_argument('--warmup', type=int, default=5)
p.add_argument('--dir', default=os.path.join(tempfile.gettempdir(), 'webtorch-models'))
p.add_argument('--expect')
a = p.parse_args()
dev = 'cuda' if torch.cuda.is_available() else 'cpu'
world = int(os.environ.get('WORLD_SIZE', '0'))
rank = 0
if world:
    if a.graph:
        sys.exit('models_torch.py: --graph with DDP ranks is not measured here')
    dev = f"cuda:{os.environ.get('LOCAL_RANK', '0')}"
    torch.cuda.set_device(dev)
    torch.distributed.init_process_group('nccl')
    rank = torch.distributed.get_rank()
torch.backends.cuda.matmul.allow_tf32 = False  # webtorch's float32 products are full float32
torch.backends.cudnn.allow_tf32 = False
sd = torch.load(os.path.join(a.dir, f'{a.model}-init.pt'), map_location=dev)
batch = torch.load(os.path.join(a.dir, f'{a.model}-batch.pt'), map_location=dev)
if a.model == 'gpt':
    model = GPT(GPT_CFG).to(dev)
    decay = [q for q in model.parameters() if q.dim() >= 2]
    no_decay = [q for q in model.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{'params': decay, 'weight_decay': 0.1}, {'params': no_decay, 'weight_decay': 0.0}], lr=1e-3, betas=(0.9, 0.99), capturable=a.graph)
    forward = lambda: net(batch['x'], batch['y'])  # noqa: E731
    unit, per_step, clip = 'tokens/s', batch['x'].numel(), 1.0
else:
    model = resnet18(num_classes=10).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    forward = lambda: F.cross_entropy(net(batch['x']), batch['y'])  # noqa: E731
    unit, per_step, clip = 'images/s', batch['x'].shape[0], 0
model.load_state_dict(sd)
model.train()
net = torch.nn.parallel.DistributedDataParallel(model, device_ids=[torch.cuda.current_device()]) if world else model


def update():
    if a.amp:
        with torch.autocast(dev, dtype=torch.bfloat16):
            loss = forward()
    else:
        loss = forward()
    loss.backward()
    if clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()
    return loss


def step():
    loss = update()
    opt.zero_grad(set_to_none=True)
    return loss


losses = [step().item() for _ in range(3)]
for _ in range(a.warmup):
    step()
if dev.startswith('cuda'):
    torch.cuda.synchronize()
if a.graph:
    # the whole-step recipe of PyTorch's CUDA graphs notes: warm up on a side stream, capture with the gradients unset
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        loss = update()
    g.replay()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        g.replay()
    last_loss = loss.item()
else:
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    last_loss = loss.item()
seconds = time.perf_counter() - t0
gpu = dev.startswith('cuda')
out = {'impl': 'torch ' + torch.__version__, 'model': a.model, 'device': torch.cuda.get_device_name() if gpu else 'cpu', 'amp': a.amp,
       'graph': a.graph, 'world': world or 1, 'losses': losses, 'lastLoss': last_loss, 'steps': a.steps, 'stepsPerSec': a.steps / seconds,
       unit: (world or 1) * a.steps * per_step / seconds, 'peakMiB': torch.cuda.max_memory_allocated() / 2 ** 20 if gpu else None}
code = 0
if a.expect:
    theirs = json.loads(a.expect)['losses']
    # differences relative to the first loss: later losses can be small, and a step amplifies float rounding
    worst = max(abs(x - y) for x, y in zip(losses, theirs)) / max(abs(theirs[0]), 1e-6)
    out['lossesAgree'] = worst
    code = 3 if worst > (2e-2 if a.amp else 1e-3) else 0
if world:
    torch.distributed.destroy_process_group()
if rank == 0:
    print(json.dumps(out))
sys.exit(code)
