/**
 * `prof.exportChromeTrace`: the profile as Chrome trace-event JSON, which Perfetto
 * (ui.perfetto.dev) and chrome://tracing open. Process 0 is the calling thread (its ops and
 * ranges, nested by time); each device is a process with one thread per stream holding its
 * kernels; a flow arrow ("ph": "s" at the op, "f" at the kernel) links each op to each of its
 * kernels; memory events are instant events named "[memory]" (PyTorch's name) on the caller's
 * track, with a counter per device of the bytes allocated.
 */
import type { ProfileData } from './table.js';

/** One trace event (the fields the viewers read). */
export interface TraceEvent {
  name: string;
  ph: string;
  pid: number;
  tid: number;
  ts?: number;
  dur?: number;
  cat?: string;
  id?: number;
  bp?: string;
  s?: string;
  args?: Record<string, unknown>;
}

/** The trace of a profile: `{traceEvents, displayTimeUnit}`, times in microseconds from `start`. */
export function chromeTrace(data: ProfileData, start: number): { traceEvents: TraceEvent[]; displayTimeUnit: string } {
  const us = (t: number) => Math.round((t - start) * 1000 * 1000) / 1000;
  const ev: TraceEvent[] = [];
  const meta = (name: 'process_name' | 'thread_name' | 'process_sort_index', pid: number, tid: number, value: string | number) =>
    ev.push({ name, ph: 'M', pid, tid, args: name === 'process_sort_index' ? { sort_index: value } : { name: value } });
  meta('process_name', 0, 0, 'caller');
  meta('thread_name', 0, 0, 'main thread (ops and ranges)');
  meta('process_sort_index', 0, 0, 0);
  const devices = [...new Set([...data.kernels.map((k) => k.device), ...data.memory.map((m) => m.device)])].sort();
  const pidOf = new Map(devices.map((d, i) => [d, i + 1]));
  for (const [d, pid] of pidOf) {
    meta('process_name', pid, 0, d);
    meta('process_sort_index', pid, 0, pid);
  }
  const streams = new Set(data.kernels.map((k) => `${k.device}#${k.stream}`));
  for (const s of streams) {
    const [d, id] = s.split('#');
    meta('thread_name', pidOf.get(d)!, Number(id), `stream ${id}`);
  }
  const byId = new Map(data.events.map((e) => [e.id, e]));
  if (data.cpu) {
    for (const e of data.events) {
      const args: Record<string, unknown> = { 'External id': e.id };
      if (e.device) args.device = e.device;
      if (e.kind === 'op') args.stream = e.stream;
      if (e.shapes) args['Input Dims'] = e.shapes;
      if (e.stack) args['Call stack'] = e.stack;
      ev.push({ name: e.name, ph: 'X', cat: e.kind === 'op' || e.autograd ? 'cpu_op' : 'user_annotation', pid: 0, tid: 0, ts: us(e.t0), dur: us(e.t1) - us(e.t0), args });
    }
  }
  let flow = 1;
  for (const k of data.kernels) {
    const pid = pidOf.get(k.device)!;
    const args: Record<string, unknown> = { device: k.device, stream: k.stream, 'External id': k.op };
    if (k.deviceMs === null) args['device time'] = 'unknown (no timestamp queries): the worker recorded it here';
    ev.push({ name: k.name, ph: 'X', cat: 'kernel', pid, tid: k.stream, ts: us(k.t0), dur: Math.max(0, us(k.t1) - us(k.t0)), args });
    const op = byId.get(k.op);
    if (op && data.cpu) {
      const id = flow++;
      ev.push({ name: 'launch', ph: 's', cat: 'ac2g', id, pid: 0, tid: 0, ts: us(op.t0) });
      ev.push({ name: 'launch', ph: 'f', bp: 'e', cat: 'ac2g', id, pid, tid: k.stream, ts: us(k.t0) });
    }
  }
  for (const m of data.memory) {
    ev.push({ name: '[memory]', ph: 'i', s: 't', cat: 'cpu_instant_event', pid: 0, tid: 0, ts: us(m.t), args: { Device: m.device, Bytes: m.bytes, 'Total Allocated': m.total } });
    ev.push({ name: 'allocated bytes', ph: 'C', pid: pidOf.get(m.device)!, tid: 0, ts: us(m.t), args: { bytes: m.total } });
  }
  return { traceEvents: ev, displayTimeUnit: 'ms' };
}
