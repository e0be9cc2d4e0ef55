/**
 * Layers built on the functional ops: `Linear`, `LazyLinear`, the activations, `Flatten`, and
 * the containers `Sequential`, `ModuleList`, `ModuleDict`.
 *
 * Initialisation follows PyTorch's defaults: weights and biases of `Linear` are uniform in
 * ±1/√fan_in (what `kaiming_uniform_(a=√5)` amounts to), drawn on the host from the default
 * generator, so `torch.manualSeed` makes a model's initial weights reproducible.
 */
import { CPU } from '../device.js';
import { defaultGenerator } from '../random.js';
import { fromHost } from '../ops/creation.js';
import { unaryOp, gelu } from '../ops/elementwise.js';
import { linear } from '../ops/nn.js';
import { inPlace } from '../ops/inplace.js';
import { flatten } from '../ops/views.js';
import type { Tensor } from '../tensor.js';
import { bindArgs, type PyArgs } from '../args.js';
import { Module, Parameter, type FactoryOptions } from './module.js';

/** A parameter with values uniform in [-bound, bound) on the CPU. */
export function uniformParameter(shape: number[], bound: number): Parameter {
  const u = defaultGenerator.uniform(shape.reduce((a, b) => a * b, 1));
  for (let i = 0; i < u.length; i++) u[i] = (u[i] * 2 - 1) * bound;
  const t = fromHost(u, shape, 'float32', CPU);
  const p = Parameter.of(t);
  t.dispose();
  return p;
}

/**
 * A convolution layer's weight and bias (`weightShape` in the layer's own order), uniform in
 * ±1/√fan_in as PyTorch initialises them, registered on `m`; `fanIn` is per output channel.
 */
export function convParameters(m: Module, weightShape: number[], fanIn: number, outChannels: number, bias: boolean): [Parameter, Parameter | null] {
  const bound = fanIn > 0 ? 1 / Math.sqrt(fanIn) : 0;
  const w = uniformParameter(weightShape, bound), b = bias ? uniformParameter([outChannels], bound) : null;
  m.registerParameter('weight', w);
  m.registerParameter('bias', b);
  return [w, b];
}

/** Options of `nn.Linear` after the feature counts. */
export interface LinearOptions extends FactoryOptions {
  bias?: boolean;
}

/** `nn.Linear(inFeatures, outFeatures, bias = true, {device, dtype})`. */
export class Linear extends Module {
  weight: Parameter;
  bias: Parameter | null;

  constructor(readonly inFeatures: number, readonly outFeatures: number, ...args: PyArgs<[bias: boolean, device: FactoryOptions['device'], dtype: FactoryOptions['dtype']], LinearOptions>) {
    super();
    const options = bindArgs('Linear', ['bias', 'device', 'dtype'], args, { bias: true } as LinearOptions, 2);
    if (!Number.isInteger(inFeatures) || !Number.isInteger(outFeatures) || inFeatures < 0 || outFeatures < 0) {
      throw new RangeError(`Linear: in_features and out_features must be non-negative integers, got ${inFeatures} and ${outFeatures}`);
    }
    const bound = inFeatures > 0 ? 1 / Math.sqrt(inFeatures) : 0;
    this.weight = uniformParameter([outFeatures, inFeatures], bound);
    this.bias = options.bias === false ? null : uniformParameter([outFeatures], bound);
    this.registerParameter('weight', this.weight);
    this.registerParameter('bias', this.bias);
    this.place(options);
  }

  forward(x: Tensor): Tensor {
    const last = x.shape[x.ndim - 1];
    if (last !== this.inFeatures) {
      throw new RangeError(`Linear: mat1 and mat2 shapes cannot be multiplied (input [${x.shape.join(', ')}] has ${last} features, the layer expects ${this.inFeatures})`);
    }
    return linear(x, this.weight, this.bias);
  }
}

/** `nn.LazyLinear(outFeatures, bias = true)`: infers `inFeatures` from the first input, on that input's device. */
export class LazyLinear extends Module {
  weight: Parameter | null = null;
  bias: Parameter | null = null;
  inFeatures = 0;
  private readonly options: { bias: boolean };

  constructor(readonly outFeatures: number, ...args: PyArgs<[bias: boolean], { bias?: boolean }>) {
    super();
    this.options = bindArgs('LazyLinear', ['bias'], args, { bias: true }, 1);
    this.registerParameter('weight', null);
    this.registerParameter('bias', null);
  }

  forward(x: Tensor): Tensor {
    if (!this.weight) {
      const real = new Linear(x.shape[x.ndim - 1], this.outFeatures, this.options).to(x.device);
      this.inFeatures = real.inFeatures;
      this.registerParameter('weight', real.weight);
      this.registerParameter('bias', real.bias);
    }
    return linear(x, this.weight!, this.bias);
  }
}

/**
 * A layer around a one-input table op. With `inplace` (torchvision's `nn.ReLU(inplace=True)`)
 * the result is written back into the input, which it returns, as PyTorch does; autograd and
 * the version counter follow the in-place ops' rules (ts/ops/inplace.ts).
 */
abstract class Activation extends Module {
  readonly inplace: boolean;
  constructor(...args: PyArgs<[inplace: boolean], { inplace?: boolean }>) {
    super();
    this.inplace = bindArgs(new.target.name, ['inplace'], args, { inplace: false }).inplace;
  }

  protected abstract readonly op: string;

  forward(x: Tensor): Tensor {
    return this.inplace ? inPlace(`${this.op}_`, x, (src) => unaryOp(this.op, src)) : unaryOp(this.op, x);
  }
}

/** `nn.ReLU()`. */
export class ReLU extends Activation {
  protected readonly op = 'relu';
}

/** `nn.SiLU()`. */
export class SiLU extends Activation {
  protected readonly op = 'silu';
}

