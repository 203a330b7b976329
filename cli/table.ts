/**
 * Aligned plain-text tables for the terminal, borderless so that grep and awk still read them: a header, a rule, one
 * line per row, columns two spaces apart. Widths are display columns (string-width), not UTF-16 units: a CJK
 * character or an emoji takes two, so tag values in any script line up.
 *
 * Linear in the cells: each cell's width is measured once, and every line is built once (a report of tens of
 * thousands of groups prints as fast as it is read).
 */
import stringWidth from 'string-width';

export interface Column {
  header: string;
  /** Numbers and amounts are right-aligned. */
  align?: 'left' | 'right';
}

/** Wider cells are cut with "…" (a tag value may be 200 characters long). */
const MAX_CELL_WIDTH = 48;
const GAP = '  ';
const ELLIPSIS = '…';
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

interface Cell {
  text: string;
  width: number;
}

/** The cell on one line (a line break or tab in a tag value would break the columns), cut to MAX_CELL_WIDTH. */
function measure(raw: string): Cell {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is replaced
  const text = raw.replace(/[\u0000-\u001f\u007f]/g, ' ');
  // Printable ASCII is one column a character: most cells (numbers, model names) skip the Unicode width tables.
  const width = PRINTABLE_ASCII.test(text) ? text.length : stringWidth(text);
  if (width <= MAX_CELL_WIDTH) return { text, width };
  let cut = '';
  let used = 0;
  for (const ch of text) {
    const w = stringWidth(ch);
    if (used + w > MAX_CELL_WIDTH - 1) break;
    cut += ch;
    used += w;
  }
  return { text: cut + ELLIPSIS, width: used + 1 };
}

export function renderTable(columns: Column[], rows: string[][]): string {
  const header = columns.map((c) => measure(c.header));
  const cells = rows.map((r) => columns.map((_, i) => measure(r[i] ?? '')));
  const widths = header.map((h) => h.width);
  for (const row of cells) row.forEach((c, i) => (widths[i] = Math.max(widths[i], c.width)));
  const line = (row: Cell[]) =>
    row
      .map((c, i) => {
        const pad = ' '.repeat(widths[i] - c.width);
        return columns[i].align === 'right' ? pad + c.text : c.text + pad;
      })
      .join(GAP)
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join(GAP);
  return [line(header), rule, ...cells.map(line)].join('\n');
}
