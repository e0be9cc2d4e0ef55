/**
 * `nn.Module`: parameters, buffers and submodules, found by walking the module's own fields
 * in registration order, as PyTorch's `__setattr__` does.
 *
 * Registration is explicit (`registerParameter`, `registerBuffer`, `registerModule`) or
 * implicit: a field holding a `Parameter` or a `Module` is registered when first walked.
 * A plain tensor field is neither: it is not in `stateDict()` and does not move with `.to()`,
 * the common mistake PyTorch's notes warn about. `to()` moves parameters and buffers *in place*
 * (each keeps its identity), so an optimizer built before `.to()` still holds the right tensors.
 */
import { CPU, device as toDevice, getDefaultDevice, type DeviceLike } from '../device.js';
import type { DType } from '../dtype.js';
import { withGradMode } from '../autograd/graph.js';
import { Tensor } from '../tensor.js';
import { bindArgs, type PyArgs } from '../args.js';
import { runHooked, RemovableHandle, type HookSet } from './hooks.js';

export { RemovableHandle };
import { adopt, currentScope, giveToScope } from '../scope.js';

/** A tensor that is a module's learnable parameter (requires grad unless told otherwise). */
export class Parameter extends Tensor {
  /** Wraps `data`'s storage as a parameter (no copy). */
  static of(data: Tensor, requiresGrad = true): Parameter {
    const p = new Parameter(data._check('Parameter').storage, data.shape, data._strides, data._offset, data.dtype);
    p.requiresGrad = requiresGrad;
    return p;
  }
}

type Entry = [string, Tensor | null];

/** Hooks' options: `withKwargs` and `alwaysCall` are refused when true (modules take no keyword dict here). */
function checkHookOptions(op: string, o: object, extra: string[] = []): void {
  for (const [k, v] of Object.entries(o)) {
    if (!['prepend', 'withKwargs', ...extra].includes(k)) throw new TypeError(`${op}() got an unexpected keyword argument '${k}'`);
    if (k !== 'prepend' && v) throw new TypeError(`${op}(): ${k}=true is not supported`);
  }
}

/** PyTorch's `device=` and `dtype=` factory keywords of the layers that own parameters. */
export interface FactoryOptions {
  device?: DeviceLike | null;
  dtype?: DType | null;
}

/**
 * What makes a module callable (`model(x)`, as in PyTorch): the constructor returns an arrow
 * function whose prototype is the subclass's, so `instanceof`, methods and every subclass's field
 * initialisers land on it. The function's own `name` and `length` are deleted, so that modules
 * may have fields of those names; an arrow function has no `prototype` of its own, so its only
 * own properties are the module's fields. `typeof model` is `'function'`.
 */
abstract class CallableObject {
  constructor() {
    const fn = (...args: unknown[]): unknown => (fn as unknown as Module)._callImpl(args);
    delete (fn as { name?: string }).name;
    delete (fn as { length?: number }).length;
    Object.setPrototypeOf(fn, new.target.prototype);
    return fn as unknown as CallableObject;
  }
}

/** A module is called like a function: `model(x)` is `model.forward(x)`. */
export interface Module {
  (...args: any[]): any;
}

/** Base class of all layers. Subclasses set fields in their constructor and implement `forward`. */
export abstract class Module extends CallableObject {
  /** Whether the module is in training mode (`train()` / `eval()`). */
  training = true;
  private _params = new Map<string, Tensor | null>();
  private _buffers = new Map<string, Tensor | null>();
  private _persistent = new Set<string>();
  private _modules = new Map<string, Module | null>();
  /**
   * The `tidy` scope the module was built in (none outside one): parameters and buffers it
   * registers later belong there, not to a `tidy` running then (`giveToScope`), so a module's
   * state survives any `tidy` its methods run in. Held weakly: a finished scope's tensors are not kept.
   */
  private _scope = ((s) => (s ? new WeakRef(s) : null))(currentScope());

  private _hooks: HookSet | null = null;

  /** Computes the module's output. */
  abstract forward(...args: unknown[]): unknown;

  /** Calls `forward` (PyTorch's `module(x)`; `module(x)` works too), running the registered hooks around it. */
  call(...args: unknown[]): any {
    return this._callImpl(args);
  }

