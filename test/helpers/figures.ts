import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from './fixtures';

/**
 * Figures the reliability suites measured, written to test-results/reliability-figures.json (git-ignored) as they
 * run; `npm run docs:reliability` writes them into docs/reliability.md. Each entry carries when and on what machine
 * it was measured, so a partial run (one suite) updates only its own entries.
 */
export const FIGURES_FILE = join(PROJECT_ROOT, 'test-results/reliability-figures.json');

export interface FigureEntry {
  measured_at: string;
  machine: string;
  values: Record<string, unknown>;
}

export type FiguresFile = Record<string, Record<string, FigureEntry>>;

export const machine = (): string => {
  const cpu = cpus();
  return `${cpu.length} × ${cpu[0]?.model.replace(/\s+/g, ' ').trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GB RAM, Node ${process.version}, ${process.platform}`;
};

export function readFigures(file = FIGURES_FILE): FiguresFile {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as FiguresFile;
  } catch {
    return {};
  }
}

/** Records (replaces) the figures `name` of `suite`. */
export function recordFigures(suite: string, name: string, values: Record<string, unknown>, file = FIGURES_FILE): void {
  const all = readFigures(file);
  (all[suite] ??= {})[name] = { measured_at: new Date().toISOString(), machine: machine(), values };
  mkdirSync(join(file, '..'), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(all, null, 2)}\n`);
  renameSync(tmp, file);
}
