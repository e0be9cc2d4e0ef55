/** Work that keeps a device busy for a while and gives back its input exactly (the concurrency tests hold a stream back with it). */
import * as torch from '../../dist/webtorch.js';

/** `steps` products with the identity: long work whose result is `x` exactly. */
export function longWork(x: torch.Tensor, steps: number): torch.Tensor {
  const eye = torch.eye(x.shape[0], { device: x.device });
  let y = x;
  for (let i = 0; i < steps; i++) {
    const t = y.matmul(eye);
    if (y !== x) y.dispose();
    y = t;
  }
  eye.dispose();
  return y;
}
