/**
 * `torch.autograd.Function`: a differentiable op written as a subclass with a static `forward`
 * and `backward`, called through `apply`, as in PyTorch:
 *
 *     class Exp extends torch.autograd.Function {
 *       static forward(ctx, x) { const y = x.exp(); ctx.saveForBackward(y); return y; }
 *       static backward(ctx, g) { const [y] = ctx.savedTensors; return g.mul(y); }
 *     }
 *     const y = Exp.apply(x);
 *
 * `forward` runs with grad mode off; when an input tensor requires grad the outputs get one
 * node on the tape whose rule is `backward` (one gradient per `apply` argument, null for those
 * that need none or are not tensors). Saved tensors are held by the node until its backward has
 * run (`retainGraph` keeps them), and the in-place check of saved tensors applies to them.
 */
import { Tensor } from '../tensor.js';
import { zeros } from '../ops/creation.js';
import { index } from '../ops/views.js';
import { needsGrad, record, withGradMode } from './graph.js';

/** What `forward` and `backward` receive first: `saveForBackward`, `savedTensors`, `needsInputGrad`, and any fields the function sets. */
export class FunctionCtx {
  [field: string]: unknown;
  /** Per `apply` argument: whether it is a tensor that requires grad. */
  needsInputGrad: boolean[] = [];
  /** @internal */
  _toSave: (Tensor | null)[] = [];
  /** @internal */
  _saved: (Tensor | null)[] | null = null;
  /** @internal */
  _materializeGrads = true;

  /** Keeps tensors for `backward` (PyTorch's `save_for_backward`); call it once, in `forward`. */
  saveForBackward(...tensors: (Tensor | null)[]): void {
    tensors.forEach((t, i) => {
      if (t !== null && !(t instanceof Tensor)) throw new TypeError(`save_for_backward can only save variables, but argument ${i} is not a Tensor`);
    });
    this._toSave = tensors;
  }

  /** The tensors `saveForBackward` kept, in `backward`. */
  get savedTensors(): (Tensor | null)[] {
    if (this._saved === null) {
      throw new Error('Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Specify retainGraph: true if you need to backward through the graph a second time.');
    }
    return this._saved;
  }

  /** `set_materialize_grads(value)`: with false, `backward` gets null for outputs that received no gradient (default true: zeros). */
  setMaterializeGrads(value: boolean): void {
    this._materializeGrads = value;
  }
}

/** The base of custom autograd functions (PyTorch's `torch.autograd.Function`). */
export class Function {
  /** Computes the outputs (a tensor or an array of tensors) from the arguments. Override it. */
  static forward(_ctx: FunctionCtx, ..._args: any[]): Tensor | Tensor[] {
    throw new Error(`You must implement the forward function for custom autograd.Function.`);
  }

  /** Computes one gradient per `apply` argument from one gradient per output. Override it. */
  static backward(_ctx: FunctionCtx, ..._grads: (Tensor | null)[]): Tensor | null | (Tensor | null)[] {
    throw new Error(`You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD.`);
  }

  /** Runs `forward` and, when an input tensor requires grad, records `backward` as its gradient rule. */
  static apply<T extends Tensor | Tensor[]>(this: typeof Function, ...args: unknown[]): T {
    const ctx = new FunctionCtx();
    const inputs = args.filter((a): a is Tensor => a instanceof Tensor);
    ctx.needsInputGrad = args.map((a) => a instanceof Tensor && needsGrad(a));
    const raw = withGradMode(false, () => this.forward(ctx, ...args));
    const single = !Array.isArray(raw);
    const outs = (single ? [raw] : raw) as Tensor[];
    outs.forEach((o, i) => {
      if (!(o instanceof Tensor)) throw new TypeError(`${this.name}.forward must return a Tensor or an array of Tensors, but output ${i} is ${o === null ? 'null' : typeof o}`);
    });
    if (!needsGrad(...inputs)) return raw as T;
    // an input returned as it is becomes a new handle, so that the input keeps its own history
    const own = outs.map((o) => (inputs.includes(o) ? withGradMode(false, () => index(o)) : o));
    const name = this.name;
    record(name, inputs, single ? own[0] : own, (c) => {
      ctx._saved = ctx._toSave.map((t) => t && c.save(t));
      const shapes = own.map((o) => o.shape.slice()), like = own.map((o) => ({ dtype: o.dtype, device: o.device }));
      return (grads) => {
        // (outputs may be disposed by now: zeros from their shapes)
        const gs = grads.map((g, i) => (g ?? (ctx._materializeGrads ? zeros(shapes[i], like[i]) : null)));
        const r = this.backward(ctx, ...gs);
        const list = Array.isArray(r) ? r : [r];
        if (list.length !== args.length) throw new Error(`function ${name}Backward returned an incorrect number of gradients (expected ${args.length}, got ${list.length})`);
        const result: (Tensor | null)[] = [];
        args.forEach((a, i) => {
          if (!(a instanceof Tensor)) {
            if (list[i] != null) throw new Error(`function ${name}Backward returned a gradient different than None at position ${i + 1}, but the corresponding forward input was not a Variable`);
            return;
          }
          const g = list[i] ?? null;
          if (g && g.shape.join() !== a.shape.join()) {
            throw new Error(`Function ${name}Backward returned an invalid gradient at index ${i} - got [${g.shape.join(', ')}] but expected shape compatible with [${a.shape.join(', ')}]`);
          }
          result.push(g);
        });
        return result;
      };
    });
    return (single ? own[0] : own) as T;
  }
}
