/**
 * Checkpoints (issue 31): `torch.save`/`torch.load` in PyTorch's `.pt` format and safetensors.
 * PyTorch's files (test/fixtures/make_checkpoints.py, PyTorch 1.13) load into the same webtorch
 * models and give PyTorch's outputs on cpu and gpu:0; webtorch's files round-trip (modules,
 * optimizers that then train on as an uninterrupted run, GradScaler, RNG states) and PyTorch
 * reads them (test/fixtures/read_webtorch_checkpoint.py); corrupt, truncated and lying files raise,
 * and nothing leaks (the leak check after each test).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { unzipSync, zipSync } from 'fflate';
import * as torch from '../../dist/webtorch.js';
import { logicalGpuSuite } from '../devices.js';

const { nn } = torch;
const devices = logicalGpuSuite(2, 'checkpoints');
const FIX = join(import.meta.dirname, '..', 'fixtures', 'checkpoints');
const fix = (name: string) => join(FIX, name);
const golden = JSON.parse(readFileSync(fix('checkpoints.json'), 'utf8'));
const tmp = mkdtempSync(join(tmpdir(), 'webtorch-ckpt-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const mlp = (d: string) => new nn.Sequential(new nn.Linear(4, 8), new nn.ReLU(), new nn.Linear(8, 3)).to(d);
const cnn = (d: string) => new nn.Sequential(new nn.Conv2d(1, 2, 3, { padding: 1 }), new nn.BatchNorm2d(2), new nn.ReLU(), new nn.Flatten(), new nn.Linear(32, 3)).to(d);
/** Disposes every tensor in a nested value (a loaded checkpoint), a module's, or an optimizer's state. */
function free(...xs: unknown[]): void {
  for (const x of xs) {
    if (x instanceof torch.Tensor) x.dispose();
    else if (x instanceof nn.Module) [...x.parameters(), ...x.buffers()].forEach((t) => { t.grad?.dispose(); t.dispose(); });
    else if (x instanceof torch.optim.Optimizer) x.state.forEach((s) => free(s));
    else if (Array.isArray(x)) free(...x);
    else if (x && typeof x === 'object') free(...Object.values(x));
  }
}
const input = (data: number[], shape: number[], d: string) => torch.tidy(() => torch.tensor(data, { device: d }).reshape(shape));
function close(got: number[], want: number[], tol: number, what = ''): void {
  expect(got.length, what).toBe(want.length);
  got.forEach((g, i) => expect(Math.abs(g - want[i]), `${what}[${i}]: ${g} vs ${want[i]}`).toBeLessThanOrEqual(tol * (1 + Math.abs(want[i]))));
}
const onDevices = () => devices.filter((d) => d === 'cpu' || d === 'gpu:0');

