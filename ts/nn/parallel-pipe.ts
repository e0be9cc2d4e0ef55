/**
 * `nn.parallel.Pipe`: GPipe's pipeline schedule for a model split over devices (PyTorch's
 * `torch.distributed.pipeline.sync.Pipe(module, chunks)`): the batch is cut into `chunks`
 * micro-batches, and each runs through the stages (the runs of consecutive children on one
 * device), the activation moved to the next stage's device in between; the outputs are joined on
 * the last stage's device.
 *
 * Why issuing in plain order pipelines: an op only queues a command on its device, so the calling
 * thread issues every micro-batch's work long before the devices run it. gpu:0's queue holds
 * micro-batch 0, 1, 2 … of stage 0 back to back; gpu:1's holds each micro-batch's stage 1, which
 * starts as soon as that micro-batch's activation arrives, while gpu:0 is already on the next one.
 * Without micro-batches gpu:1 would wait for the whole batch. Backward runs the same way in
 * reverse (autograd carries each micro-batch's gradient back through its `to()`), and each
 * parameter's gradient is the sum over micro-batches: the same as the whole batch up to rounding.
 */
import { checkOptions } from '../args.js';
import { tidy } from '../ops/scoped.js';
import { cat, chunk } from '../ops/shape.js';
import { to } from '../ops/copy.js';
import type { Device } from '../device.js';
import { Tensor } from '../tensor.js';
import { Module } from './module.js';
import { Sequential } from './layers.js';

/** `Pipe`'s options. */
export interface PipeOptions {
  /** Micro-batches per batch (default 1: no pipelining). */
  chunks?: number;
}

/** The device of a module's first parameter or buffer, or null for a module with none. */
function deviceOfModule(m: Module): Device | null {
  const t = m.parameters()[0] ?? m.buffers()[0];
  return t ? t.device : null;
}

/**
 * `new nn.parallel.Pipe(sequential, {chunks})`: `sequential`'s children, already placed on their
 * devices, run as a pipeline of micro-batches. Children without parameters join the stage before
 * them. The input may be on any device; the output is on the last stage's device.
 */
export class Pipe extends Module {
  module!: Sequential;
  readonly chunks: number;
  /** The stages: each a device and its children, in order. */
  readonly stages: { device: Device; modules: Module[] }[] = [];

  constructor(module: Sequential, options: PipeOptions = {}) {
    super();
    checkOptions('Pipe', options, ['chunks']);
    if (!(module instanceof Sequential)) throw new TypeError(`Pipe: module must be an nn.Sequential whose children are placed on their devices, got ${(module as { constructor?: { name?: string } } | null)?.constructor?.name ?? typeof module}`);
    const chunks = options.chunks ?? 1;
    if (!Number.isInteger(chunks) || chunks < 1) throw new RangeError(`Pipe: number of chunks must be positive integer, got ${String(options.chunks)}`);
    this.chunks = chunks;
    this.registerModule('module', module);
    for (const m of module.children()) {
      const own = [...m.parameters(), ...m.buffers()];
      const dev = deviceOfModule(m);
      if (own.some((t) => t.device !== dev)) throw new RangeError(`Pipe: each child must be on one device, but ${m.constructor.name} has tensors on ${[...new Set(own.map((t) => String(t.device)))].join(' and ')}`);
      const last = this.stages[this.stages.length - 1];
      if (dev === null || (last && last.device === dev)) {
        if (!last) throw new RangeError('Pipe: the first child must have parameters (it decides the first stage\'s device)');
        last.modules.push(m);
      } else this.stages.push({ device: dev, modules: [m] });
    }
    if (!this.stages.length) throw new RangeError('Pipe: the module has no children with parameters');
  }

  /** The output of the whole batch, on the last stage's device (differentiable). */
  forward(x: Tensor): Tensor {
    if (!(x instanceof Tensor)) throw new TypeError(`Pipe.forward: expected a tensor, got ${typeof x}`);
    if (x.ndim === 0) throw new RangeError('Pipe.forward: the input needs a batch dimension (dim 0)');
    return tidy(() => {
      const micro = chunk(x, Math.min(this.chunks, Math.max(1, x.shape[0])), 0);
      const outs = micro.map((mb) => {
        let h = mb;
        for (const s of this.stages) {
          h = to(h, s.device);
          for (const m of s.modules) h = (m as unknown as (t: Tensor) => Tensor)(h);
        }
        return h;
      });
      return outs.length === 1 ? outs[0] : cat(outs, 0);
    });
  }
}
