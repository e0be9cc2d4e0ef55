// The web app (npm run web): lists the devices and their adapters, trains the digits classifier
// on the chosen device, or with nn.DataParallel over every GPU device, with live charts of
// loss/accuracy and of each device's allocated vs reserved memory, and measures the page's own
// frame times while the device workers compute. A browser has one WebGPU adapter, so the app
// makes two logical GPU devices on it (gpu:0 and gpu:1, each its own worker and GPUDevice).
// The profile button profiles a few training steps (torch.profiler) and downloads their Chrome
// trace. `window.app` exposes the app's state to the browser test (test/browser/app.test.ts).
import * as torch from '/dist/webtorch.js';
import { framesChart, lossChart, memoryChart, mib } from './charts.js';
import { loadDigits, profileSteps, train } from './train.js';

const $ = (id) => document.getElementById(id);
const state = { memory: null, ready: false, running: false, profiling: false, trace: null, stop: false, steps: 0, epochs: 0, lastAccuracy: null, frames: { count: 0, max: 0, over50: 0, p95: 0 }, error: null };
window.app = state;

function fail(e) {
  state.error = String(e?.stack ?? e);
  $('status').textContent = `Error: ${e?.message ?? e}`;
  console.error(e);
}

// ---- Frame times: every animation frame, always; the stats are those of the current run ----
let frameTimes = [];
/** How many frames came before the first step finished: the first step compiles the kernels (see showFrames). */
let firstStepFrames = null;
let last = performance.now();
const t0 = performance.now();
let frames;
function frame(now) {
  const dt = now - last;
  last = now;
  if (state.running) {
    frameTimes.push(dt);
    frames?.push((now - t0) / 1000, dt, 50);
    if (frameTimes.length % 10 === 0) showFrames();
  }
  requestAnimationFrame(frame);
}
// Long tasks: stretches of 50 ms or more when this page's own thread was busy. A slow frame with
// no long task was held up elsewhere (the browser's GPU process, which also runs WebGPU).
let longTasks = [];
try {
  new PerformanceObserver((list) => {
    if (state.running) longTasks.push(...list.getEntries().map((e) => e.duration));
  }).observe({ type: 'longtask', buffered: false });
} catch {
  longTasks = null; // no Long Tasks API in this browser
}
/** Count, max, frames over 50 ms, median, p95 and mean of some frame times. */
function frameStats(times) {
  const sorted = [...times].sort((a, b) => a - b);
  return {
    count: sorted.length, max: sorted.at(-1) ?? 0, over50: sorted.filter((t) => t > 50).length,
    p50: sorted[Math.floor(sorted.length * 0.5)] ?? 0, p95: sorted[Math.floor(sorted.length * 0.95)] ?? 0, mean: sorted.reduce((a, b) => a + b, 0) / (sorted.length || 1),
  };
}
// The frames after the first step are shown apart: the first step compiles most kernels. A
// browser compiles WebGPU pipelines in its GPU process, which also draws the page; webtorch's GPU
// worker compiles them asynchronously (createComputePipelineAsync), off the thread that draws, so
// frames need not wait for them (a synchronous compile held every frame, with a software adapter,
// SwiftShader, for a second or more, while this page's thread was idle).
function showFrames() {
  const f = state.frames = frameStats(frameTimes);
  f.steady = firstStepFrames === null ? null : frameStats(frameTimes.slice(firstStepFrames));
  f.longTasks = longTasks?.length ?? null;
  f.longestTask = longTasks?.length ? Math.max(...longTasks) : 0;
  const s = f.steady;
  $('frames').textContent = `${f.count} frames while training: mean ${f.mean.toFixed(1)} ms, p95 ${f.p95.toFixed(1)} ms, max ${f.max.toFixed(1)} ms, ${f.over50} over 50 ms` +
    (s ? `; after the first step (which compiles the kernels): p95 ${s.p95.toFixed(1)} ms, max ${s.max.toFixed(1)} ms, ${s.over50} of ${s.count} over 50 ms` : '') +
    (longTasks ? `; this page's thread: ${f.longTasks} long task${f.longTasks === 1 ? '' : 's'}${f.longTasks ? ` (longest ${f.longestTask.toFixed(0)} ms)` : ''}` : '');
}