describe("PyTorch's checkpoints run in webtorch as in PyTorch", () => {
  it('an MLP state dict (.pt): same outputs on cpu and gpu:0', async () => {
    for (const d of onDevices()) {
      const net = mlp(d);
      const sd = await torch.load(fix('mlp.pt'), { mapLocation: d });
      expect(String(sd['0.weight'].device)).toBe(d);
      expect(net.loadStateDict(sd)).toEqual({ missingKeys: [], unexpectedKeys: [] });
      const x = input(golden.mlp.x, [5, 4], d);
      const y = torch.tidy(() => net(x));
      close((await y.values()) as number[], golden.mlp.y, 1e-5, d);
      free(net, sd, x, y);
    }
  });

  it('a CNN with BatchNorm2d buffers (int64 num_batches_tracked), in eval', async () => {
    for (const d of onDevices()) {
      const net = cnn(d).eval();
      const sd = await torch.load(fix('cnn.pt'), d);
      expect([sd['1.num_batches_tracked'].dtype, await sd['1.num_batches_tracked'].item()]).toEqual(['int64', golden.cnn.num_batches_tracked]);
      net.loadStateDict(sd);
      const x = input(golden.cnn.x, [2, 1, 4, 4], d);
      const y = torch.tidy(() => net(x));
      close((await y.values()) as number[], golden.cnn.y, 1e-5, d);
      free(net, sd, x, y);
    }
  });

  it("Adam's state dict after one step: the next step gives PyTorch's parameters", async () => {
    for (const d of onDevices()) {
      const net = mlp(d);
      const weights = await torch.load(fix('mlp_step1.pt'), { mapLocation: d });
      net.loadStateDict(weights);
      const opt = new torch.optim.Adam(net.parameters(), { lr: 0.5 });
      const sd = await torch.load(fix('adam.pt')); // its state is on the cpu; loadStateDict moves it
      expect(sd.param_groups[0].lr).toBe(0.01);
      opt.loadStateDict(sd);
      expect(opt.paramGroups[0].lr).toBe(0.01);
      expect(String((opt.state.get(net.parameters()[0])!.expAvg as torch.Tensor).device)).toBe(d);
      const x = input(golden.mlp.x, [5, 4], d), target = input(golden.mlp.target, [5, 3], d);
      const loss = torch.tidy(() => net(x).sub(target).square().mean());
      loss.backward();
      opt.step();
      for (const [k, t] of Object.entries(net.stateDict())) close((await t.values()) as number[], golden.adam.params_after_step2[k], 1e-5, `${d} ${k}`);
      free(net, opt, weights, sd, x, target, loss);
    }
  });

  it('every dtype webtorch holds, a view sharing its storage, nested lists, tuples and numbers', async () => {
    const sd = await torch.load(fix('dtypes.pt'));
    const g = golden.dtypes;
    expect(Object.keys(sd)).toEqual(['f32', 'f16', 'bf16', 'i64', 'i32', 'u8', 'bool', 'w', 'wt', 'scalar', 'nested']);
    expect(['f32', 'f16', 'bf16', 'i64', 'i32', 'u8', 'bool'].map((k) => sd[k].dtype)).toEqual(['float32', 'float16', 'bfloat16', 'int64', 'int32', 'uint8', 'bool']);
    for (const k of ['f32', 'f16', 'bf16', 'i32', 'u8', 'bool']) expect(await sd[k].values(), k).toEqual(g[k]);
    expect(await sd.i64.values()).toEqual(g.i64.map((v: string) => (Number.isSafeInteger(Number(v)) ? Number(v) : BigInt(v))));
    expect([sd.wt.shape, sd.wt.stride(), await sd.wt.values()]).toEqual([[3, 2], g.wt_stride, g.wt]);
    expect(sd.wt.storage).toBe(sd.w.storage); // one storage, as in the file
    expect([sd.scalar.shape, await sd.scalar.item()]).toEqual([[], 4]);
    expect(sd.nested).toEqual({ list: [1, 2.5, 'three', null, true], tuple: [1, 2], big: 2n ** 70n, neg: -3 });
    free(sd);
  });

  it('a safetensors file written by hand: every dtype, the shapes and __metadata__, on cpu and gpu:0', async () => {
    const want = golden.safetensors;
    expect(await torch.safetensors.metadata(fix('hand.safetensors'))).toEqual(want.metadata);
    for (const d of onDevices()) {
      const sd = await torch.safetensors.loadFile(fix('hand.safetensors'), d);
      expect(Object.keys(sd).sort()).toEqual(Object.keys(want.tensors).sort());
      for (const [k, w] of Object.entries<any>(want.tensors)) {
        expect([sd[k].dtype, sd[k].shape, String(sd[k].device)], k).toEqual([w.dtype, w.shape, d]);
        const vals = await sd[k].values();
        if (w.dtype === 'int64') expect(vals.map(String)).toEqual(w.data);
        else close(vals.map(Number), w.data.map(Number), 0, k);
      }
      free(sd);
    }
    const same = await torch.load(fix('hand.safetensors')); // torch.load reads safetensors too
    expect(await same.count.item()).toBe(2 ** 40 + 3);
    free(same);
  });
});

