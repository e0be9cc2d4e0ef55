// Errors raised by the caching allocator and the size format of their messages.
//
// Rules: the out-of-memory message keeps PyTorch's sentence shape so that
// users (and tools that grep logs) recognise it; only the device wording and
// the framework name differ. Sizes use PyTorch's C++ format_size: up to 1024
// bytes as "N bytes", then KiB up to 1 MiB inclusive, MiB up to 1 GiB
// inclusive, then GiB, always with two decimals rounded half-to-even on exact
// ties (as printf does), so 1152 B prints "1.12 KiB".

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

function twoDecimals(bytes: number, unit: number): string {
  const scaled = (bytes * 100) / unit;
  const floor = Math.floor(scaled);
  const rest = scaled - floor;
  const hundredths = rest > 0.5 || (rest === 0.5 && floor % 2 === 1) ? floor + 1 : floor;
  const whole = Math.floor(hundredths / 100);
  return `${whole}.${String(hundredths - whole * 100).padStart(2, "0")}`;
}

/**
 * Formats a byte count like PyTorch's out-of-memory messages
 * (`512 bytes`, `1.50 KiB`, `20.00 MiB`, `7.63 GiB`).
 */
export function formatSize(bytes: number): string {
  if (bytes <= KiB) return `${bytes} bytes`;
  if (bytes <= MiB) return `${twoDecimals(bytes, KiB)} KiB`;
  if (bytes <= GiB) return `${twoDecimals(bytes, MiB)} MiB`;
  return `${twoDecimals(bytes, GiB)} GiB`;
}

/** Figures behind an out-of-memory failure, all in bytes. */
export interface OutOfMemoryDetails {
  /** Device as named in the message, e.g. `GPU 0` or `CPU`. */
  device: string;
  /** Size the caller asked for. */
  requestedBytes: number;
  /** Size of the segment the allocator tried to create for it. */
  allocationBytes: number;
  /** Total capacity of the device. */
  capacity: number;
  /** Capacity not reserved by this allocator. */
  free: number;
  /** Budget when a memory fraction below 1 is set, else undefined. */
  allowed?: number;
  /** Bytes in live allocations. */
  allocated: number;
  /** Bytes reserved in segments but not allocated. */
  reservedUnallocated: number;
}

/** Builds PyTorch's out-of-memory sentence from its figures. */
export function outOfMemoryMessage(d: OutOfMemoryDetails): string {
  const allowed = d.allowed === undefined ? "" : `${formatSize(d.allowed)} allowed; `;
  return (
    `Tried to allocate ${formatSize(d.allocationBytes)}. ${d.device} has a total capacity of ` +
    `${formatSize(d.capacity)} of which ${formatSize(d.free)} is free. ${allowed}` +
    `Of the allocated memory ${formatSize(d.allocated)} is allocated by webtorch, and ` +
    `${formatSize(d.reservedUnallocated)} is reserved by webtorch but unallocated.`
  );
}

/** Thrown when an allocation cannot be served even after releasing the cache. */
export class OutOfMemoryError extends Error {
  /** The figures quoted in the message (null when the device itself ran out, see below). */
  readonly details: OutOfMemoryDetails | null;

  /**
   * From the allocator's figures, or from a message when the device itself failed an allocation
   * the budget allowed (a WebGPU `out-of-memory` error, reported at the next sync point).
   * `cause` is set when the host's createSegment threw.
   */
  constructor(details: OutOfMemoryDetails | string, options?: { cause?: unknown }) {
    super(typeof details === "string" ? details : outOfMemoryMessage(details), options);
    this.name = "OutOfMemoryError";
    this.details = typeof details === "string" ? null : details;
  }
}

/** Why a block handle was refused. */
export type BlockErrorReason = "already-freed" | "unknown";

/** Thrown for a double free or a handle this allocator never issued. */
export class BlockError extends Error {
  /** The handle that was passed in. */
  readonly block: unknown;
  /** `already-freed` (double free) or `unknown` (foreign or made-up handle). */
  readonly reason: BlockErrorReason;

  /** Builds the message from the handle, the reason and the allocator label. */
  constructor(block: unknown, reason: BlockErrorReason, label: string) {
    super(
      reason === "already-freed"
        ? `block ${String(block)} was already freed`
        : `block ${String(block)} is not a block of the ${label} allocator`,
    );
    this.name = "BlockError";
    this.block = block;
    this.reason = reason;
  }
}
