// The measuring core of the suite: deterministic host inputs, result checks against plain-JS
// references, and the timing loop (validate → warm up → time samples around a sync point →
// median). Every implementation of every case, ours or a peer's, goes through `measureRow`.

/**
 * One implementation of one case at one size on one device, ready to run.
 * @typedef {object} Impl
 * @property {() => (void | Promise<void>)} launch  queues one iteration (need not wait for it)
 * @property {() => Promise<void>} sync  waits until everything launched has finished (the sync point)
 * @property {() => Promise<ArrayLike<number>>} [output]  the last iteration's result, for the check
 * @property {() => (void | Promise<void>)} [dispose]  frees what the implementation holds
 * @property {number} [inner]  iterations per timed sample; omitted: chosen from the warm-up time
 */

/**
 * How long to measure (set by `--quick`).
 * @typedef {object} Budget
 * @property {number} warmup  untimed iterations after the checked one (at least)
 * @property {number} warmupMs  and warm up for at least this long
 * @property {number} minSamples
 * @property {number} maxSamples
 * @property {number} budgetMs  stop taking samples after this long (once minSamples are in)
 * @property {number} sampleMs  aim for samples at least this long (for `inner`)
 * @property {number} maxInner
 */

/** Budgets for `--quick` (smoke runs, CI) and for full runs. */
export const BUDGETS = {
  quick: { warmup: 1, warmupMs: 200, minSamples: 3, maxSamples: 15, budgetMs: 500, sampleMs: 15, maxInner: 50 },
  full: { warmup: 3, warmupMs: 500, minSamples: 5, maxSamples: 30, budgetMs: 1500, sampleMs: 50, maxInner: 1000 },
};

/** Median of a list of numbers. */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Deterministic uniform numbers in [lo, hi), from a seed (xorshift32; the same inputs for every
 * implementation and every run).
 * @param {number} n
 * @param {number} seed
 * @param {number} [lo]
 * @param {number} [hi]
 * @returns {Float32Array}
 */
export function uniform(n, seed, lo = -1, hi = 1) {
  const out = new Float32Array(n);
  let s = (seed * 2654435761) >>> 0 || 1;
  const scale = (hi - lo) / 4294967296;
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    out[i] = lo + s * scale;
  }
  return out;
}

/**
 * Compares `out` with reference values at given flat indices (all when `indices` is null).
 * `refAt(i)` gives the reference value at flat index i (float64) and the allowed absolute error.
 * Returns null when all match, else a message naming the first mismatch.
 * @param {ArrayLike<number>} out
 * @param {number} n  expected length
 * @param {(i: number) => [number, number]} refAt
 * @param {Iterable<number> | null} [indices]
 * @returns {string | null}
 */
export function compare(out, n, refAt, indices = null) {
  if (!out || out.length !== n) return `expected ${n} values, got ${out ? out.length : 'none'}`;
  let bad = 0, first = '';
  const check = (i) => {
    const [r, tol] = refAt(i), v = out[i];
    if (!(Math.abs(v - r) <= tol) && !bad++) first = `at ${i}: got ${v}, expected ${r} (±${tol.toExponential(1)})`;
  };
  if (indices) for (const i of indices) check(i);
  else for (let i = 0; i < n; i++) check(i);
  return bad ? `${bad} mismatches, first ${first}` : null;
}

/**
 * `refAt` for a reference array with a relative-plus-absolute tolerance.
 * @param {ArrayLike<number>} ref
 * @param {number} rtol
 * @param {number} atol
 * @returns {(i: number) => [number, number]}
 */
export const rel = (ref, rtol, atol) => (i) => [ref[i], atol + rtol * Math.abs(ref[i])];

/**
 * Up to `count` distinct flat indices in [0, n), deterministic, always with the first and last.
 * @param {number} n
 * @param {number} count
 * @returns {number[]}
 */
export function sampleIndices(n, count) {
  if (n <= count) return Array.from({ length: n }, (_, i) => i);
  const r = uniform(count, 7, 0, 1);
  return [...new Set([0, n - 1, ...Array.from(r, (u) => Math.floor(u * n))])];
}

/** Launches one iteration; awaits only when `launch` is async, so synchronous launches batch. */
function launchOnce(impl) {
  const r = impl.launch();
  return r instanceof Promise ? r : undefined;
}

const errorOf = (e) => ({ error: String(e?.message ?? e).split('\n')[0].slice(0, 300) });

/** One timed sample: `inner` launches back to back, then the sync point; seconds per iteration. */
async function sample(impl, inner) {
  const t0 = performance.now();
  for (let k = 0; k < inner; k++) {
    const p = launchOnce(impl);
    if (p) await p; // no await otherwise: a microtask break would split a batch of launches
  }
  await impl.sync();
  return (performance.now() - t0) / inner / 1e3;
}