describe('webtorch round trips', () => {
  it('a module: values, dtypes, devices; mapLocation as a device, a table and a function', async () => {
    for (const d of onDevices()) {
      const net = cnn(d);
      const path = join(tmp, `cnn-${d.replace(':', '')}.pt`);
      await torch.save(net.stateDict(), path);
      const same = await torch.load(path);
      const onCpu = await torch.load(path, 'cpu');
      const table = await torch.load(path, { mapLocation: { 'cuda:0': 'gpu:1' } });
      const fn = await torch.load(path, { mapLocation: (loc: string) => (loc === 'cpu' ? null : 'cpu') });
      for (const [k, t] of Object.entries(net.stateDict())) {
        expect([same[k].dtype, same[k].shape, String(same[k].device)], k).toEqual([t.dtype, t.shape, d]);
        expect(await same[k].values(), k).toEqual(await t.values());
        expect(String(onCpu[k].device)).toBe('cpu');
        expect(String(table[k].device)).toBe(d === 'cpu' ? 'cpu' : 'gpu:1');
        expect(String(fn[k].device)).toBe('cpu');
      }
      const st = join(tmp, 'cnn.safetensors');
      await torch.save(net.stateDict(), st);
      const back = await torch.safetensors.loadFile(st, { device: d });
      for (const [k, t] of Object.entries(net.stateDict())) expect(await back[k].values(), k).toEqual(await t.values());
      free(net, same, onCpu, table, fn, back);
    }
    // A file tagged cuda:0 may be the first thing a program touches: the load finds the GPUs itself.
    const path = join(tmp, 'first.pt');
    const w = torch.ones([2], { device: 'gpu:0' });
    await torch.save({ w }, path);
    const script = `import * as torch from ${JSON.stringify(join(import.meta.dirname, '..', '..', 'dist', 'webtorch.js'))};
      const ck = await torch.load(${JSON.stringify(path)}); console.log(String(ck.w.device), JSON.stringify(await ck.w.tolist()));`;
    expect(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }).trim()).toBe('gpu:0 [1,1]');
    w.dispose();
  });

  it('an optimizer: save mid-training, load into a fresh model and optimizer, train on = the uninterrupted run', async () => {
    for (const d of onDevices()) {
      torch.manualSeed(3);
      const x = torch.randn([6, 4], { device: d }), target = torch.randn([6, 3], { device: d });
      const step = (net: torch.nn.Module, opt: torch.optim.Optimizer) => {
        opt.zeroGrad();
        const loss = torch.tidy(() => net(x).sub(target).square().mean());
        loss.backward();
        opt.step();
        loss.dispose();
      };
      const a = mlp(d), optA = new torch.optim.Adam(a.parameters(), { lr: 0.05, weightDecay: 0.01 });
      step(a, optA);
      step(a, optA);
      const path = join(tmp, 'train.pt');
      await torch.save({ model: a.stateDict(), optimizer: optA.stateDict(), epoch: 2 }, path);
      step(a, optA);
      step(a, optA);
      const b = mlp(d), optB = new torch.optim.Adam(b.parameters(), { lr: 0.5 });
      const ck = await torch.load(path);
      expect(ck.epoch).toBe(2);
      expect(ck.optimizer.param_groups[0]).toMatchObject({ lr: 0.05, weight_decay: 0.01, params: [0, 1, 2, 3] });
      b.loadStateDict(ck.model);
      optB.loadStateDict(ck.optimizer);
      step(b, optB);
      step(b, optB);
      const sa = a.stateDict(), sb = b.stateDict();
      for (const k of Object.keys(sa)) expect(await sb[k].values(), k).toEqual(await sa[k].values());
      a.zeroGrad();
      b.zeroGrad();
      free(a, b, optA, optB, ck, x, target);
    }
  });

  it('a GradScaler and the RNG states (cpu and gpu:0)', async () => {
    const scaler = new torch.amp.GradScaler('gpu', { initScale: 1024, growthInterval: 3 });
    const one = torch.ones([1], { device: 'gpu:0' }), scaled = scaler.scale(one);
    scaler.update(96);
    const path = join(tmp, 'amp-rng.pt');
    torch.manualSeed(11);
    await torch.save({ scaler: await scaler.stateDict(), cpu: torch.getRngState(), gpu: torch.gpu.getRngState(0) }, path);
    const draw = () => torch.tidy(() => [torch.rand([5]), torch.rand([5], { device: 'gpu:0' })]);
    const first = draw();
    const ck = await torch.load(path);
    expect([ck.cpu.dtype, ck.cpu.shape]).toEqual(['uint8', [16]]); // PyTorch's ByteTensor
    torch.setRngState((await ck.cpu.data()) as Uint8Array);
    torch.gpu.setRngState((await ck.gpu.data()) as Uint8Array, 0);
    const again = draw();
    for (let i = 0; i < 2; i++) expect(await again[i].values()).toEqual(await first[i].values());
    const restored = new torch.amp.GradScaler('gpu');
    restored.loadStateDict(ck.scaler);
    expect(await restored.stateDict()).toEqual({ scale: 96, growth_factor: 2, backoff_factor: 0.5, growth_interval: 3, _growth_tracker: 0 });
    expect(await restored.stateDict()).toEqual(await scaler.stateDict());
    scaler.dispose();
    restored.dispose();
    free(first, again, ck, one, scaled);
  });

  it('bytes without a path: a Uint8Array, an ArrayBuffer and a Blob load back (the browser form)', async () => {
    const t = torch.tensor([[1, 2], [3, 4]], { dtype: 'float16', device: 'gpu:0' });
    const bytes = await torch.save({ t, s: 'text', n: -0.5 });
    expect(bytes).toBeInstanceOf(Uint8Array);
    for (const src of [bytes, bytes.slice().buffer, new Blob([bytes])]) {
      const back = await torch.load(src as Uint8Array);
      expect([back.t.dtype, String(back.t.device), await back.t.tolist(), back.s, back.n]).toEqual(['float16', 'gpu:0', [[1, 2], [3, 4]], 'text', -0.5]);
      free(back);
    }
    const plain = { z: -0, ints: [0, 255, 256, 65535, 65536, -1, -(2 ** 31), 2 ** 31, 1e20, -(2n ** 70n)], floats: [0.1, -2.5, Infinity, -Infinity, NaN], text: 'ünï ✓', nil: null, yes: true, '7': 'int key', m: new Map([['k', [[]]]]) };
    const round = await torch.load(await torch.save(plain));
    expect(round).toEqual({ ...plain, ints: [0, 255, 256, 65535, 65536, -1, -(2 ** 31), 2 ** 31, 10n ** 20n, -(2n ** 70n)], m: { k: [[]] } }); // a Python int beyond 2^53 loads as a BigInt
    expect(Object.is(round.z, -0)).toBe(true);
    const st = await torch.safetensors.save({ t }, { metadata: { a: 'b' } });
    const back = await torch.safetensors.load(st);
    expect([String(back.t.device), await back.t.tolist()]).toEqual(['cpu', [[1, 2], [3, 4]]]);
    expect(await torch.safetensors.metadata(st)).toEqual({ a: 'b' });
    free(t, back);
  });

  it('an interrupted write leaves the old file whole and no temporary file', async () => {
    const dir = mkdtempSync(join(tmp, 'atomic-'));
    const path = join(dir, 'model.pt');
    const old = torch.zeros([1000]), fresh = torch.ones([1000]);
    await torch.save({ w: old }, path);
    const before = readFileSync(path);
    torch._setCheckpointWriteFault(1500); // the next write dies after 1,500 of its bytes
    await expect(torch.save({ w: fresh }, path)).rejects.toThrow('simulated failure after 1500 bytes');
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(readdirSync(dir)).toEqual(['model.pt']);
    const back = await torch.load(path);
    expect(await back.w.values()).toEqual(await old.values());
    await torch.save({ w: fresh }, path); // and a save that finishes replaces it
    const now = await torch.load(path);
    expect(await now.w.values()).toEqual(await fresh.values());
    free(old, fresh, back, now);
  });
});

