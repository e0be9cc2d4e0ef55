// The app's three live charts, drawn with uPlot: loss and test accuracy by epoch, each
// device's allocated vs reserved memory over time, and the page's frame times.
import uPlot from '/node_modules/uplot/dist/uPlot.esm.js';

const COLORS = ['#ee4c2c', '#2563eb', '#16a34a', '#9333ea', '#ca8a04', '#0891b2'];
const width = (el) => Math.max(320, el.clientWidth || 800);

/** A line chart that takes points as they come (`push`) and redraws at most once per frame. */
export class LiveChart {
  /**
   * @param {HTMLElement} el
   * @param {{ x: string, series: { label: string, scale?: string, dash?: number[], points?: boolean, color?: string }[], axes?: object[], scales?: object, height?: number }} spec
   */
  constructor(el, spec) {
    this.data = [[], ...spec.series.map(() => [])];
    const series = [{ label: spec.x }, ...spec.series.map((s, i) => ({
      label: s.label, scale: s.scale ?? 'y', stroke: s.color ?? COLORS[i % COLORS.length], width: 1.5, dash: s.dash, spanGaps: true,
      points: { show: !!s.points, size: 5 },
    }))];
    this.plot = new uPlot({ width: width(el), height: spec.height ?? 220, series, axes: spec.axes, scales: { x: { time: false }, ...spec.scales } }, this.data, el);
    this.pending = false;
    addEventListener('resize', () => this.plot.setSize({ width: width(el), height: spec.height ?? 220 }));
  }

  /** Appends one point: x and a value per series (null for none). */
  push(x, ...ys) {
    this.data[0].push(x);
    ys.forEach((y, i) => this.data[i + 1].push(y));
    if (!this.pending) {
      this.pending = true;
      requestAnimationFrame(() => {
        this.pending = false;
        this.plot.setData(this.data);
      });
    }
  }

  /** Points so far. */
  get length() {
    return this.data[0].length;
  }

  clear() {
    this.data.forEach((s) => (s.length = 0));
    this.plot.setData(this.data);
  }
}

/** Bytes as MiB, for the memory axis and readout. */
export const mib = (v) => `${(v / 2 ** 20).toFixed(v < 2 ** 20 ? 2 : 1)} MiB`;

/** Loss (left axis) and test accuracy (right axis) against epochs. */
export const lossChart = (el) => new LiveChart(el, {
  x: 'epoch',
  series: [{ label: 'train loss', color: COLORS[0] }, { label: 'test accuracy', scale: '%', color: COLORS[1], points: true }],
  scales: { '%': { range: [0, 1] } },
  axes: [{ label: 'epoch' }, { label: 'loss' }, { scale: '%', side: 1, label: 'test accuracy', values: (_, ts) => ts.map((t) => `${Math.round(t * 100)}%`), grid: { show: false } }],
});

/** Allocated (solid) and reserved (dashed) bytes of each device against seconds. */
export const memoryChart = (el, devices) => new LiveChart(el, {
  x: 'seconds',
  series: devices.flatMap((d, i) => [
    { label: `${d} allocated`, color: COLORS[i % COLORS.length] },
    { label: `${d} reserved`, color: COLORS[i % COLORS.length], dash: [6, 4] },
  ]),
  axes: [{ label: 'seconds' }, { values: (_, ts) => ts.map(mib), size: 70 }],
});

/** Frame times in ms against seconds, with the 50 ms line (the axis stops at 100 ms; the stats above it give the max). */
export const framesChart = (el) => new LiveChart(el, {
  x: 'seconds',
  height: 160,
  series: [{ label: 'frame time (ms)', color: COLORS[2] }, { label: '50 ms', color: '#98a2b3', dash: [4, 4] }],
  scales: { y: { range: [0, 100] } },
  axes: [{ label: 'seconds' }, { label: 'ms' }],
});
