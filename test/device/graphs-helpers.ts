/**
 * What the graphs suites share (graphs.test.ts, graphs-training.test.ts, and the command counts of
 * loss-dispatches.test.ts and row-dispatches.test.ts, optim-step.test.ts): a graph on a device, capture
 * on it, counting what a capture holds, a small MLP and a batch to train it on, and freeing a model
 * and its optimizer's state.
 */
import * as torch from '../../dist/webtorch.js';

const { nn } = torch;

/** The namespace whose Graph captures on `d` (`torch.cpu` or `torch.gpu`). */
export const ns = (d: string) => (d === 'cpu' ? torch.cpu : torch.gpu);
/** Runs `fn` with `d` as the current GPU (graphs capture on the current device). */
export const on = <T>(d: string, fn: () => T): T => (d === 'cpu' ? fn() : torch.gpu.withDevice(d, fn));
export const newGraph = (d: string) => on(d, () => new (ns(d).Graph)());
export const capture = <T>(d: string, g: torch.gpu.Graph, fn: () => T | Promise<T>, options: torch.gpu.GraphOptions = {}) => on(d, () => ns(d).graph(g, fn, options));

/** What a graph captured around `fn` on `d` (unfused, so that a count is each op's own): commands, and the dispatches a replay makes. The graph is reset. */
export async function counted(d: string, fn: () => void): Promise<{ commands: number; dispatches: number }> {
  const g = newGraph(d);
  await capture(d, g, fn, { fuse: false });
  const info = await g.info();
  g.reset();
  return info;
}

/** A batch of 16 × 8 inputs and 4-class targets on `d`, the cross-entropy loss of a model on it, and one eager training step. */
export function batchOn(d: string) {
  const X = torch.randn([16, 8], { device: d }), Y = torch.randint(0, 4, [16], { device: d });
  const lossFn = new nn.CrossEntropyLoss();
  const loss = (m: torch.nn.Module) => torch.tidy(() => lossFn.call(m.call(X), Y));
  const step = (m: torch.nn.Module, o: torch.optim.Optimizer) => {
    o.zeroGrad();
    const l = loss(m);
    l.backward();
    o.step();
    l.dispose();
  };
  return { X, Y, loss, step, dispose: () => [X, Y].forEach((t) => t.dispose()) };
}

export const mlp = (d: string) => {
  torch.manualSeed(0);
  return new nn.Sequential(new nn.Linear(8, 16), new nn.ReLU(), new nn.Linear(16, 4)).to(d);
};

/** Disposes a model's parameters and gradients and an optimizer's state tensors. */
export function free(model: torch.nn.Module, opt?: torch.optim.Optimizer): void {
  for (const p of model.parameters()) {
    p.grad?.dispose();
    p.dispose();
  }
  for (const s of opt?.state.values() ?? []) for (const v of Object.values(s)) if (typeof v === 'object') v.dispose();
}

export async function values(ts: Iterable<torch.Tensor>): Promise<number[]> {
  const out: number[] = [];
  for (const t of ts) out.push(...(await t.data()));
  return out;
}