  /** @internal `forward` with the hooks: what calling the module runs. */
  _callImpl(args: unknown[]): any {
    const h = this._hooks;
    if (!h || (!h.pre.size && !h.post.size && !h.backward.size)) return this.forward(...args);
    return runHooked(this, h, args, (a) => this.forward(...a));
  }

  private hookSet(): HookSet {
    return (this._hooks ??= { pre: new Map(), post: new Map(), backward: new Map() });
  }

  /**
   * `registerForwardPreHook(hook, {prepend})`: `hook(module, args)` runs before `forward`; an
   * array it returns replaces the arguments (another value replaces the single argument).
   * Returns a handle whose `remove()` unregisters it.
   */
  registerForwardPreHook(hook: (m: this, args: unknown[]) => unknown, options: { prepend?: boolean; withKwargs?: false } = {}): RemovableHandle {
    checkHookOptions('register_forward_pre_hook', options);
    return RemovableHandle.add(this.hookSet().pre, hook as never, !!options.prepend);
  }

  /**
   * `registerForwardHook(hook, {prepend, alwaysCall})`: `hook(module, args, output)` runs after
   * `forward`; a value it returns (other than undefined) replaces the output.
   */
  registerForwardHook(hook: (m: this, args: unknown[], output: any) => unknown, options: { prepend?: boolean; withKwargs?: false; alwaysCall?: false } = {}): RemovableHandle {
    checkHookOptions('register_forward_hook', options, ['alwaysCall']);
    return RemovableHandle.add(this.hookSet().post, hook as never, !!options.prepend);
  }

  /**
   * `registerFullBackwardHook(hook, {prepend})`: `hook(module, gradInput, gradOutput)` runs when
   * the gradients with respect to the module's tensor inputs are computed (gradInput holds null
   * for inputs that need none); an array it returns replaces gradInput.
   */
  registerFullBackwardHook(hook: (m: this, gradInput: (Tensor | null)[], gradOutput: (Tensor | null)[]) => unknown, options: { prepend?: boolean } = {}): RemovableHandle {
    checkHookOptions('register_full_backward_hook', options);
    return RemovableHandle.add(this.hookSet().backward, hook as never, !!options.prepend);
  }

  /** `requiresGrad_(requiresGrad = true)`: sets `requiresGrad` on every parameter; returns the module. */
  requiresGrad_(requiresGrad = true): this {
    for (const p of this.parameters()) p.requiresGrad_(requiresGrad);
    return this;
  }

  /** Registers fields holding a Parameter or a Module that were assigned directly. */
  private sync(): void {
    for (const [k, v] of Object.entries(this)) {
      if (k.startsWith('_')) continue;
      if (v instanceof Parameter && !this._params.has(k) && !this._buffers.has(k)) this._params.set(k, v);
      else if (v instanceof Module && !this._modules.has(k)) this._modules.set(k, v);
    }
  }

  /** Adds a parameter (`null` reserves the name). */
  registerParameter(name: string, p: Tensor | null): void {
    if (p && !(p instanceof Parameter)) p = Parameter.of(p);
    if (p) giveToScope(p, this._scope?.deref());
    this._params.set(name, p);
    (this as Record<string, unknown>)[name] = p;
  }

  /** Adds a buffer: state that moves with `.to()` and is saved in `stateDict()` (unless not persistent). */
  registerBuffer(name: string, t: Tensor | null, persistent = true): void {
    if (t) giveToScope(t, this._scope?.deref());
    this._buffers.set(name, t);
    if (persistent) this._persistent.add(name);
    (this as Record<string, unknown>)[name] = t;
  }

  /** Adds a submodule. */
  registerModule(name: string, m: Module | null): void {
    this._modules.set(name, m);
    (this as Record<string, unknown>)[name] = m;
  }

  /** PyTorch's `add_module(name, module)`: the same as `registerModule`. */
  addModule(name: string, m: Module | null): void {
    this.registerModule(name, m);
  }