/**
 * Checks, warms up and times the implementations of one row, interleaved: after each has been
 * checked and warmed up, samples are taken in rounds (one per implementation per round), so that
 * a slow spell of a shared machine hits every implementation alike.
 * Sample: launch `inner` iterations back to back, then await the sync point; the time of a
 * sample (performance.now() around it, from the caller) divided by `inner` is one figure.
 * @param {[string, Impl][]} impls
 * @param {((out: ArrayLike<number>) => (string | null)) | null} check  null when there is nothing to check
 * @param {Budget} budget
 * @param {number} [block]  set (> 1) by a latency row on a GPU: each implementation has its own
 *   GPUDevice, and round trips that follow another device's work pay the GPU's switch between
 *   them, which a program with one device never does. On the H100 that lasted beyond a block of
 *   ten samples (2026-11-27: webtorch's round trip 113 µs with its peers idle, 282 interleaved
 *   with theirs in blocks of ten). So such a row times each implementation in a phase of its
 *   own, one after the other, after `block` samples taken and dropped; the machine's slow spells
 *   then fall on one implementation, not all alike, which a latency row accepts.
 * @returns {Promise<{[name: string]: {seconds: number, samples: number, inner: number, min: number} | {error: string}}>}
 */
export async function measureRow(impls, check, budget, block = 1) {
  const results = {}, live = [];
  for (const [name, impl] of impls) {
    try {
      // 1. the checked run (also compiles pipelines)
      await launchOnce(impl);
      await impl.sync();
      const why = check && impl.output ? check(await impl.output()) : null;
      if (why) throw new Error(`wrong result: ${why}`);
      // 2. warm-up, which also sizes `inner`
      // (time-based too: V8 first runs WASM on its baseline compiler and tiers up hot code later)
      // `inner` comes from the median warm-up sample: one slow spell (a GC, a pipeline compile) in
      // the last sample once made `inner` 1, and every later sample then timed a sync round trip.
      const warm = [];
      const w0 = performance.now();
      for (let i = 0; i < budget.warmup || (performance.now() - w0 < budget.warmupMs && i < 10_000); i++) warm.push(await sample(impl, 1));
      const typical = median(warm.length > 1 ? warm.slice(1) : warm);
      let inner = impl.inner ?? Math.max(1, Math.min(budget.maxInner, Math.floor(budget.sampleMs / 1e3 / Math.max(typical, 1e-6))));
      // A one-iteration warm-up sample includes a whole sync round trip, so it overstates an
      // iteration and samples came out short (12 ms instead of 50 for `relu` on the H100, where a
      // webtorch sync is 1–1.6 ms): grow `inner` until a trial sample lasts `sampleMs`.
      for (let trial = 0; !impl.inner && trial < 3 && inner < budget.maxInner; trial++) {
        const ms = (await sample(impl, inner)) * inner * 1e3;
        if (ms >= 0.8 * budget.sampleMs) break;
        inner = Math.min(budget.maxInner, Math.ceil(inner * budget.sampleMs / Math.max(ms, 1e-3)));
      }
      live.push({ name, impl, inner, samples: [] });
    } catch (e) {
      results[name] = errorOf(e);
      try { await impl.dispose?.(); } catch { /* a failed implementation may hold nothing */ }
    }
  }
  // 3. samples, in rounds
  const start = performance.now(), budgetMs = budget.budgetMs * Math.max(1, live.length);
  const more = (e) => e.samples.length < budget.minSamples || (e.samples.length < budget.maxSamples && performance.now() - start < budgetMs);
  if (block > 1) {
    // A latency row: each implementation's samples in a phase of their own (see `block`)
    for (const e of live) {
      const t0 = performance.now();
      const enough = () => e.samples.length >= budget.minSamples && (e.samples.length >= budget.maxSamples || performance.now() - t0 >= budget.budgetMs);
      try {
        for (let b = 0; b < block; b++) await sample(e.impl, e.inner); // pays the switch from the previous device
        while (!enough()) e.samples.push(await sample(e.impl, e.inner));
      } catch (err) { results[e.name] = errorOf(err); }
    }
  }
  while (live.some((e) => !results[e.name] && more(e))) {
    for (const e of live) {
      if (results[e.name] || !more(e)) continue;
      try {
        e.samples.push(await sample(e.impl, e.inner));
      } catch (err) { results[e.name] = errorOf(err); }
    }
  }
  for (const e of live) {
    results[e.name] ??= { seconds: median(e.samples), samples: e.samples.length, inner: e.inner, min: Math.min(...e.samples) };
    try { await e.impl.dispose?.(); } catch { /* ignore */ }
  }
  return results;
}

/**
 * Helper for implementations whose iterations each produce a new output: keeps the last one and
 * disposes the one before.
 * @template T
 * @param {(t: T) => void} dispose
 */
export function keepLast(dispose) {
  /** @type {T | null} */
  let last = null;
  return {
    /** @param {T} t */
    set(t) { if (last) dispose(last); last = t; },
    get() { return last; },
    clear() { if (last) dispose(last); last = null; },
  };
}
