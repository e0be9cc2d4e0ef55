/**
 * The IR's kind descriptors (ts/ir/kinds.ts) against what they claim. A kind without a row fails
 * to compile (`KINDS` is typed by the `Command` union; `npm test` builds with tsc first); here
 * the rows are held to the behaviour they name: the wire form of a batch, and the derived sets
 * the scheduler, the executor and the facade's capture consult.
 */
import { describe, expect, it } from 'vitest';
import type { Command } from '../../ts/ir/commands.js';
import { BOOKKEEPING_KINDS, CAPTURED_KINDS, COMPOSABLE_KINDS, COPY_KINDS, DEVICE_KINDS, KINDS, PACKED_KINDS, PASSED_KINDS, UNTRACED_KINDS, type CommandKind } from '../../ts/ir/kinds.js';
import { BatchWriter, readBatch } from '../../ts/worker/protocol.js';

const view = (id: number) => ({ id, offset: 3, strides: [4, 1] });
const place = (id: number) => ({ id, offset: 2 });
/** One command of each packed kind, as the ops make them. */
const PACKED_SAMPLES: Command[] = [
  { k: 'binary', op: 2, a: view(1), b: 0x3f800000, dt: 0, out: place(2), outDt: 0, shape: [2, 4], alpha: 1 },
  { k: 'unary', op: 5, a: view(1), dt: 0, out: place(3), outDt: 0, shape: [2, 4], s: [0, 1, 2] },
  { k: 'fill', out: place(4), dt: 0, n: 8, value: 7 },
  { k: 'copy', src: view(1), srcDt: 0, out: place(5), dt: 1, shape: [2, 4] },
  { k: 'segment', id: 9, bytes: 4096 },
  { k: 'release', id: 9 },
];

describe('IR kinds', () => {
  it('the packed kinds are exactly the ones the batch writer packs, and they read back unchanged', () => {
    expect([...PACKED_KINDS].sort()).toEqual(PACKED_SAMPLES.map((c) => c.k).sort());
    const w = new BatchWriter();
    for (const c of PACKED_SAMPLES) w.push(c, 0);
    const batch = w.take();
    expect(batch.objects).toEqual([]);
    expect(readBatch(batch).cmds).toEqual(PACKED_SAMPLES);
  });

  it('an object kind travels as an object, in its stream', () => {
    const w = new BatchWriter();
    const mm: Command = { k: 'matmul', a: view(1), b: view(2), dt: 0, out: place(3), batch: 1, m: 2, n: 2, kk: 4, aStrides: [0, 4, 1], bStrides: [0, 2, 1] };
    w.push(mm, 2);
    const batch = w.take();
    expect(batch.objects).toEqual([mm]);
    expect(readBatch(batch)).toEqual({ cmds: [mm], streams: [2] });
    expect(KINDS.matmul.wire).toBe('object');
  });

  it('every kind has one scope, one capture role and one wire form, and the derived sets partition as the runtime needs', () => {
    const kinds = Object.keys(KINDS) as CommandKind[];
    expect(kinds.length).toBeGreaterThan(40);
    for (const k of kinds) {
      const d = KINDS[k];
      // Exactly one capture role among the sets the executor and the facade consult.
      const roles = [CAPTURED_KINDS, PASSED_KINDS, COPY_KINDS].filter((s) => s.has(k)).length + (BOOKKEEPING_KINDS.has(k) && !PASSED_KINDS.has(k) ? 1 : 0);
      expect(roles <= 1, `${k} has ${roles} capture roles`).toBe(true);
      // A device-scope kind is never captured: it belongs to no stream.
      if (d.scope === 'device') expect(CAPTURED_KINDS.has(k), k).toBe(false);
      // Kernels are traced by the profiler; memory and peers are not.
      if (CAPTURED_KINDS.has(k)) expect(UNTRACED_KINDS.has(k), k).toBe(false);
    }
    expect([...DEVICE_KINDS].sort()).toEqual(['abortTags', 'connect', 'dropScratch', 'graphReset', 'release', 'segment', 'signal']);
    expect([...COPY_KINDS].sort()).toEqual(['readHost', 'recv', 'send', 'signal', 'waitSignal', 'write', 'writeHost']);
    // `call` is made inside the worker: it must never be packed or sent.
    expect(KINDS.call.wire).toBe('worker');
  });

  it('a composable kind is device work a graph captures: an op may compose it from other kernels instead', () => {
    for (const k of COMPOSABLE_KINDS) {
      expect(k in KINDS, k).toBe(true);
      expect(CAPTURED_KINDS.has(k), k).toBe(true);
    }
    expect(new Set(COMPOSABLE_KINDS).size).toBe(COMPOSABLE_KINDS.length);
  });
});
