/**
 * Device checks of the gpu worker (see DeviceCheck in protocol.ts; `errorBinding` in
 * wgsl/index.ts): kernels that find bad data (an index out of range, a division by zero) write a
 * code into the device's error words, which the next sync point copies out and throws.
 */
import { device } from './core.js';
import { contextBuffer } from '../scratch.js';

/** The device's error words, and the messages of checking dispatches since the last check, with their codes. */
export let deviceErrors: GPUBuffer | null = null;
/** The mappable copy of `deviceErrors` that sync points read, kept between them. */
let errorStaging: GPUBuffer | null = null;
/** Whether a sync point has recorded a copy into `errorStaging` and not yet read it. */
let errorStagingTaken = false;
/** The checks (message, code) of the dispatches since the last sync point. */
export const checkCodes = new Map<string, number>();

/**
 * Registers a checking dispatch of command `k` (and creates the error buffer, which the caller
 * binds after its storages); returns the code its kernel records on bad data, one per message.
 */
export function checkCode(k: string, message: string): number {
  deviceErrors ??= contextBuffer(device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST }));
  const key = `${k} failed on device: ${message}`;
  let code = codeOf.get(key);
  if (code === undefined) codeOf.set(key, (code = messages.push(key)));
  checkCodes.set(key, code);
  captured?.set(key, code);
  return code;
}

/**
 * Every message's code, for the life of the worker: a captured graph's kernels keep the codes
 * written into their params at capture, so a code never changes meaning (`messages[code - 1]`).
 */
const codeOf = new Map<string, number>();
const messages: string[] = [];
/** While a graph is captured: the checks its kernels make. */
let captured: Map<string, number> | null = null;

/** Starts (a map) or ends (null) collecting the checks of a graph being captured. */
export function collectChecks(into: Map<string, number> | null): void {
  captured = into;
}

/** A replayed graph's checks: the next sync point reads the error words for them. */
export function armChecks(checks: Map<string, number>): void {
  for (const [k, c] of checks) checkCodes.set(k, c);
}

/**
 * For a sync point: records in `enc` the copy of the error words to a mappable buffer (and
 * their clear), to go in the sync point's own submit. Returns null when no checking dispatch
 * ran since the last check, else the check, which maps the copy once `enc` has been submitted
 * (`flush`) and throws the first failed check with its message.
 */
export function recordDeviceCheck(enc: GPUCommandEncoder): Promise<void> | null {
  if (!checkCodes.size) return null;
  checkCodes.clear();
  // A kept staging buffer: creating a mappable buffer per check cost about 0.7 ms on the H100's
  // Vulkan driver, a tenth of that to reuse one (BENCHMARKS.md, "The sync point").
  errorStaging ??= contextBuffer(device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }));
  const staging = errorStaging.mapState === 'unmapped' && !errorStagingTaken ? errorStaging : device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  if (staging === errorStaging) errorStagingTaken = true;
  enc.copyBufferToBuffer(deviceErrors!, 0, staging, 0, 16);
  enc.clearBuffer(deviceErrors!);
  // Mapped after the submit (a buffer pending a map cannot be used in one); the caller flushes first.
  return Promise.resolve().then(async () => {
    try {
      await staging.mapAsync(GPUMapMode.READ);
      const [code, lo, hi] = new Uint32Array(staging.getMappedRange().slice(0));
      staging.unmap();
      // the bad value's two words (wgsl/index.ts `fail64`): an int64
      if (code) throw new Error(messages[code - 1].replace('%d', String(BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)))));
    } finally {
      if (staging === errorStaging) errorStagingTaken = false;
      else staging.destroy();
    }
  });
}

/** The low and high 32-bit words (as int32 bit patterns) of an integer-valued number in int64's range. */
export function words64(v: number): [number, number] {
  const b = BigInt.asUintN(64, BigInt(Math.trunc(v)));
  return [Number(b & 0xffffffffn) | 0, Number(b >> 32n) | 0];
}