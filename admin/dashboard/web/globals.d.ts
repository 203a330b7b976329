// Chart.js is loaded as its UMD build (/assets/chart.umd.min.js, from node_modules), which defines the global
// `Chart` with every chart type registered. Only its types are imported here; nothing is bundled.
import type { Chart as ChartClass } from 'chart.js';

declare global {
  const Chart: typeof ChartClass;
}

export {};
