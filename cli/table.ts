/**
 * Renders rows as an aligned plain-text table for terminal output. Number columns are right-aligned: those
 * whose cells are numbers or amounts ("$0.00027", ">=$0.5"), where "unknown" and "" may stand for a missing one.
 */
export function renderTable(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  const numeric = headers.map((_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === 'number' || NUMERIC_CELL.test(String(r[i]))));
  const line = (r: string[]) => r.map((c, i) => (numeric[i] ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

const NUMERIC_CELL = /^(?:(?:>=)?[\d.,$-]+|unknown|)$/;
