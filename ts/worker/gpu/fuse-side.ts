/**
 * Side by side, the second rewrite of fusion at capture end (after gpu/fuse.ts's chains): a run
 * of consecutive fused units (chains, or single float32 elementwise commands) that are independent
 * of each other becomes one dispatch, each unit over its own range of workgroups
 * (wgsl/side-by-side.ts). An optimizer's step is such a run, one update per parameter; on a GPU
 * where each dispatch costs several µs of Dawn's time whatever its size, they cost one.
 *
 * Independent: no unit reads or writes what an earlier unit of the run writes, nor writes what an
 * earlier one reads (a unit's in-place update of its own elements is its own business, checked
 * when it became a unit). Bounded by the buffers one dispatch may bind.
 */
import { WGSL_PRELUDE } from '../../ops/table.js';
import { groupsFor, sideBases, sideBySideShader, sideGrid, type SideUnit } from '../../../wgsl/side-by-side.js';
import type { Command } from '../protocol.js';
import { buf, dispatchCode } from './core.js';
import { contiguous, unitOf, unitRanges, type FusedCommand } from './fuse.js';

/** Independent fused units run side by side in one dispatch. */
export interface SideCommand {
  k: 'side';
  units: FusedCommand[];
  /** How many commands it stands for. */
  count: number;
}

/** Units per side-by-side dispatch at most (its WGSL grows with each). */
const MAX_UNITS = 32;

type Range = { id: number; start: number; end: number };
const meets = (a: Range, b: Range) => a.id === b.id && a.start < b.end && b.start < a.end;

/** Rewrites `cmds`: each run of independent fused units becomes one `SideCommand`; `maxSlots`: the storage buffers a dispatch may bind besides its params. */
export function sideBySide(cmds: (Command | FusedCommand)[], maxSlots: number): (Command | FusedCommand | SideCommand)[] {
  const out: (Command | FusedCommand | SideCommand)[] = [];
  let run: { cmd: Command | FusedCommand; unit: FusedCommand }[] = [];
  let reads: Range[] = [], writes: Range[] = [];
  const ids = new Set<number>();
  const end = () => {
    if (run.length > 1) out.push({ k: 'side', units: run.map((r) => r.unit), count: run.reduce((a, r) => a + r.unit.count, 0) });
    else for (const r of run) out.push(r.cmd);
    run = [];
    reads = [];
    writes = [];
    ids.clear();
  };
  for (const cmd of cmds) {
    const unit = unitOf(cmd);
    if (!unit) {
      end();
      out.push(cmd);
      continue;
    }
    const r = unitRanges(unit);
    const more = new Set([...ids, r.write.id, ...r.reads.map((x) => x.id)]);
    const independent = !r.reads.some((x) => writes.some((w) => meets(x, w))) && !writes.some((w) => meets(r.write, w)) && !reads.some((x) => meets(r.write, x));
    if (!independent || more.size > maxSlots || run.length >= MAX_UNITS) end();
    run.push({ cmd, unit });
    reads.push(...r.reads);
    writes.push(r.write);
    for (const id of [r.write.id, ...r.reads.map((x) => x.id)]) ids.add(id);
  }
  end();
  return out;
}

/** Records a side-by-side run's one dispatch. */
export function runSide(cmd: SideCommand): void {
  const bind: GPUBuffer[] = [], written: boolean[] = [];
  const slotOf = (id: number, write: boolean) => {
    const b = buf(id);
    let s = bind.indexOf(b);
    if (s < 0) (s = bind.push(b) - 1), written.push(false);
    if (write) written[s] = true;
    return s;
  };
  const units: SideUnit[] = cmd.units.map((u) => ({
    outSlot: slotOf(u.out.id, true),
    inputSlots: u.inputs.map((r) => slotOf(r.id, false)),
    inputStrides: u.inputs.map((r) => (contiguous(r, u.shape) ? null : r.strides)),
    shape: u.shape,
    steps: u.steps,
  }));
  const base = sideBases(cmd.units.map((u) => ({ inputs: u.inputs.length })));
  const p = new Uint32Array(base[base.length - 1] + 3 + cmd.units[cmd.units.length - 1].inputs.length);
  let groups = 0;
  cmd.units.forEach((u, i) => {
    p[base[i]] = groups;
    p[base[i] + 1] = u.n;
    p[base[i] + 2] = u.out.offset;
    u.inputs.forEach((r, j) => (p[base[i] + 3 + j] = r.offset));
    groups += groupsFor(u.n);
  });
  dispatchCode(sideBySideShader(units, bind.length, written, WGSL_PRELUDE), bind, p.buffer, sideGrid(groups));
}
