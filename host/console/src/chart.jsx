// One uPlot chart in a Preact component. uPlot draws on canvas and sets styles through the CSSOM
// (allowed by the page's CSP); its labels are set with textContent, so tool names stay text.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

const HEIGHT = 180;
// Readable on light and dark backgrounds alike (canvas text does not follow CSS colors).
const AXIS = {
  stroke: '#8b949e',
  grid: { stroke: 'rgba(139, 148, 158, 0.25)', width: 1 },
  ticks: { stroke: 'rgba(139, 148, 158, 0.4)', width: 1 },
};

function width(el) {
  return Math.max(240, Math.floor((el && el.clientWidth) || 480));
}

/** `series`: [{label, stroke}]; `data`: [xs(seconds), ...ys] as uPlot wants it. */
export function Chart({ title, series, data, testid, yLabel }) {
  const box = useRef(null);
  const plot = useRef(null);

  useEffect(() => {
    const el = box.current;
    const opts = {
      title,
      width: width(el),
      height: HEIGHT,
      scales: { x: { time: true } },
      axes: [AXIS, { ...AXIS, label: yLabel, size: 60 }],
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.stroke, width: 1.5, spanGaps: false }))],
      legend: { live: true },
    };
    plot.current = new uPlot(opts, data, el);
    const onResize = () => plot.current && plot.current.setSize({ width: width(el), height: HEIGHT });
    window.addEventListener('resize', onResize);
    return () => {
      window.removeEventListener('resize', onResize);
      plot.current.destroy();
      plot.current = null;
    };
    // The chart is built once per title and series layout; new data goes through setData below.
  }, [title, series.length]);

  useEffect(() => {
    if (plot.current) plot.current.setData(data);
  }, [data]);

  return <div class="chart" data-testid={testid} ref={box} />;
}

/**
 * A tool's points as uPlot columns over a regular time axis: intervals without a point had no calls
 * (0 calls, 0 errors, no latency).
 */
export function columns(points, intervalS) {
  const step = Math.max(1, Number(intervalS) || 10);
  const byT = new Map();
  for (const p of points || []) {
    const t = typeof p.t === 'number' ? p.t : Date.parse(p.t) / 1000;
    if (!Number.isNaN(t)) byT.set(Math.round(t / step) * step, p);
  }
  const ts = [...byT.keys()].sort((a, b) => a - b);
  const xs = [];
  if (ts.length) {
    const last = ts[ts.length - 1];
    // The whole last hour up to the newest point, not from the first point: with one point only,
    // uPlot's own range for the time axis spans years.
    for (let t = last - 359 * step; t <= last; t += step) xs.push(t);
  }
  const pick = (key, missing) => xs.map((t) => (byT.has(t) ? num(byT.get(t)[key]) : missing));
  return {
    counts: [xs, pick('calls', 0), pick('errors', 0)],
    latency: [xs, pick('p50_ms', null), pick('p95_ms', null), pick('p99_ms', null)],
  };
}

function num(v) {
  return v === null || v === undefined ? null : Number(v);
}
