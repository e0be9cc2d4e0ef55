/**
 * Seed 003, the torch.cuda overview: its "Profiling" example (`torch.profiler.profile` with
 * CPU and CUDA activities, `key_averages().table(sort_by="cuda_time_total", row_limit=10)`) and
 * its "NVTX Markers for Profiling" example, line by line (camelCase, `torch.cuda` as it is (it is
 * `torch.gpu`), `with ... as prof:` as `const prof = await profile(..., () => ...)`).
 * `model`, `input_tensor`, `input` and `loss` are the seed's placeholders: a small MLP, its input
 * and a loss of its output.
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { habitsSetup } from './setup.js';

const { nn } = torch;
habitsSetup();

/** The seed's `model` and `input_tensor`. */
function placeholders() {
  const model = new nn.Sequential(new nn.Linear(10, 16), new nn.ReLU(), new nn.Linear(16, 5)).cuda();
  const inputTensor = torch.randn([4, 10]);
  return { model, inputTensor, input: inputTensor.cuda() };
}

const disposeModel = (model: torch.nn.Module) => model.parameters().forEach((p) => p.dispose());

describe('torch.cuda overview: profiling', () => {
  it('Profiling: profile CPU and CUDA activities with shapes, then the table sorted by cuda_time_total', async () => {
    const { model, inputTensor, input } = placeholders();
    const { profile, ProfilerActivity } = torch.profiler;
    const outputs: torch.Tensor[] = [];

    const prof = await profile({
      activities: [ProfilerActivity.CPU, ProfilerActivity.CUDA],
      recordShapes: true,
    }, (prof) => {
      outputs.push(torch.tidy(() => model(inputTensor.cuda()))); // tidy frees the .cuda() copy

    });

    const table = prof.keyAverages().table({ sortBy: 'cuda_time_total', rowLimit: 10 });
    console.log(table);

    const lines = table.split('\n');
    expect(lines[1]).toMatch(/^ +Name +Self CPU % +Self CPU +CPU total % +CPU total +CPU time avg +Self GPU +Self GPU % +GPU total +GPU time avg +# of Calls {2}$/);
    const rows = lines.slice(3, lines.indexOf(lines[0], 3));
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThanOrEqual(10);
    // Sorted by GPU total, descending, as sort_by="cuda_time_total" asks.
    const gpuTotal = (r: string) => r.trim().split(/ {2,}/)[8];
    const us = (s: string) => parseFloat(s) * (s.endsWith('ms') ? 1e3 : s.endsWith('us') ? 1 : 1e6);
    const totals = rows.map((r) => us(gpuTotal(r)));
    expect(totals).toEqual([...totals].sort((a, b) => b - a));
    // The model's ops are there with their calls: two linear layers, one relu.
    const calls = Object.fromEntries([...prof.keyAverages()].map((r) => [r.key, r.count]));
    expect(calls.linear).toBe(2);
    expect(calls.relu).toBe(1);
    expect(table).toMatch(/Self GPU time total: \d+\.\d{3}(us|ms|s)\n$/);

    outputs.forEach((o) => o.dispose());
    inputTensor.dispose();
    input.dispose();
    disposeModel(model);
  });

  it('NVTX Markers for Profiling: rangePush/rangePop around the forward and the backward pass', async () => {
    const { model, inputTensor, input } = placeholders();
    let output!: torch.Tensor, loss!: torch.Tensor;
    const prof = await torch.profiler.profile({}, () => {
      const nvtx = torch.cuda.nvtx;

      // Add range markers
      nvtx.rangePush('forward pass');
      output = model(input);
      nvtx.rangePop();

      loss = torch.tidy(() => output.square().mean());
      nvtx.rangePush('backward pass');
      loss.backward();
      nvtx.rangePop();
    });

    // The program's ranges, and the backward engine's (PyTorch's names) inside 'backward pass'.
    const ranges = prof.events().ops.filter((e) => e.kind === 'range' && !e.autograd).map((e) => e.name);
    expect(ranges).toEqual(['forward pass', 'backward pass']);
    const all = prof.events().ops, byId = new Map(all.map((e) => [e.id, e]));
    const backwardPass = all.find((e) => e.name === 'backward pass')!;
    const evals = all.filter((e) => e.name.startsWith('autograd::engine::evaluate_function: '));
    // (PyTorch's node for square is PowBackward0; webtorch names a node after its op)
    expect(evals.map((e) => e.name.slice('autograd::engine::evaluate_function: '.length))).toEqual(
      expect.arrayContaining(['MeanBackward0', 'SquareBackward0', 'AddBackward0', 'MmBackward0', 'ReluBackward0']));
    expect(evals.every((e) => e.parent === backwardPass.id)).toBe(true);
    // Each node's ops are inside it, and their kernels are linked to them.
    const mm = all.filter((e) => e.name === 'matmul' && byId.get(e.parent)?.name === 'MmBackward0');
    expect(mm.length).toBe(3); // dW of both layers, dX of the second
    const kernelOps = new Set(prof.events().kernels.map((k) => k.op));
    expect(mm.every((e) => kernelOps.has(e.id))).toBe(true);
    const calls = Object.fromEntries([...prof.keyAverages()].map((r) => [r.key, r.count]));
    expect(calls['forward pass']).toBe(1);
    expect(calls['backward pass']).toBe(1);
    // The forward's linear layers ran inside its range.
    const { ops } = prof.events();
    const forward = ops.find((e) => e.name === 'forward pass')!;
    expect(ops.filter((e) => e.name === 'linear').every((e) => e.parent === forward.id)).toBe(true);

    output.dispose();
    loss.dispose();
    inputTensor.dispose();
    input.dispose();
    model.parameters().forEach((p) => {
      p.grad?.dispose();
      p.dispose();
    });
  });
});
