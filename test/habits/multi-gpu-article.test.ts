/**
 * Seed 001, the article on GPU memory and multiple GPUs: moving tensors, cuda(n), get_device,
 * set_device, new_* functions, modules moved in place. (DataParallel and model parallelism are
 * left to the multi-GPU issue; see setup.ts.)
 */
import { describe, expect, it } from 'vitest';
import * as torch from '../../dist/webtorch.js';
import { habitsSetup } from './setup.js';

const { nn } = torch;
habitsSetup();

describe('article: moving tensors around CPU / GPUs', () => {
  it('to(device) after is_available, and to(0)', async () => {
    let dev: string;
    if (await torch.gpu.isAvailable()) dev = 'cuda:0';
    else dev = 'cpu';
    const device = torch.device(dev);
    let a = torch.zeros([4, 3]); // Initialize a tensor of zeros
    const a0 = a;
    a = a.to(device); // Move the tensor to the selected device
    expect(String(a.device)).toBe('gpu:0');
    const a1 = a;
    a = a.to(0); // Move tensor 'a' to GPU 0
    expect(a === a1).toBe(true);
    expect(String(a.device)).toBe('gpu:0');
    for (const t of [a0, a1]) t.dispose();
  });

  it('cuda(n), and modules moved in place by to() / cuda()', async () => {
    class MyNetwork extends nn.Module {
      fc = new nn.Linear(2, 2);
      forward(x: torch.Tensor): torch.Tensor {
        return this.fc(x);
      }
    }
    let clf = new MyNetwork();
    clf.to(torch.device('cuda:0')); // Move the network to GPU 0, no assignment needed
    expect(String(clf.fc.weight.device)).toBe('gpu:0');
    clf = clf.cuda(); // Equivalent to the previous line
    expect(String(clf.fc.weight.device)).toBe('gpu:0');
    const t = torch.ones([2]);
    const g = t.cuda();
    const g2 = t.cuda(2);
    expect([String(g.device), String(g2.device)]).toEqual(['gpu:0', 'gpu:2']);
    for (const x of [t, g, g2, ...clf.parameters()]) x.dispose();
  });

  it('get_device, then a new tensor on the same device; set_device', async () => {
    const dev = 'cuda:1';
    const t1 = torch.randn([2, 5], { device: dev });
    const a = t1.getDevice(); // Get the device index of tensor 't1'
    expect(a).toBe(1);
    // torch.tidy frees the cpu temporary of a one-line chain at once (the garbage collector would, later)
    const b = torch.tidy(() => torch.tensor(t1.shape).to(dev)); // Create tensor 'b' on the same device as 't1'
    expect(String(b.device)).toBe('gpu:1');
    expect(((await b.tolist()) as unknown[]).map(Number)).toEqual([2, 5]); // int64: numbers or BigInts
    torch.gpu.setDevice(1); // Set the default GPU to 1
    const c = torch.tidy(() => torch.ones([2]).cuda());
    expect(String(c.device)).toBe('gpu:1');
    torch.gpu.setDevice(0); // Set the default GPU to 0
    const d = torch.tidy(() => torch.ones([2]).cuda());
    expect(String(d.device)).toBe('gpu:0');
    expect(() => t1.add(d)).toThrow('Expected all tensors to be on the same device');
    for (const x of [t1, b, c, d]) x.dispose();
    await torch.gpu.synchronize();
  });

  it('new_* functions keep dtype and device', async () => {
    const ones = torch.tidy(() => torch.ones([2]).cuda(0)); // a tensor of ones of size (2,) on GPU 0
    const newOnes = ones.newOnes([3, 4]); // (new_ones is the same function)
    expect(String(newOnes.device)).toBe('gpu:0');
    expect(newOnes.dtype).toBe('float32');
    expect(newOnes.shape).toEqual([3, 4]);
    const z = ones.new_zeros([2]);
    const f = ones.new_full([2], 7);
    const e = ones.new_empty([2]);
    expect([z, f, e].map((x) => String(x.device))).toEqual(['gpu:0', 'gpu:0', 'gpu:0']);
    expect(await f.tolist()).toEqual([7, 7]);
    const randTensor = torch.randn([2, 4]); // on the CPU: torch.randn does not follow 'ones'
    expect(String(randTensor.device)).toBe('cpu');
    for (const x of [ones, newOnes, z, f, e, randTensor]) x.dispose();
  });
});
