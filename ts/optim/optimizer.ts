/**
 * The optimizer base: parameter groups, per-parameter state, `zeroGrad`, and state dicts.
 *
 * Updates run with grad mode off and write each parameter and state tensor in place, so the
 * parameter objects the model holds, and the storages a captured graph reads, stay the same.
 * State tensors (momentum, moments) live on their parameter's device; if a parameter has moved
 * since (`model.to(device)` after the optimizer was built), its state follows it at the next step.
 */
import { withGradMode } from '../autograd/graph.js';
import { tidy } from '../ops/scoped.js';
import { isCurrentStreamCapturing } from '../runtime/graphs.js';
import type { Tensor } from '../tensor.js';
import { untrack } from '../scope.js';
import { loadOptimizerStateDict, optimizerStateDict, type OptimizerState } from './state-dict.js';

/** Options shared by every parameter of a group. */
export type GroupOptions = Record<string, number | boolean | null | [number, number] | number[]>;

/** A parameter group: its parameters and options (`lr`, …). */
export type ParamGroup = { params: Tensor[] } & GroupOptions & { lr: number };

/** Per-parameter state: tensors and counters. */
export type ParamState = Record<string, Tensor | number>;

export type { OptimizerState } from './state-dict.js';

/** What an optimizer takes: parameters, or parameter groups (`{params, lr, …}`) whose keys override the defaults. */
export type Params = Iterable<Tensor> | { params: Iterable<Tensor>; [k: string]: unknown }[];

/** Base class of the optimizers. */
export abstract class Optimizer {
  readonly paramGroups: ParamGroup[];
  readonly state = new Map<Tensor, ParamState>();

  constructor(params: Params, readonly defaults: GroupOptions & { lr: number }) {
    const list = [...params] as (Tensor | { params: Iterable<Tensor> })[];
    if (!list.length) throw new RangeError('optimizer got an empty parameter list');
    const groups = 'params' in (list[0] as object) && !('shape' in (list[0] as object))
      ? (list as { params: Iterable<Tensor> }[])
      : [{ params: list as Tensor[] }];
    for (const g of groups) {
      const unknown = Object.keys(g).find((k) => k !== 'params' && !(k in defaults));
      if (unknown !== undefined) throw new TypeError(`${new.target.name}: parameter group got an unexpected keyword argument '${unknown}' (expected ${Object.keys(defaults).map((k) => `'${k}'`).join(', ')})`);
    }
    this.paramGroups = groups.map((g) => ({ ...defaults, ...g, params: [...g.params] }) as ParamGroup);
    const seen = new Set<Tensor>();
    for (const g of this.paramGroups) {
      for (const p of g.params) {
        if (!p.requiresGrad) throw new TypeError("optimizer can only optimize Tensors that require grad (got a tensor with requiresGrad false)");
        if (!p.isLeaf) throw new TypeError("can't optimize a non-leaf Tensor");
        if (seen.has(p)) throw new Error('some parameters appear in more than one parameter group');
        seen.add(p);
      }
      if (!(Number(g.lr) >= 0)) throw new RangeError(`Invalid learning rate: ${g.lr}`);
    }
  }

  /** Clears the gradients of every parameter (to null). */
  zeroGrad(): void {
    for (const g of this.paramGroups) {
      for (const p of g.params) {
        p.grad?.dispose();
        p.grad = null;
      }
    }
  }

  /**
   * Applies one update from the current gradients. Every parameter and state tensor is written in
   * place, as PyTorch's optimizers do: a graph that reads a parameter (a captured forward and
   * backward, `makeGraphedCallables`) sees each eager step's update, and no storage it reads is
   * ever swapped for another. Where the optimizer has a fused step (ts/optim/fused.ts), the
   * parameters it takes are updated by one command per group and device.
   */
  step(): void {
    withGradMode(false, () => {
      for (const group of this.paramGroups) {
        for (const p of this.fusedStep(group)) this.composedStep(p, group);
      }
    });
  }