/** `nn.Tanh()`. */
export class Tanh extends Activation {
  protected readonly op = 'tanh';
}

/** `nn.Sigmoid()`. */
export class Sigmoid extends Activation {
  protected readonly op = 'sigmoid';
}

/** `nn.GELU(approximate = 'none')`. */
export class GELU extends Module {
  readonly approximate: 'none' | 'tanh';

  constructor(...args: PyArgs<[approximate: 'none' | 'tanh'], { approximate?: 'none' | 'tanh' }>) {
    super();
    this.approximate = bindArgs('GELU', ['approximate'], args, { approximate: 'none' as 'none' | 'tanh' }).approximate;
    if (this.approximate !== 'none' && this.approximate !== 'tanh') throw new RangeError(`GELU: approximate must be 'none' or 'tanh', got ${String(this.approximate)}`);
  }

  forward(x: Tensor): Tensor {
    return gelu(x, { approximate: this.approximate });
  }
}

/** `nn.Flatten(startDim = 1, endDim = -1)`. */
export class Flatten extends Module {
  readonly startDim: number;
  readonly endDim: number;

  constructor(...args: PyArgs<[startDim: number, endDim: number], { startDim?: number; endDim?: number }>) {
    super();
    ({ startDim: this.startDim, endDim: this.endDim } = bindArgs('Flatten', ['startDim', 'endDim'], args, { startDim: 1, endDim: -1 }));
  }

  forward(x: Tensor): Tensor {
    return flatten(x, this.startDim, this.endDim);
  }
}

/** An integer property key (`'0'`, `'-1'`), as `net[0]` and `net[-1]` pass it, else null. */
const indexKey = (key: string | symbol): number | null => {
  if (typeof key !== 'string') return null;
  // Most keys a module's code reads are names: one character code tells them apart before the pattern.
  const c = key.charCodeAt(0);
  if (c !== 45 && (c < 48 || c > 57)) return null;
  return /^-?(0|[1-9]\d*)$/.test(key) ? Number(key) : null;
};

/**
 * Containers whose submodules are numbered in order: `net[0]`, `net[-1]` (PyTorch's indexing;
 * `at(i)` too) and `length`. The constructor returns a Proxy over the module so that an integer
 * key reads (or, assigned a module, replaces) the submodule at that position, negative ones
 * counting from the end; outside `[-length, length)` it raises PyTorch's IndexError wording.
 * Every other key, and calling the module, go to the module itself.
 */
abstract class IndexedModules extends Module {
  /** `net[i]`: the i-th submodule (negative counts from the end). */
  [index: number]: Module;

  /** `for (const m of net)`: the submodules in order (Python iterates a Sequential and a ModuleList so). */
  [Symbol.iterator](): Iterator<Module> {
    return this.children();
  }

  constructor() {
    super();
    return new Proxy(this, {
      get: (target, key, receiver) => {
        const i = indexKey(key);
        return i === null ? Reflect.get(target, key, receiver) : target.childAt(i);
      },
      set: (target, key, value, receiver) => {
        const i = indexKey(key);
        if (i !== null && value !== null && !(value instanceof Module)) throw new TypeError(`cannot assign '${typeof value}' as child module '${i}' (torch.nn.Module or None expected)`);
        // registerModule's own write (its name is already in _modules), or a module replaced
        if (i === null || (i >= 0 && (target as unknown as { _modules: Map<string, unknown> })._modules.has(key as string))) return Reflect.set(target, key, value, receiver);
        target.childAt(i); // raises for an index out of range
        target.registerModule(String(i < 0 ? target.length + i : i), value);
        return true;
      },
    });
  }

  private childAt(i: number): Module {
    const all = [...this.children()];
    if (i < -all.length || i >= all.length) throw new RangeError(`index ${i} is out of range`);
    return all[i < 0 ? all.length + i : i];
  }

  /** The i-th submodule (negative counts from the end), undefined outside the range as `Array.prototype.at`. */
  at(i: number): Module {
    const all = [...this.children()];
    return all[i < 0 ? all.length + i : i];
  }

  override get length(): number {
    return [...this.children()].length;
  }
}

/**
 * `nn.Sequential(...modules)`: calls each in turn. Intermediate activations are disposed once
 * the next layer has consumed them (autograd keeps what it needs).
 */
export class Sequential extends IndexedModules {
  constructor(...layers: Module[]) {
    super();
    layers.forEach((m, i) => this.registerModule(String(i), m));
  }

  forward(x: Tensor): Tensor {
    let h = x;
    for (const m of this.children()) {
      const next = m.call(h) as Tensor;
      if (h !== x && next !== h) h.dispose();
      h = next;
    }
    return h;
  }
}

/** `nn.ModuleList`: holds submodules in order. */
export class ModuleList extends IndexedModules {
  constructor(modules: Module[] = []) {
    super();
    modules.forEach((m) => this.append(m));
  }

  append(m: Module): this {
    this.registerModule(String(this.length), m);
    return this;
  }

  forward(): never {
    throw new Error('ModuleList is not callable: iterate over it and call its modules');
  }
}

/** `nn.ModuleDict`: holds submodules by name. */
export class ModuleDict extends Module {
  constructor(modules: Record<string, Module> = {}) {
    super();
    for (const [k, m] of Object.entries(modules)) this.registerModule(k, m);
  }

  get(key: string): Module | undefined {
    return [...this.namedChildren()].find(([k]) => k === key)?.[1];
  }

  set(key: string, m: Module): void {
    this.registerModule(key, m);
  }

  keys(): string[] {
    return [...this.namedChildren()].map(([k]) => k);
  }

  forward(): never {
    throw new Error('ModuleDict is not callable: get a module by key and call it');
  }
}
