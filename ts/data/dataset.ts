/**
 * `Dataset` and `TensorDataset`. A dataset maps an index to an item; `TensorDataset` holds
 * tensors whose first dims are the samples and serves whole batches with one gather per tensor
 * on the tensors' own device, so batching never reads data back to the calling thread.
 */
import { tensor } from '../ops/creation.js';
import { indexSelect } from '../ops/indexing.js';
import { select } from '../ops/views.js';
import type { Tensor } from '../tensor.js';

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

  /** The samples at `indices`, batched: one gather per tensor, on the tensor's device. */
  getBatch(indices: number[]): Tensor[] {
    const byDevice = new Map<Tensor['device'], Tensor>();
    const idx = (t: Tensor) => {
      let i = byDevice.get(t.device);
      if (!i) byDevice.set(t.device, (i = tensor(Int32Array.from(indices), { dtype: 'int64', device: t.device })));
      return i;
    };
    const out = this.tensors.map((t) => indexSelect(t, 0, idx(t)));
    byDevice.forEach((i) => i.dispose());
    return out;
  }
}
