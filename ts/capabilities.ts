/**
 * `torch.gpu.canDeviceAccessPeer(device, peerDevice)` and `torch.gpu.isTf32Supported()`: two
 * questions whose truthful answer on WebGPU is no.
 *
 * Peer access: every `gpu:N` is its own `GPUDevice`, in its own worker (logical devices on one
 * adapter included), and WebGPU gives one device no way to bind, map or copy another device's
 * buffers. So a kernel never reads a peer's memory, and a copy between devices goes through the
 * host: the source worker copies into a staging buffer and maps it (`mapAsync`, the GPU→host
 * read), the bytes travel to the destination worker (a transferred message, in 4 MiB chunks
 * above 8 MiB), and the destination writes them (`queue.writeBuffer`, the host→GPU upload). That
 * is a read-back plus an upload plus one host copy per chunk, where CUDA with peer access moves
 * the bytes over NVLink or PCIe once (README, "Copies between devices").
 *
 * TF32: WebGPU has no TF32 (nor any tensor-core) arithmetic, so float32 matmuls and convolutions
 * are full float32 whatever `torch.backends.cuda.matmul.allowTf32` says (ts/backends.ts).
 */
import { device as toDevice, type DeviceLike } from './device.js';
import { bindArgs, REQUIRED } from './args.js';

/**
 * `torch.gpu.canDeviceAccessPeer(device, peerDevice)` (`torch.cuda.can_device_access_peer`):
 * false for every pair of GPU devices, since no WebGPU device can reach another's memory (see
 * the file's note). Both must be valid GPU devices (after `await torch.gpu.init()`).
 */
export function canDeviceAccessPeer(...args: [device: DeviceLike, peerDevice: DeviceLike] | [device: DeviceLike, options: { peerDevice: DeviceLike }] | [options: { device: DeviceLike; peerDevice: DeviceLike }]): boolean {
  const o = bindArgs('can_device_access_peer', ['device', 'peerDevice'], args, { device: REQUIRED as DeviceLike, peerDevice: REQUIRED as DeviceLike });
  for (const d of [o.device, o.peerDevice]) {
    if (toDevice(d).type !== 'gpu') throw new TypeError(`can_device_access_peer(): Expected a gpu device, but got: ${String(d)}`);
  }
  return false;
}

/**
 * `torch.gpu.isTf32Supported()` (`torch.cuda.is_tf32_supported`): false. WebGPU has no TF32
 * arithmetic; float32 matmuls are full float32 whatever the TF32 flags say (ts/backends.ts).
 */
export function isTf32Supported(): boolean {
  return false;
}
