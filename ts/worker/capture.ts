/**
 * A device worker's graphs: capturing streams, the graphs captured, replay and reset.
 *
 * From `captureBegin` to `captureEnd` a capturing stream's commands are kept under the graph's
 * id instead of run (CUDA runs nothing during capture). What each kind is to a capture is its
 * row in ts/ir/kinds.ts: kernels are kept (`CAPTURED_KINDS`), the stream's bookkeeping (marks,
 * event records, profiler tags, reads' calls) runs as usual (`PASSED_KINDS`), and anything else
 * (a copy from the host or a peer, a replay) fails the capture, which `captureEnd` then reports.
 * At `captureEnd` the backend prepares the list for replay where it can (`Backend.captureGraph`:
 * the gpu's ts/worker/gpu/graphs.ts); a backend without it (the cpu) has its graphs replayed
 * here, command by command through `run`, each draw's Philox counter moved by the replay's offset.
 */
import type { Backend } from './backend.js';
import type { GraphInfo } from './protocol.js';
import { bumpCounter, type Command } from '../ir/commands.js';
import { CAPTURED_KINDS, PASSED_KINDS } from '../ir/kinds.js';

/** One device's captures and graphs. */
export class Capture {
  /** Per stream: the graph it is capturing (its commands, and why the capture failed, if it did). */
  private readonly capturing = new Map<number, { graph: number; cmds: Command[]; error: Error | null }>();
  /** The graphs captured on this device. */
  private readonly graphs = new Map<number, { cmds: Command[]; info: GraphInfo | null; error: Error | null }>();

  constructor(private readonly backend: Backend) {}

  /** Whether any stream is capturing (the one check a command pays while none is). */
  get active(): boolean {
    return this.capturing.size > 0;
  }

  /**
   * Takes a command of a capturing stream instead of running it: keeps a kernel, fails the
   * capture on a command it cannot hold. False where the command runs as usual (its stream is
   * not capturing, or the command is bookkeeping or ends the capture).
   */
  take(cmd: Command, stream: number): boolean {
    const c = this.capturing.get(stream);
    if (!c || cmd.k === 'captureEnd' || PASSED_KINDS.has(cmd.k)) return false;
    if (CAPTURED_KINDS.has(cmd.k)) c.cmds.push(cmd);
    else c.error ??= new Error(`operation not permitted when stream is capturing: a '${cmd.k}' command cannot be captured in a graph`);
    return true;
  }

  /** `captureBegin`: `stream`'s commands go to graph `cmd.graph` from now on. */
  begin(cmd: Extract<Command, { k: 'captureBegin' }>, stream: number): void {
    this.capturing.set(stream, { graph: cmd.graph, cmds: [], error: null });
  }

  /** `captureEnd`: the graph is kept (prepared by the backend where it can), or why it failed. */
  end(cmd: Extract<Command, { k: 'captureEnd' }>, stream: number): void {
    const c = this.capturing.get(stream);
    this.capturing.delete(stream);
    if (!c || c.graph !== cmd.graph) throw new Error(`capture_end: graph ${cmd.graph} is not being captured on stream ${stream}`);
    let info: GraphInfo | null = null, error = c.error;
    if (!error) {
      try {
        const dispatches = this.backend.captureGraph ? this.backend.captureGraph(cmd.graph, c.cmds, cmd.fuse, cmd.live ?? []) : c.cmds.length;
        info = { commands: c.cmds.length, dispatches };
      } catch (e) {
        error = e instanceof Error ? e : new Error(String(e));
      }
    }
    this.graphs.set(cmd.graph, { cmds: c.cmds, info, error });
  }

  /** `replay`: the graph's work, after the work recorded so far. */
  replay(cmd: Extract<Command, { k: 'replay' }>): void {
    const g = this.graphs.get(cmd.graph);
    if (!g) throw new Error(`replay: graph ${cmd.graph} was never captured on this device, or was reset`);
    if (g.error) throw new Error(`replay: the capture of graph ${cmd.graph} failed: ${g.error.message}`);
    const backend = this.backend;
    if (backend.replayGraph) return backend.replayGraph(cmd.graph, cmd.rng);
    const rng = cmd.rng;
    for (const c of g.cmds) backend.run(rng && c.k === 'random' ? { ...c, key: rng.key, counter: bumpCounter(c.counter, rng.delta) } : c);
  }

  /** `graphReset`: forgets the graph (and the backend's prepared form of it). */
  reset(cmd: Extract<Command, { k: 'graphReset' }>): void {
    this.graphs.delete(cmd.graph);
    this.backend.dropGraph?.(cmd.graph);
  }

  /** What graph `graph` holds (`WorkerApi.graphInfo`); throws why it has nothing. */
  info(graph: number): GraphInfo {
    const g = this.graphs.get(graph);
    if (!g) throw new Error(`graph ${graph} was never captured on this device, or was reset`);
    if (g.error) throw g.error;
    return g.info!;
  }
}