async function main() {
  // A software adapter (SwiftShader, lavapipe) is a GPU for this demo; two logical devices on the
  // page's one adapter give DataParallel two devices to scatter over.
  torch.gpu.configure({ allowSoftware: true, devices: 2 });
  const s = await torch.backends.summary();
  state.summary = s;
  const badge = (on, text) => `<span class="${on ? '' : 'off'}">${text}: ${on ? 'yes' : 'no'}</span>`;
  $('isolation').innerHTML = badge(s.crossOriginIsolated, 'cross-origin isolated') + badge(s.pinnedMemory, 'pinned memory') + badge(s.cpuHelperThreads, `cpu threads (${s.cpuThreads})`) + badge(s.webgpu, 'WebGPU');
  const gpus = s.gpus.map((_, i) => `gpu:${i}`);
  const devices = ['cpu', ...gpus];
  const rows = [['cpu', 'AssemblyScript kernels on WebAssembly (SIMD)', `${s.cpuThreads} thread${s.cpuThreads > 1 ? 's' : ''}`]];
  s.gpus.forEach((g, i) => rows.push([`gpu:${i}`, [g.vendor, g.architecture, g.description || g.device].filter(Boolean).join(' · '),
    (g.isSoftware ? 'software adapter' : 'hardware') + (gpus.length > 1 ? `; logical device ${i + 1} of ${gpus.length} on the page's adapter` : '')]));
  if (!s.gpus.length) rows.push(['gpu', '—', `no WebGPU device: ${s.gpuError ?? 'none found'}`]);
  $('devices').tBodies[0].innerHTML = rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`).join('');
  // The device picker: each device, and DataParallel over all the GPU devices where there are two or more.
  const choices = devices.map((d) => ({ value: d, label: d, device: d }));
  if (gpus.length > 1) choices.push({ value: 'dataparallel', label: `DataParallel (${gpus.join(', ')})`, device: gpus[0], deviceIds: gpus });
  $('device').innerHTML = choices.map((c) => `<option value="${c.value}">${c.label}</option>`).join('');
  $('device').value = gpus[0] ?? 'cpu';
  const chosen = () => choices.find((c) => c.value === $('device').value);

  const losses = lossChart($('chart-loss'));
  const memory = memoryChart($('chart-memory'), devices);
  frames = framesChart($('chart-frames'));
  // Memory: the allocator's figures are synchronous on this thread, so sample them a few times a
  // second, into the chart and the readout under it (each device's latest allocated and reserved).
  setInterval(() => {
    if (!state.running) return;
    const figures = devices.map((d) => [torch.gpu.memoryAllocated(d), torch.gpu.memoryReserved(d)]);
    memory.push((performance.now() - t0) / 1000, ...figures.flat());
    state.memory = Object.fromEntries(devices.map((d, i) => [d, { allocated: figures[i][0], reserved: figures[i][1] }]));
    $('memory').textContent = devices.map((d, i) => `${d}: ${mib(figures[i][0])} allocated of ${mib(figures[i][1])} reserved`).join(' · ');
  }, 200);
  state.charts = { losses, memory, frames };

  $('status').textContent = 'Loading the digits…';
  const data = await loadDigits(torch);
  $('status').textContent = `${data.train.n} training and ${data.test.n} test images. Pick a device and train.`;
  $('train').disabled = false;
  $('profile').disabled = false;
  state.ready = true;

  // The profile button: a few steps on the chosen device, profiled, then their trace as a download.
  $('profile').onclick = async () => {
    const choice = chosen(), device = choice.label, batchSize = Number($('batch').value), lr = Number($('lr').value), steps = 5;
    state.profiling = true;
    $('profile').disabled = $('train').disabled = true;
    $('status').textContent = `Profiling ${steps} training steps on ${device}…`;
    try {
      const prof = await profileSteps(torch, data, { device: choice.device, deviceIds: choice.deviceIds, batchSize, lr, steps });
      const name = `webtorch-trace-${choice.value.replace(':', '')}.json`;
      const json = await prof.exportChromeTrace(name); // in a page: offers the file as a download
      const events = JSON.parse(json).traceEvents;
      state.trace = { name, events: events.length, kernels: events.filter((e) => e.cat === 'kernel').length };
      $('status').textContent = `Profiled ${steps} steps on ${device}: ${name} (${state.trace.kernels} kernels) downloaded; open it in https://ui.perfetto.dev`;
    } catch (e) {
      fail(e);
    } finally {
      state.profiling = false;
      $('profile').disabled = $('train').disabled = false;
    }
  };

  $('stop').onclick = () => (state.stop = true);
  $('train').onclick = async () => {
    const choice = chosen(), device = choice.label, epochs = Number($('epochs').value), batchSize = Number($('batch').value), lr = Number($('lr').value);
    Object.assign(state, { running: true, stop: false, steps: 0, epochs: 0, device });
    frameTimes = [];
    firstStepFrames = null;
    if (longTasks) longTasks = [];
    losses.clear();
    $('train').disabled = $('profile').disabled = true;
    $('stop').disabled = false;
    const started = performance.now();
    try {
      await train(torch, data, { device: choice.device, deviceIds: choice.deviceIds, epochs, batchSize, lr }, {
        shouldStop: () => state.stop,
        onStep: ({ epoch, step, loss }) => {
          state.steps = step;
          firstStepFrames ??= frameTimes.length;
          if (step % 4 === 0) losses.push(epoch, loss, null);
          $('status').textContent = `Training on ${device}: epoch ${Math.ceil(epoch)} of ${epochs}, step ${step}, loss ${loss.toFixed(4)}`;
        },
        onEpoch: ({ epoch, accuracy }) => {
          state.epochs = epoch;
          state.lastAccuracy = accuracy;
          losses.push(epoch, null, accuracy);
        },
      });
      const secs = ((performance.now() - started) / 1000).toFixed(1);
      $('status').textContent = `Done on ${device}: ${state.epochs} epochs, ${state.steps} steps in ${secs} s, test accuracy ${(100 * (state.lastAccuracy ?? 0)).toFixed(1)}%`;
    } catch (e) {
      fail(e);
    } finally {
      showFrames();
      state.running = false;
      $('train').disabled = $('profile').disabled = false;
      $('stop').disabled = true;
    }
  };
}

requestAnimationFrame(frame);
main().catch(fail);