describe('bad input raises clearly and leaks nothing', () => {
  it('loadStateDict: missing, unexpected and size mismatch in PyTorch words; nothing copied; strict false', async () => {
    const net = mlp('cpu');
    const before = await net.stateDict()['2.bias'].values();
    const sd = await torch.load(fix('mlp.pt'));
    const { '2.bias': bias, ...missing } = sd;
    expect(() => net.loadStateDict(missing)).toThrow('Error(s) in loading state_dict for Sequential:\n\tMissing key(s) in state_dict: "2.bias". ');
    const wrong = torch.zeros([2, 2]);
    expect(() => net.loadStateDict({ ...sd, extra: wrong, '0.weight': wrong })).toThrow(
      'Error(s) in loading state_dict for Sequential:\n\tUnexpected key(s) in state_dict: "extra". \n\tsize mismatch for 0.weight: copying a param with shape torch.Size([2, 2]) from checkpoint, the shape in current model is torch.Size([8, 4]).');
    expect(await net.stateDict()['2.bias'].values()).toEqual(before); // nothing copied
    expect(net.loadStateDict({ ...missing, extra: wrong }, { strict: false })).toEqual({ missingKeys: ['2.bias'], unexpectedKeys: ['extra'] });
    expect(await net.stateDict()['0.weight'].values()).toEqual(await sd['0.weight'].values());
    expect(() => net.loadStateDict(sd, { strict: true, assign: true } as any)).toThrow("load_state_dict() got an unexpected keyword argument 'assign'");
    free(net, sd, wrong, bias);
  });

  it("an optimizer's state dict that does not fit: group count and size, an option webtorch lacks", async () => {
    const p = [torch.zeros([2]).requiresGrad_(), torch.zeros([3]).requiresGrad_()];
    const opt = new torch.optim.Adam(p);
    const sd = await torch.load(fix('adam.pt'));
    expect(() => opt.loadStateDict(sd)).toThrow("loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
    expect(() => opt.loadStateDict({ state: {}, param_groups: [] })).toThrow('loaded state dict has a different number of parameter groups');
    expect(() => opt.loadStateDict({ state: {}, param_groups: [{ ...sd.param_groups[0], params: [0, 1], differentiable: true }] }))
      .toThrow("Adam.loadStateDict: param_groups[0] sets 'differentiable' to true, which webtorch's Adam does not have");
    opt.loadStateDict({ state: {}, param_groups: [{ ...sd.param_groups[0], params: [0, 1], lr: 0.25 }] }); // differentiable: false is ignored; foreach, fused are Adam's own
    expect(opt.paramGroups[0]).toMatchObject({ lr: 0.25, betas: [0.9, 0.999], weightDecay: 0 });
    expect(opt.stateDict().param_groups[0]).toMatchObject({ lr: 0.25, weight_decay: 0, params: [0, 1] });
    free(p, sd);
  });

  it('a pickle that would run os.system, float64 tensors, unknown option keys', async () => {
    await expect(torch.load(fix('evil.pt'))).rejects.toThrow(/^Weights only load failed\..*Unsupported global: GLOBAL posix\.system was not an allowed global/);
    await expect(torch.load(fix('evil.pt'), { weightsOnly: false })).rejects.toThrow('posix.system');
    await expect(torch.load(fix('double.pt'))).rejects.toThrow(/is float64, which webtorch cannot hold/);
    await expect(torch.load(fix('double.safetensors'))).rejects.toThrow(/"x" is F64, which webtorch cannot hold/);
    await expect(torch.load(fix('mlp.pt'), 'gpu:5')).rejects.toThrow('Attempting to deserialize object on CUDA device 5 but torch.cuda.device_count() is 2. Please use torch.load with mapLocation');
    await expect(torch.load(fix('mlp.pt'), { mapLocation: { cpu: 'tpu:0' } })).rejects.toThrow("don't know how to restore data location of torch.FloatStorage (tagged with tpu:0)");
    await expect(torch.safetensors.loadFile(fix('hand.safetensors'), 'cuda:3')).rejects.toThrow('Attempting to deserialize object on CUDA device 3');
    await expect(torch.load(fix('mlp.pt'), { mapLoc: 'cpu' } as any)).rejects.toThrow("load() got an unexpected keyword argument 'mapLoc'");
    await expect(torch.save({}, join(tmp, 'x.pt'), { protocol: 4 } as any)).rejects.toThrow("save() got an unexpected keyword argument 'protocol'");
    await expect(torch.save({ o: { x: 1 }, m: new Map([[1, 2]]) }, join(tmp, 'x.safetensors'))).rejects.toThrow('safetensors holds a flat object of tensors, but "o" is an object');
    await expect(torch.save({ f: () => 1 })).rejects.toThrow('cannot save function at f');
  });

  it('truncated and corrupt .pt files', async () => {
    const good = new Uint8Array(readFileSync(fix('mlp.pt')));
    await expect(torch.load(good.subarray(0, good.length - 100))).rejects.toThrow('not a readable zip archive');
    await expect(torch.load(good.subarray(0, 3))).rejects.toThrow('not a checkpoint');
    // Rewrite the archive with one record cut short, and with a pickle cut short.
    const files = unzipSync(good);
    const rezip = (edit: (f: Record<string, Uint8Array>) => void) => {
      const f = { ...files };
      edit(f);
      return zipSync(Object.fromEntries(Object.entries(f).map(([k, v]) => [k, [v, { level: 0 }]])) as any);
    };
    const pkl = Object.keys(files).find((k) => k.endsWith('data.pkl'))!;
    const rec = Object.keys(files).find((k) => k.endsWith('data/0'))!;
    await expect(torch.load(rezip((f) => (f[rec] = f[rec].subarray(0, 8))))).rejects.toThrow(/record data\/0 holds 8 bytes, but the pickle says 32 float32 elements \(128 bytes\)/);
    await expect(torch.load(rezip((f) => delete f[rec]))).rejects.toThrow('the archive has no record data/0');
    await expect(torch.load(rezip((f) => (f[pkl] = f[pkl].subarray(0, 60))))).rejects.toThrow('pickle data was truncated');
    await expect(torch.load(rezip((f) => (f[pkl] = f[pkl].map((b) => (b === 0x58 ? 0x49 : b)))))).rejects.toThrow(/Unsupported operand 73/);
    await expect(torch.load(rezip((f) => (f[`${pkl.split('/')[0]}/constants.pkl`] = f[pkl], delete f[pkl])))).rejects.toThrow('TorchScript archive');
    // int8 and int16 storages (PyTorch's CharStorage, ShortStorage) are refused by name, never converted.
    const retype = (cls: string) => rezip((f) => (f[pkl] = new Uint8Array(Buffer.from(Buffer.from(f[pkl]).toString('latin1').replaceAll('torch\nFloatStorage\n', `torch\n${cls}\n`), 'latin1'))));
    await expect(torch.load(retype('CharStorage'))).rejects.toThrow(/a tensor \(storage data\/0 \(int8\)\) is int8, which webtorch cannot hold/);
    await expect(torch.load(retype('ShortStorage'))).rejects.toThrow(/is int16, which webtorch cannot hold/);
  });

  it('safetensors whose header lies: sizes, offsets, holes, dtype, length', async () => {
    const make = (header: object, data = new Uint8Array(8)) => {
      const json = new TextEncoder().encode(JSON.stringify(header));
      const out = new Uint8Array(8 + json.length + data.length);
      new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
      out.set(json, 8);
      out.set(data, 8 + json.length);
      return out;
    };
    const load = (b: Uint8Array) => torch.safetensors.load(b);
    const ok = await load(make({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } })); // the well-formed file these lie about
    expect([ok.a.shape, await ok.a.values()]).toEqual([[2], [0, 0]]);
    free(ok);
    await expect(load(make({ a: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }))).rejects.toThrow('is F32 of shape [3] (12 bytes) but its data_offsets span 8 bytes');
    await expect(load(make({ a: { dtype: 'F32', shape: [4], data_offsets: [0, 16] } }))).rejects.toThrow('ends at byte 16 of a 8-byte data section');
    await expect(load(make({ a: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }))).rejects.toThrow('starts at byte 4, expected 0');
    await expect(load(make({ a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }))).rejects.toThrow('cover 4 bytes of a 8-byte data section');
    await expect(load(make({ a: { dtype: 'Q7', shape: [1], data_offsets: [0, 8] } }))).rejects.toThrow('unknown dtype "Q7"');
    await expect(load(make({ a: { dtype: 'BOOL', shape: [8], data_offsets: [0, 8] } }, new Uint8Array(8).fill(7)))).rejects.toThrow('is bool but byte 0 is 7');
    const long = make({});
    new DataView(long.buffer).setBigUint64(0, 1000n, true);
    await expect(load(long)).rejects.toThrow('the header claims 1000 bytes but the file has');
    await expect(load(make({ a: 1 }).subarray(0, 5))).rejects.toThrow('too short');
  });
});

