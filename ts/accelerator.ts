/**
 * `torch.accelerator` (PyTorch 2.6+, what the current tutorials open with:
 * `device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"`).
 * The accelerator is the GPU (WebGPU); finding out whether there is one starts the GPU runtime,
 * so `isAvailable`, `currentAccelerator` and `deviceCount` are Promises here.
 *
 *     const device = (await torch.accelerator.isAvailable()) ? (await torch.accelerator.currentAccelerator())!.type : 'cpu';
 */
import { device, Device, type DeviceLike, currentDevice, deviceCount as gpuCount, isAvailable as gpuAvailable, setDevice, synchronize as gpuSynchronize } from './device.js';
import { bindArgs, REQUIRED, type PyArgs } from './args.js';

/** Whether an accelerator (a usable GPU) is available. */
export const isAvailable = (): Promise<boolean> => Promise.resolve(gpuAvailable());

/** The number of accelerator devices. */
export const deviceCount = (): Promise<number> => gpuCount();

/**
 * The accelerator's device type as a device (`gpu`, at the current index), or null when there is
 * none; with `checkAvailable: false` (PyTorch's default) the GPU is named even when none is usable.
 */
export async function currentAccelerator(...args: PyArgs<[checkAvailable: boolean], { checkAvailable?: boolean }>): Promise<Device | null> {
  const { checkAvailable } = bindArgs('current_accelerator', ['checkAvailable'], args, { checkAvailable: false });
  if (checkAvailable && !(await gpuAvailable())) return null;
  return device(`gpu:${currentDevice()}`);
}

/** The current accelerator index (`torch.accelerator.current_device_index()`). */
export const currentDeviceIndex = (): number => currentDevice();

/** Sets the current accelerator index (`torch.accelerator.set_device_index(device)`). */
export function setDeviceIndex(...args: [device: DeviceLike] | [{ device: DeviceLike }]): void {
  const { device: d } = bindArgs('set_device_index', ['device'], args, { device: REQUIRED as DeviceLike });
  setDevice(d);
}

/** Waits for the accelerator's queued work (one device, or all). */
export const synchronize = (...args: [device?: DeviceLike | null] | [{ device?: DeviceLike | null }]): Promise<void> => gpuSynchronize(...args);
