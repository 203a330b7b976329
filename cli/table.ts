/**
 * Aligned plain-text tables for the terminal (cli-table3), borderless so that grep and awk still read them.
 * Widths are display columns (string-width), not UTF-16 units: a CJK character or an emoji takes two, so tag
 * values in any script line up.
 */
import Table from 'cli-table3';
import stringWidth from 'string-width';

export interface Column {
  header: string;
  /** Numbers and amounts are right-aligned. */
  align?: 'left' | 'right';
}

/** Wider cells are cut with "…" (a tag value may be 200 characters long). */
const MAX_CELL_WIDTH = 48;
const GAP = '  ';

const BORDERLESS = {
  top: '',
  'top-mid': '',
  'top-left': '',
  'top-right': '',
  bottom: '',
  'bottom-mid': '',
  'bottom-left': '',
  'bottom-right': '',
  left: '',
  'left-mid': '',
  mid: '',
  'mid-mid': '',
  right: '',
  'right-mid': '',
  middle: GAP,
};

export function renderTable(columns: Column[], rows: string[][]): string {
  const widths = columns.map((c, i) =>
    Math.min(MAX_CELL_WIDTH, Math.max(stringWidth(c.header), ...rows.map((r) => stringWidth(r[i])))),
  );
  const table = new Table({
    chars: BORDERLESS,
    colWidths: widths,
    colAligns: columns.map((c) => c.align ?? 'left'),
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true },
  });
  table.push(
    columns.map((c) => c.header),
    widths.map((w) => '-'.repeat(w)),
    ...rows,
  );
  return table
    .toString()
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n');
}
