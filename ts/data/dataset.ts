/**
 * `Dataset` and `TensorDataset`. A dataset maps an index to an item; `TensorDataset` holds
 * tensors whose first dims are the samples and serves whole batches by copying the chosen rows
 * on the tensors' own device, so batching never reads data back to the calling thread.
 */
import { alloc, code, launch, place, ref } from '../runtime/dispatch.js';
import { select } from '../ops/views.js';
import type { Tensor } from '../tensor.js';

/** Copies rows `indices` of `t` (along dim 0) into a new tensor, one copy command per row. */
export function gatherRows(t: Tensor, indices: number[]): Tensor {
  const out = alloc([indices.length, ...t.shape.slice(1)], t.dtype, t.device);
  const rowElems = out.numel() / Math.max(1, indices.length), p = place(out);
  if (rowElems) {
    indices.forEach((i, k) => {
      const row = select(t, 0, i);
      launch(t.device, {
        k: 'copyInto', src: ref(row), srcDt: code(t), dt: code(out), shape: row.shape.slice(),
        dst: { id: p.id, offset: p.offset + k * rowElems, strides: out._strides.slice(1) },
      });
      row.dispose();
    });
  }
  return out;
}

/** A map-style dataset (PyTorch's `torch.utils.data.Dataset`). */
export abstract class Dataset<T = Tensor[]> {
  /** Number of samples. */
  abstract get length(): number;
  /** The sample at `index`. */
  abstract getItem(index: number): T;
}

/** Samples are slices along dim 0 of equally long tensors (`TensorDataset(X, y)`). */
export class TensorDataset extends Dataset<Tensor[]> {
  readonly tensors: Tensor[];

  constructor(...tensors: Tensor[]) {
    super();
    if (!tensors.length) throw new TypeError('TensorDataset: at least one tensor is required');
    const n = tensors[0].shape[0];
    const bad = tensors.find((t) => t.ndim === 0 || t.shape[0] !== n);
    if (bad) {
      throw new RangeError(`Size mismatch between tensors: TensorDataset needs tensors of equal length along dim 0, got ${tensors.map((t) => `[${t.shape.join(', ')}]`).join(', ')}`);
    }
    this.tensors = tensors;
  }

  get length(): number {
    return this.tensors[0].shape[0];
  }

  getItem(index: number): Tensor[] {
    return this.tensors.map((t) => select(t, 0, index));
  }

  /** The samples at `indices`, batched. */
  getBatch(indices: number[]): Tensor[] {
    return this.tensors.map((t) => gatherRows(t, indices));
  }
}
