// The optimizers' fused step (the `optimStep` command, PyTorch's multi-tensor `fused` Adam,
// AdamW and SGD) on the cpu: one call updates every float32 parameter of the table, and its
// state, in place. The header's layout and flags are wgsl/optim.ts's; each update is computed in
// the order of the composed ops (ts/optim/algorithms.ts), as the WGSL kernel does.

// header words (wgsl/optim.ts's OPTIM_HEADER)
const ALGO = 2, FLAGS = 3, LR = 4, WD = 5, A = 6, B = 7, EPS = 8, ONE_MINUS_A = 9, ONE_MINUS_B = 10, DECAY = 11, LN_A = 12, LN_B = 13;
// flags (OPTIM_FLAGS)
const MAXIMIZE = 1, DECOUPLED = 2, AMSGRAD = 4, NESTEROV = 8, MOMENTUM = 16, WEIGHT_DECAY = 32, DEVICE_STEP = 64;
// bytes per entry: p, g, s0, s1, s2, n, stepSize, invSqrtBc2, first, step (ts/worker/cpu/optim.ts)
const ENTRY = 40;

@inline function hf(h: usize, w: i32): f32 {
  return load<f32>(h + (<usize>w << 2));
}

/** Updates the `n` parameters of the table at `p` with the group's scalars in the header at `h`. */
export function optimStep(p: usize, n: i32, h: usize): void {
  const adam = load<i32>(h + (ALGO << 2)) == 0, flags = load<i32>(h + (FLAGS << 2));
  const lr = hf(h, LR), wd = hf(h, WD), a = hf(h, A), b = hf(h, B), eps = hf(h, EPS);
  const oneMinusA = hf(h, ONE_MINUS_A), oneMinusB = hf(h, ONE_MINUS_B), decay = hf(h, DECAY);
  const maximize = (flags & MAXIMIZE) != 0, decoupled = (flags & DECOUPLED) != 0, amsgrad = (flags & AMSGRAD) != 0;
  const nesterov = (flags & NESTEROV) != 0, momentum = (flags & MOMENTUM) != 0, decayOn = (flags & WEIGHT_DECAY) != 0;
  const deviceStep = (flags & DEVICE_STEP) != 0, lnA = hf(h, LN_A), lnB = hf(h, LN_B);
  for (let q = 0; q < n; q++) {
    const e = p + <usize>q * ENTRY;
    const pp = <usize>load<i32>(e), gp = <usize>load<i32>(e + 4);
    const s0 = <usize>load<i32>(e + 8), s1 = <usize>load<i32>(e + 12), s2 = <usize>load<i32>(e + 16);
    const count = load<i32>(e + 20), stepSize = load<f32>(e + 24), invSqrtBc2 = load<f32>(e + 28), first = load<i32>(e + 32) != 0;
    // capturable Adam: the step count on the device, incremented here; the composed step's corrections 1 − exp(step · ln β)
    let c1: f32 = 1, c2: f32 = 1;
    if (deviceStep) {
      const sp = <usize>load<i32>(e + 36);
      const step = load<f32>(sp) + 1;
      store<f32>(sp, step);
      c1 = 1 - Mathf.exp(step * lnA);
      c2 = Mathf.sqrt(1 - Mathf.exp(step * lnB));
    }
    for (let i = 0; i < count; i++) {
      const o = <usize>i << 2;
      let x = load<f32>(pp + o);
      let d = load<f32>(gp + o);
      if (maximize) d = -d;
      if (decayOn && !decoupled) d = d + wd * x;
      if (adam) {
        if (decayOn && decoupled) x = x * decay;
        const m = load<f32>(s0 + o) * a + oneMinusA * d;
        const v = load<f32>(s1 + o) * b + oneMinusB * (d * d);
        store<f32>(s0 + o, m);
        store<f32>(s1 + o, v);
        let u = v;
        if (amsgrad) {
          u = max(load<f32>(s2 + o), v);
          store<f32>(s2 + o, u);
        }
        if (deviceStep) {
          const denom = sqrt<f32>(u) / c2 + eps;
          x = x + (-lr) * ((m / denom) / c1);
        } else {
          const denom = sqrt<f32>(u) * invSqrtBc2 + eps;
          x = x + stepSize * (m / denom);
        }
      } else {
        if (momentum) {
          const buf = first ? d : load<f32>(s0 + o) * a + oneMinusB * d;
          store<f32>(s0 + o, buf);
          d = nesterov ? d + a * buf : buf;
        }
        x = x + (-lr) * d;
      }
      store<f32>(pp + o, x);
    }
  }
}