  /** PyTorch's module repr: the class name and, indented, the submodules (`(0): Linear()`). */
  override toString(): string {
    const kids = [...this.namedChildren()].map(([k, m]) => `  (${k}): ${String(m).replace(/\n/g, '\n  ')}`);
    return kids.length ? `${this.constructor.name}(\n${kids.join('\n')}\n)` : `${this.constructor.name}()`;
  }

  /** What `console.log(model)` shows in Node (a module is a function object; this keeps it readable). */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toString();
  }

  /** The direct submodules, by name. */
  *namedChildren(): Generator<[string, Module]> {
    this.sync();
    for (const [k, m] of this._modules) {
      const cur = (this as Record<string, unknown>)[k];
      if (cur instanceof Module) yield [k, cur];
      else if (m) yield [k, m];
    }
  }

  /** The direct submodules. */
  *children(): Generator<Module> {
    for (const [, m] of this.namedChildren()) yield m;
  }

  /** This module and every submodule, depth first, with dotted names. */
  *namedModules(prefix = ''): Generator<[string, Module]> {
    yield [prefix, this];
    for (const [k, m] of this.namedChildren()) yield* m.namedModules(prefix ? `${prefix}.${k}` : k);
  }

  /** This module and every submodule. */
  *modules(): Generator<Module> {
    for (const [, m] of this.namedModules()) yield m;
  }

  private own(map: 'params' | 'buffers'): Entry[] {
    this.sync();
    const src = map === 'params' ? this._params : this._buffers;
    return [...src.keys()].map((k) => [k, (this as Record<string, unknown>)[k] as Tensor | null]);
  }

  /** Every parameter with its dotted name (each tensor once). */
  *namedParameters(): Generator<[string, Tensor]> {
    const seen = new Set<Tensor>();
    for (const [prefix, m] of this.namedModules()) {
      for (const [k, p] of m.own('params')) {
        if (p && !seen.has(p)) {
          seen.add(p);
          yield [prefix ? `${prefix}.${k}` : k, p];
        }
      }
    }
  }

  /** Every parameter. */
  parameters(): Tensor[] {
    return [...this.namedParameters()].map(([, p]) => p);
  }

  /** Every buffer with its dotted name. */
  *namedBuffers(): Generator<[string, Tensor]> {
    for (const [prefix, m] of this.namedModules()) {
      for (const [k, b] of m.own('buffers')) if (b) yield [prefix ? `${prefix}.${k}` : k, b];
    }
  }

  /** Every buffer. */
  buffers(): Tensor[] {
    return [...this.namedBuffers()].map(([, b]) => b);
  }

  /** Calls `fn` on every submodule and then on this module. */
  apply(fn: (m: Module) => void): this {
    for (const m of this.children()) m.apply(fn);
    fn(this);
    return this;
  }

  /** Moves (and/or casts) parameters and buffers in place; returns the module. */
  to(target: DeviceLike | { device?: DeviceLike; dtype?: DType }): this {
    const o = typeof target === 'object' && target !== null && !('type' in target) ? target : { device: target as DeviceLike };
    const dev = o.device === undefined ? undefined : toDevice(o.device);
    withGradMode(false, () => {
      for (const t of [...this.parameters(), ...this.buffers()]) {
        const dtype = o.dtype && (t.dtype === 'float32' || t.dtype === 'float16' || t.dtype === 'bfloat16') ? o.dtype : t.dtype;
        const moved = t.to({ device: dev ?? t.device, dtype });
        if (moved !== t) {
          t._setData(moved);
          moved.dispose();
        }
        if (t.grad) {
          const g = t.grad.to({ device: t.device, dtype: t.dtype });
          if (g !== t.grad) {
            t.grad.dispose();
            t.grad = g;
            adopt(t, g); // the moved gradient lives as long as its parameter, not as a tidy around .to()
          }
        }
      }
    });
    return this;
  }

  /**
   * Places a freshly built layer as PyTorch's `device=`/`dtype=` factory arguments ask; without
   * `device`, on `torch.setDefaultDevice`'s device (its parameters are drawn on the host).
   */
  protected place(o: FactoryOptions): this {
    const fallback = getDefaultDevice();
    const device = o.device ?? (fallback === CPU ? undefined : fallback);
    return device === undefined && o.dtype == null ? this : this.to({ device, dtype: o.dtype ?? undefined });
  }

  /** `to('gpu:i')` (the current GPU when omitted). */
  cuda(index?: number): this {
    return this.to(index === undefined ? toDevice('gpu') : toDevice(index));
  }

  /** `to('cpu')`. */
  cpu(): this {
    return this.to('cpu');
  }

  /** Sets training mode on this module and every submodule. */
  train(mode = true): this {
    for (const m of this.modules()) m.training = mode;
    return this;
  }

  /** Sets evaluation mode (`train(false)`). */
  eval(): this {
    return this.train(false);
  }

  /** Clears every parameter's gradient (to null, PyTorch's default `set_to_none`). */
  zeroGrad(): void {
    for (const p of this.parameters()) {
      p.grad?.dispose();
      p.grad = null;
    }
  }

  /** Parameters and persistent buffers by dotted name (the tensors themselves, not copies). */
  stateDict(): Record<string, Tensor> {
    const out: Record<string, Tensor> = {};
    for (const [prefix, m] of this.namedModules()) {
      const at = (k: string) => (prefix ? `${prefix}.${k}` : k);
      for (const [k, p] of m.own('params')) if (p) out[at(k)] = p;
      for (const [k, b] of m.own('buffers')) if (b && m._persistent.has(k)) out[at(k)] = b;
    }
    return out;
  }

  /**
   * `loadStateDict(stateDict, strict = true)` (or `{strict}`): copies values from `stateDict` into
   * this module's parameters and buffers, on their devices (and dtypes). With `strict`, missing or
   * unexpected keys raise; a shape mismatch always raises. Every problem is listed in one error
   * worded as PyTorch's (`Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict:
   * "fc.bias". …`, `size mismatch for fc.weight: copying a param with shape torch.Size([2, 3]) from
   * checkpoint, the shape in current model is torch.Size([3, 3]).`), and nothing is copied when it
   * raises. Returns the missing and unexpected keys.
   */
  loadStateDict(state: Record<string, Tensor>, ...args: PyArgs<[strict: boolean], { strict?: boolean }>): { missingKeys: string[]; unexpectedKeys: string[] } {
    const { strict } = bindArgs('load_state_dict', ['strict'], args, { strict: true }, 1);
    if (typeof state !== 'object' || state === null || Array.isArray(state)) {
      throw new TypeError(`Expected state_dict to be dict-like, got ${state === null ? 'null' : Array.isArray(state) ? 'an array' : typeof state}.`);
    }
    const own = this.stateDict();
    const missingKeys = Object.keys(own).filter((k) => !Object.hasOwn(state, k));
    const unexpectedKeys = Object.keys(state).filter((k) => !Object.hasOwn(own, k));
    const errors: string[] = [];
    if (strict && missingKeys.length) errors.push(`Missing key(s) in state_dict: ${missingKeys.map((k) => `"${k}"`).join(', ')}. `);
    if (strict && unexpectedKeys.length) errors.push(`Unexpected key(s) in state_dict: ${unexpectedKeys.map((k) => `"${k}"`).join(', ')}. `);
    const size = (s: readonly number[]) => `torch.Size([${s.join(', ')}])`;
    for (const [k, t] of Object.entries(own)) {
      if (!Object.hasOwn(state, k)) continue;
      const src = state[k];
      if (!(src instanceof Tensor)) {
        errors.push(`While copying the parameter named "${k}", expected torch.Tensor or Tensor-like object from checkpoint but received ${src === null ? 'null' : typeof src}`);
      } else if (src.shape.join() !== t.shape.join()) {
        errors.push(`size mismatch for ${k}: copying a param with shape ${size(src.shape)} from checkpoint, the shape in current model is ${size(t.shape)}.`);
      }
    }
    if (errors.length) throw new Error(`Error(s) in loading state_dict for ${this.constructor.name}:\n\t${errors.join('\n\t')}`);
    withGradMode(false, () => {
      for (const [k, t] of Object.entries(own)) if (Object.hasOwn(state, k)) t.copy_(state[k]);
    });
    return { missingKeys, unexpectedKeys };
  }
}