  /**
   * Runs the fused step for the parameters of `group` it takes, and returns the parameters with
   * a gradient that it left to the composed step. The base class has none: it returns them all.
   */
  protected fusedStep(group: ParamGroup): Tensor[] {
    return group.params.filter((p) => p.grad);
  }

  /** The state of `p`, made empty at its first step; state tensors on another device (the parameter moved since) follow it. */
  protected stateOf(p: Tensor): ParamState {
    let state = this.state.get(p);
    if (!state) this.state.set(p, (state = {}));
    for (const [k, v] of Object.entries(state)) {
      if (typeof v === 'object' && v.device !== p.device) {
        state[k] = v.to(p.device);
        untrack(state[k] as Tensor);
        v.dispose();
      }
    }
    return state;
  }

  /** One parameter's update from the composed elementwise ops of `update`, written in place. */
  private composedStep(p: Tensor, group: ParamGroup): void {
    const state = this.stateOf(p);
    const grad = p.grad!;
    // Under a graph's capture (ts/runtime/graphs.ts) the state must exist already and be on the device.
    const capturing = isCurrentStreamCapturing(p.device);
    if (capturing) this.checkCapturable(group);
    // Every temporary of the update is disposed; the new value and state tensors are kept.
    const { value, updates } = tidy(() => this.update(p, grad.device === p.device ? grad : grad.to(p.device), state, group));
    for (const [k, v] of Object.entries(updates)) {
      const old = state[k];
      // an existing state tensor takes its new value in place (a graph may read it)
      if (typeof v === 'object' && typeof old === 'object' && old !== v && old.dtype === v.dtype && String(old.shape) === String(v.shape)) {
        old.copy_(v);
        v.dispose();
        continue;
      }
      if (capturing && typeof v === 'object' && old === undefined) {
        value.dispose();
        for (const u of Object.values(updates)) if (typeof u === 'object' && !Object.values(state).includes(u)) u.dispose();
        throw new Error(`${this.constructor.name}.step() under graph capture made its state '${k}' during capture, so every replay would take a first step again: run a few eager steps before capture (warmup, as in PyTorch's whole-network capture), so that the state exists`);
      }
      if (capturing && typeof v === 'number' && v !== old) {
        value.dispose();
        for (const u of Object.values(updates)) if (typeof u === 'object' && !Object.values(state).includes(u)) u.dispose();
        throw new Error(`${this.constructor.name}.step() under graph capture keeps '${k}' as a host number, which a replay cannot advance: construct the optimizer with {capturable: true} (device step counts, as PyTorch's)`);
      }
      if (typeof old === 'object' && old !== v) old.dispose();
      // The optimizer owns its state: no `tidy` around the step disposes it (PyTorch's state lives with the optimizer).
      if (typeof v === 'object') untrack(v);
      state[k] = v;
    }
    p.copy_(value);
    value.dispose();
  }

  /** Raises when the group's updates cannot be captured in a graph (PyTorch's `capturable` check). */
  protected checkCapturable(_group: ParamGroup): void {}

  /**
   * Computes a parameter's new value and its new state entries (read the old ones from
   * `state`). Runs inside `torch.tidy`: temporaries need no disposing.
   */
  protected abstract update(p: Tensor, g: Tensor, state: ParamState, group: ParamGroup): { value: Tensor; updates: ParamState };

  /**
   * `stateDict()`: the state by parameter index and the groups with indices, in PyTorch's layout
   * and keys (`{state: {0: {exp_avg, …}}, param_groups: [{lr, weight_decay, …, params}]}`), so that
   * PyTorch's `load_state_dict` takes it (ts/optim/state-dict.ts).
   */
  stateDict(): OptimizerState {
    return optimizerStateDict(this);
  }

  /** `loadStateDict(sd)`: loads a state dict of an optimizer over parameters of the same shapes (PyTorch's or webtorch's). */
  loadStateDict(sd: OptimizerState): void {
    loadOptimizerStateDict(this, sd);
  }
}
