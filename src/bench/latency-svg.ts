/**
 * Latency distributions as an SVG picture, written by hand (no native or browser dependencies):
 * one panel per workload, one line per series, in HdrHistogram's classic percentile plot. The
 * x axis is 1/(1 - percentile) on a log scale, so p50, p90, p99, p99.9 ... are evenly spaced and
 * the tail gets as much room as the median; the y axis is latency on a log scale, so two systems
 * ten times apart still both show their shape.
 */
import type { DistributionPoint } from './latency-histogram.js';

export interface LatencySeries {
  readonly label: string;
  readonly points: readonly DistributionPoint[];
  /** Drawn dashed (the comparison dashes etcd's lines). */
  readonly dashed?: boolean;
  /** Index into the palette; series with the same index share a colour. Default: its position. */
  readonly colorIndex?: number;
}

export interface LatencyPanel {
  readonly title: string;
  readonly series: readonly LatencySeries[];
}

const palette = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
const width = 860;
const panelHeight = 320;
const titleHeight = 40;
const margin = { left: 70, right: 44, top: 34, bottom: 46 };
const plotWidth = width - margin.left - margin.right;
const plotHeight = panelHeight - margin.top - margin.bottom;
/** Latencies below this are drawn at it (the log axis has no zero). */
const latencyMsMin = 0.001;

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char] as string);
}

/** Decades of 1/(1 - q): p0 -> 0, p90 -> 1, p99 -> 2. */
function depthOf(percentile: number): number {
  return percentile >= 100 ? 7 : Math.log10(100 / (100 - percentile));
}

function depthLabel(depth: number): string {
  if (depth === 0) return '0%';
  const percentile = 100 * (1 - 10 ** -depth);
  return `${Number(percentile.toFixed(depth))}%`;
}

interface Scale {
  x(depth: number): number;
  y(latencyMs: number): number;
  readonly depthMax: number;
  readonly decadeLow: number;
  readonly decadeHigh: number;
}

function scaleOf(panel: LatencyPanel, top: number): Scale {
  const points = panel.series.flatMap((series) => series.points);
  const depthMax = Math.max(2, Math.ceil(Math.max(0, ...points.map((point) => depthOf(point.percentile)))));
  const latencies = points.map((point) => Math.max(latencyMsMin, point.latencyMs));
  const decadeLow = Math.floor(Math.log10(Math.min(...latencies, 1)));
  const decadeHigh = Math.max(decadeLow + 1, Math.ceil(Math.log10(Math.max(...latencies, 1))));
  return {
    depthMax,
    decadeLow,
    decadeHigh,
    x: (depth) => margin.left + (plotWidth * depth) / depthMax,
    y: (latencyMs) => top + margin.top + plotHeight * (1 - (Math.log10(Math.max(latencyMsMin, latencyMs)) - decadeLow) / (decadeHigh - decadeLow)),
  };
}

/** 0.001 -> "0.001", 2 -> "2", 1000 -> "1000": tick values are 1, 2 or 5 times a power of ten. */
function axisMs(value: number): string {
  return String(Number(value.toPrecision(1)));
}

function fixed(value: number): string {
  return value.toFixed(1);
}

function axes(scale: Scale, top: number): string[] {
  const parts: string[] = [];
  const bottom = top + margin.top + plotHeight;
  for (let depth = 0; depth <= scale.depthMax; depth++) {
    const x = fixed(scale.x(depth));
    parts.push(`<line x1="${x}" y1="${fixed(top + margin.top)}" x2="${x}" y2="${fixed(bottom)}" class="grid"/>`);
    parts.push(`<text x="${x}" y="${fixed(bottom + 16)}" text-anchor="middle">${depthLabel(depth)}</text>`);
  }
  const decades = scale.decadeHigh - scale.decadeLow;
  const steps = decades <= 3 ? [1, 2, 5] : [1];
  for (let decade = scale.decadeLow; decade <= scale.decadeHigh; decade++) {
    for (const step of steps) {
      const latencyMs = step * 10 ** decade;
      if (Math.log10(latencyMs) > scale.decadeHigh + 1e-9) continue;
      const y = fixed(scale.y(latencyMs));
      parts.push(`<line x1="${margin.left}" y1="${y}" x2="${margin.left + plotWidth}" y2="${y}" class="${step === 1 ? 'grid' : 'grid minor'}"/>`);
      parts.push(`<text x="${margin.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${axisMs(latencyMs)}</text>`);
    }
  }
  parts.push(`<text x="${margin.left + plotWidth / 2}" y="${fixed(bottom + 36)}" text-anchor="middle">percentile</text>`);
  parts.push(`<text x="16" y="${fixed(top + margin.top + plotHeight / 2)}" text-anchor="middle" transform="rotate(-90 16 ${fixed(top + margin.top + plotHeight / 2)})">latency (ms)</text>`);
  return parts;
}

/** Approximate width of 12px sans-serif text, for the legend's backing box. */
const legendCharWidth = 6.8;

function seriesLines(panel: LatencyPanel, scale: Scale, top: number): string[] {
  const parts: string[] = [];
  const lines: string[] = [];
  if (panel.series.length > 0) {
    const longest = Math.max(...panel.series.map((series) => series.label.length));
    const boxWidth = fixed(40 + longest * legendCharWidth);
    parts.push(`<rect x="${margin.left + 4}" y="${fixed(top + margin.top + 4)}" width="${boxWidth}" height="${panel.series.length * 16 + 4}" fill="#fff" fill-opacity="0.85"/>`);
  }
  panel.series.forEach((series, index) => {
    const color = palette[(series.colorIndex ?? index) % palette.length] as string;
    const dash = series.dashed === true ? ' stroke-dasharray="6 4"' : '';
    if (series.points.length > 0) {
      const path = series.points.map((point, i) => `${i === 0 ? 'M' : 'L'}${fixed(scale.x(depthOf(point.percentile)))},${fixed(scale.y(point.latencyMs))}`).join(' ');
      lines.push(`<path d="${path}" fill="none" stroke="${color}" stroke-width="2"${dash}/>`);
    }
    const legendY = top + margin.top + 14 + index * 16;
    parts.push(`<line x1="${margin.left + 10}" y1="${legendY}" x2="${margin.left + 34}" y2="${legendY}" stroke="${color}" stroke-width="2"${dash}/>`);
    parts.push(`<text x="${margin.left + 40}" y="${legendY}" dominant-baseline="middle">${escapeXml(series.label)}</text>`);
  });
  // The curves first, the legend over them.
  return [...lines, ...parts];
}

/** The whole picture: a title, then the panels stacked top to bottom. */
export function latencySvg(title: string, panels: readonly LatencyPanel[]): string {
  const height = titleHeight + panels.length * panelHeight;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    '<style>.grid{stroke:#ccc;stroke-width:1}.minor{stroke:#eee}text{fill:#222}</style>',
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${width / 2}" y="26" text-anchor="middle" font-size="16">${escapeXml(title)}</text>`,
  ];
  panels.forEach((panel, index) => {
    const top = titleHeight + index * panelHeight;
    const scale = scaleOf(panel, top);
    parts.push(`<g class="panel">`);
    parts.push(`<text x="${margin.left}" y="${fixed(top + margin.top - 10)}" font-size="14">${escapeXml(panel.title)}</text>`);
    parts.push(...axes(scale, top), ...seriesLines(panel, scale, top));
    parts.push(`<rect x="${margin.left}" y="${top + margin.top}" width="${plotWidth}" height="${plotHeight}" fill="none" stroke="#888"/>`);
    parts.push('</g>');
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
