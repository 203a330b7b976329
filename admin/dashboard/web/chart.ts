/** The cost-over-time chart: one stacked bar per UTC hour/day, top groups plus "other" (Chart.js). */
import type { Chart as ChartInstance } from 'chart.js';
import { axisMoney, bucketLabel, DAY, HOUR, int, money } from './format.js';

export const PALETTE = ['#4f6bed', '#13a89e', '#f2a93b', '#e5566d', '#8e6fd8', '#3fa7dc', '#7cb342', '#d97b4a'];
export const OTHER_COLOR = '#b8bfcc';

export interface Series {
  label: string;
  color: string;
  /** One value per bucket: pico-USD (metric cost) or counts (metric requests). */
  values: bigint[];
}

/** The charts on the page (the latency view draws two). */
let current: Pick<ChartInstance, 'destroy'>[] = [];

export function destroyChart(): void {
  for (const c of current) c.destroy();
  current = [];
}

/** The buckets the range covers only in part (its first and last, cut by from / to): marked, never read as dips. */
export function partialBuckets(buckets: number[], interval: 'hour' | 'day', from: number, to: number): boolean[] {
  const size = interval === 'hour' ? HOUR : DAY;
  return buckets.map((b) => b < from || b + size > to);
}

/** Bars of a partial bucket are drawn paler, and its label carries PARTIAL_MARK. */
export const PARTIAL_MARK = ' *';

export function drawChart(
  canvas: HTMLCanvasElement,
  buckets: number[],
  { interval, partial }: { interval: 'hour' | 'day'; partial: boolean[] },
  series: Series[],
  metric: 'cost' | 'requests',
): void {
  destroyChart();
  const toNumber = (v: bigint) => (metric === 'cost' ? Number(v) / 1e12 : Number(v));
  const fmt = (v: number) => (metric === 'cost' ? money(BigInt(Math.round(v * 1e12))) : int(v));
  const chart = new Chart(canvas, {
    type: 'bar',
    data: {
      labels: buckets.map((b, i) => bucketLabel(b, interval) + (partial[i] ? PARTIAL_MARK : '')),
      datasets: series.map((s) => ({
        label: s.label,
        data: s.values.map(toNumber),
        backgroundColor: partial.map((p) => (p ? `${s.color}66` : s.color)),
        borderWidth: 0,
        barPercentage: 0.9,
        categoryPercentage: 0.9,
      })),
    },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: 'index', intersect: false },
      scales: {
        x: {
          stacked: true,
          grid: { display: false },
          ticks: { maxRotation: 0, autoSkipPadding: 12, color: '#6b7385' },
        },
        y: {
          stacked: true,
          beginAtZero: true,
          grid: { color: '#eef0f4' },
          // One precision for every tick label (money() picks its decimals per value).
          ticks: {
            color: '#6b7385',
            callback: (v, _i, ticks) =>
              metric === 'cost' ? axisMoney(ticks.map((t) => t.value))(Number(v)) : int(Number(v)),
          },
        },
      },
      plugins: {
        legend: { position: 'bottom', labels: { boxWidth: 12, boxHeight: 12, color: '#2a3142' } },
        tooltip: {
          filter: (item) => Number(item.raw) !== 0,
          callbacks: {
            label: (item) => ` ${item.dataset.label}: ${fmt(Number(item.raw))}`,
            footer: (items) =>
              items.length && partial[items[0].dataIndex] ? 'Partial: the range covers only part of this bucket' : '',
          },
        },
      },
    },
  });
  current.push(chart);
}

/**
 * Lines over time (the latency view): one per series, a gap where a bucket has no value. Added beside the charts
 * already drawn: the view clears them (destroyChart) before it draws its own.
 */
export function drawLines(
  canvas: HTMLCanvasElement,
  labels: string[],
  series: { label: string; color: string; values: (number | null)[] }[],
  format: (v: number) => string,
): void {
  const chart = new Chart(canvas, {
    type: 'line',
    data: {
      labels,
      datasets: series.map((s) => ({
        label: s.label,
        data: s.values,
        borderColor: s.color,
        backgroundColor: s.color,
        spanGaps: false,
        pointRadius: 2,
        borderWidth: 2,
      })),
    },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: 'index', intersect: false },
      scales: {
        x: { grid: { display: false }, ticks: { maxRotation: 0, autoSkipPadding: 12, color: '#6b7385' } },
        y: {
          beginAtZero: true,
          grid: { color: '#eef0f4' },
          ticks: { color: '#6b7385', callback: (v) => format(Number(v)) },
        },
      },
      plugins: {
        legend: { position: 'bottom', labels: { boxWidth: 12, boxHeight: 12, color: '#2a3142' } },
        tooltip: { callbacks: { label: (item) => ` ${item.dataset.label}: ${format(Number(item.raw))}` } },
      },
    },
  });
  current.push(chart);
}