/** Whether Debian's PyTorch is installed (CI installs it: .ci/run); under CI the test below never skips. */
const hasTorch = (() => {
  try {
    execFileSync('/usr/bin/python3', ['-c', 'import torch'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe('PyTorch reads what webtorch writes', () => {
  it.runIf(hasTorch || process.env.CI)('a module state dict (.pt, weights_only=True), safetensors, an Adam state dict', async () => {
    const net = mlp('gpu:0');
    const opt = new torch.optim.Adam(net.parameters(), { lr: 0.02, betas: [0.8, 0.9], weightDecay: 0.1 });
    const x = torch.ones([2, 4], { device: 'gpu:0' });
    const loss = torch.tidy(() => net(x).square().mean());
    loss.backward();
    opt.step();
    const [pt, st, op] = ['module.pt', 'model.safetensors', 'adam.pt'].map((n) => join(tmp, n));
    await torch.save(net.stateDict(), pt);
    const extra = { ids: torch.tensor([1, -2], { dtype: 'int64' }), mask: torch.tensor([true, false]), half: torch.tensor([0.5], { dtype: 'float16' }) };
    await torch.safetensors.saveFile({ ...net.stateDict(), ...extra }, st, { metadata: { by: 'webtorch' } });
    await torch.save(opt.stateDict(), op);
    const py = JSON.parse(execFileSync('/usr/bin/python3', [join(import.meta.dirname, '..', 'fixtures', 'read_webtorch_checkpoint.py'), pt, st, op], { encoding: 'utf8' }));
    expect(py.load_state_dict).toBe('<All keys matched successfully>');
    expect([py.bad_crc, py.misaligned]).toEqual([null, []]);
    expect(py.records).toEqual(['archive/byteorder', 'archive/data.pkl', 'archive/data/0', 'archive/data/1', 'archive/data/2', 'archive/data/3', 'archive/version']);
    const xs = torch.tidy(() => torch.arange(8, { dtype: 'float32', device: 'gpu:0' }).reshape(2, 4).div(4));
    const y = torch.tidy(() => net(xs));
    close(py.forward, (await y.values()) as number[], 1e-5, 'forward');
    for (const [k, t] of Object.entries(net.stateDict())) {
      expect([py.module[k].dtype, py.module[k].shape], k).toEqual(['torch.float32', t.shape]);
      expect(py.module[k].data, k).toEqual(await t.values());
      expect(py.safetensors[k].data, k).toEqual(await t.values());
    }
    expect(py.safetensors.__metadata__).toEqual({ by: 'webtorch' });
    expect([py.safetensors.ids.data, py.safetensors.mask.data, py.safetensors.half.data]).toEqual([['1', '-2'], [true, false], [0.5]]);
    const state = opt.state.get(net.parameters()[0])!;
    expect(py.optimizer).toEqual({
      lr: 0.02, betas: [0.8, 0.9], weight_decay: 0.1, state_keys: [0, 1, 2, 3],
      exp_avg0: await (state.expAvg as torch.Tensor).values(), step0: 1,
    });
    free(net, opt, x, loss, extra, xs, y);
  });
});
