/**
 * An optimizer's state dict in PyTorch's layout and keys, so that a checkpoint moves between
 * PyTorch and webtorch (`torch.save(opt.stateDict(), 'opt.pt')`, then PyTorch's
 * `opt.load_state_dict(torch.load('opt.pt'))`, and the other way):
 *
 *     {state: {0: {step, exp_avg, exp_avg_sq}, …}, param_groups: [{lr, betas, eps, weight_decay, amsgrad, …, params: [0, 1]}]}
 *
 * Inside webtorch the per-parameter state and the group options are camelCase (`expAvg`,
 * `weightDecay`); the state dict's keys are PyTorch's snake_case, as a GradScaler's are.
 * Loading takes either spelling. A PyTorch group option webtorch's optimizer does not have is
 * ignored where it changes no result (`foreach` and `fused` of an optimizer with one
 * implementation, `initial_lr`) or is off (`differentiable: false`); one that is on raises,
 * since webtorch would not do what it says.
 */
import { withGradMode } from '../autograd/graph.js';
import { isFloating } from '../dtype.js';
import { untrack } from '../scope.js';
import { Tensor } from '../tensor.js';
import type { GroupOptions, Optimizer, ParamState } from './optimizer.js';

/** What `stateDict()` returns: state by parameter index, and the groups with indices (PyTorch's keys). */
export interface OptimizerState {
  state: Record<number, Record<string, Tensor | number>>;
  param_groups: (Record<string, unknown> & { params: number[] })[];
}

const snake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const camel = (k: string) => k.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
/** Options that change no result, ignored where the optimizer does not have them (a scheduler's `initial_lr`; `foreach` and `fused` of an optimizer with one implementation). */
const IGNORED = new Set(['foreach', 'fused', 'initialLr']);

/** `opt.stateDict()`: the state tensors themselves (not copies), as PyTorch's. */
export function optimizerStateDict(opt: Optimizer): OptimizerState {
  const index = new Map<Tensor, number>();
  const param_groups = opt.paramGroups.map((g) => {
    const { params, ...opts } = g;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(opts)) out[snake(k)] = Array.isArray(v) ? [...v] : v;
    return { ...out, params: params.map((p) => (index.has(p) ? index.get(p)! : index.set(p, index.size).get(p)!)) };
  });
  const state: OptimizerState['state'] = {};
  for (const [p, s] of opt.state) {
    if (!index.has(p)) continue;
    const out: Record<string, Tensor | number> = {};
    for (const [k, v] of Object.entries(s)) out[snake(k)] = v;
    state[index.get(p)!] = out;
  }
  return { state, param_groups };
}

/** `opt.loadStateDict(sd)`: PyTorch's checks and messages; state tensors are copied to each parameter's device and dtype. */
export function loadOptimizerStateDict(opt: Optimizer, sd: OptimizerState | { state: unknown; paramGroups: unknown }): void {
  const name = opt.constructor.name;
  const groups = ((sd as OptimizerState).param_groups ?? (sd as { paramGroups?: unknown }).paramGroups) as OptimizerState['param_groups'] | undefined;
  if (!sd || typeof sd !== 'object' || !Array.isArray(groups) || typeof sd.state !== 'object' || sd.state === null) {
    throw new TypeError(`${name}.loadStateDict: expected {state, param_groups} (an optimizer's state dict)`);
  }
  if (groups.length !== opt.paramGroups.length) throw new RangeError('loaded state dict has a different number of parameter groups');
  groups.forEach((g, i) => {
    if (!Array.isArray(g?.params) || g.params.length !== opt.paramGroups[i].params.length) {
      throw new RangeError("loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
    }
  });
  // Saved ids map to the current parameters by position, as PyTorch's id_map.
  const byId = new Map<number, Tensor>();
  groups.forEach((g, i) => g.params.forEach((id, j) => byId.set(Number(id), opt.paramGroups[i].params[j])));
  const options = groups.map((g, i) => {
    const out: GroupOptions = {};
    for (const [k, v] of Object.entries(g)) {
      const key = camel(k);
      if (key === 'params') continue;
      if (key in opt.defaults) out[key] = (Array.isArray(v) ? [...v] : v) as GroupOptions[string];
      else if (IGNORED.has(key)) continue;
      else if (v !== false && v !== null && v !== undefined && v !== 0) {
        throw new TypeError(`${name}.loadStateDict: param_groups[${i}] sets '${k}' to ${JSON.stringify(v)}, which webtorch's ${name} does not have`);
      }
    }
    return out;
  });
  const entries = Object.entries(sd.state as Record<string, Record<string, unknown>>).map(([id, s]) => {
    const p = byId.get(Number(id));
    if (!p) throw new RangeError(`${name}.loadStateDict: state for parameter ${id}, which no param_group lists`);
    if (typeof s !== 'object' || s === null) throw new TypeError(`${name}.loadStateDict: state[${id}] must be an object`);
    for (const [k, v] of Object.entries(s)) {
      if (typeof v !== 'number' && !(v instanceof Tensor)) throw new TypeError(`${name}.loadStateDict: state[${id}].${k} must be a tensor or a number, got ${v === null ? 'null' : typeof v}`);
    }
    return [p, s as Record<string, Tensor | number>] as const;
  });
  withGradMode(false, () => {
    options.forEach((o, i) => Object.assign(opt.paramGroups[i], o));
    for (const [p, s] of entries) {
      const copy: ParamState = {};
      for (const [k, v] of Object.entries(s)) {
        const key = camel(k);
        if (typeof v === 'number') {
          copy[key] = v;
          continue;
        }
        // PyTorch's cast: floating state takes the parameter's dtype (not the step count), every tensor its device.
        const dtype = key !== 'step' && isFloating(v.dtype) && isFloating(p.dtype) ? p.dtype : v.dtype;
        const moved = v.to({ device: p.device, dtype });
        const t = moved === v ? v.clone() : moved;
        untrack(t);
        copy[key] = t;
      }
      const old = opt.state.get(p);
      if (old) for (const v of Object.values(old)) if (v instanceof Tensor) v.dispose();
      opt.state.set(p, copy);
    }
  });
}
