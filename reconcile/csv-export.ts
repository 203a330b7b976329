/**
 * A provider console's CSV export, for a provider or an account the admin APIs do not cover. The first row names
 * the columns; each field is found by any of its accepted names (case and spaces do not matter), so the exports
 * of the OpenAI and Anthropic consoles and a hand-made sheet all read. Only the day, the model and one cost column
 * are required; see docs/reconciliation.md for the mapping.
 */
import { BadAmountError, picoFrom, type MoneyUnit } from './units';
import type { BillLine } from './bill';

/** Accepted header names per field, normalised (lower case, runs of spaces and dashes as one underscore). */
export const CSV_COLUMNS = {
  day: ['date', 'day', 'usage_date', 'usage_date_utc', 'start_time', 'bucket_start'],
  model: ['model', 'model_version', 'model_name'],
  scope: ['project', 'project_id', 'workspace', 'workspace_id', 'api_key', 'api_key_id'],
  requests: ['requests', 'num_model_requests', 'request_count'],
  input: ['input_tokens', 'uncached_input_tokens', 'prompt_tokens'],
  cacheRead: ['cache_read_tokens', 'cache_read_input_tokens', 'input_cached_tokens', 'cached_input_tokens'],
  cacheWrite: ['cache_write_tokens', 'cache_creation_input_tokens', 'cache_creation_tokens'],
  output: ['output_tokens', 'completion_tokens'],
  costUsd: ['cost_usd', 'amount_usd', 'cost', 'amount', 'cost_(usd)'],
  costCents: ['cost_cents', 'amount_cents'],
} as const;

type Field = keyof typeof CSV_COLUMNS;

export class CsvExportError extends Error {}

/** RFC 4180 rows: quoted fields may hold commas, doubled quotes and line breaks. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  const endRow = () => {
    row.push(field);
    if (row.some((f) => f !== '')) rows.push(row);
    row = [];
    field = '';
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field === '') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      endRow();
    } else field += c;
  }
  if (quoted) throw new CsvExportError('the file ends inside a quoted field');
  endRow();
  return rows;
}

const normalise = (header: string) =>
  header
    .replace(/^\uFEFF/, '')
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');

function columnsOf(header: string[]): Partial<Record<Field, number>> {
  const names = header.map(normalise);
  const found: Partial<Record<Field, number>> = {};
  for (const [field, accepted] of Object.entries(CSV_COLUMNS) as [Field, readonly string[]][]) {
    const at = names.findIndex((n) => accepted.includes(n));
    if (at >= 0) found[field] = at;
  }
  return found;
}

function dayOf(text: string, line: number): string {
  const m = /^(\d{4}-\d{2}-\d{2})/.exec(text.trim());
  if (!m || Number.isNaN(Date.parse(m[1]))) throw new CsvExportError(`line ${line}: "${text}" is not a date`);
  return m[1];
}

function tokensOf(text: string | undefined, line: number): number {
  if (text === undefined || text.trim() === '') return 0;
  const n = Number(text.replace(/[,_\s]/g, ''));
  if (!Number.isSafeInteger(n) || n < 0) throw new CsvExportError(`line ${line}: "${text}" is not a token count`);
  return n;
}

/** The export's rows as bill lines of `provider`. */
export function readCsvExport(text: string, provider: string): BillLine[] {
  const [header, ...rows] = parseCsv(text);
  if (!header) throw new CsvExportError('the file is empty');
  const col = columnsOf(header);
  const costCol = col.costCents ?? col.costUsd;
  const unit: MoneyUnit = col.costCents !== undefined ? 'cents' : 'usd';
  const missing = [
    col.day === undefined && 'a date',
    col.model === undefined && 'a model',
    costCol === undefined && 'a cost',
  ];
  if (missing.some(Boolean))
    throw new CsvExportError(
      `the header has no column for ${missing.filter(Boolean).join(', ')} (read: ${header.join(', ')})`,
    );
  const hasTokens = col.input !== undefined || col.output !== undefined;
  return rows.map((row, i) => {
    const line = i + 2;
    const cell = (f: Field) => (col[f] === undefined ? undefined : row[col[f]!]);
    const cost = cell(costCol === col.costCents ? 'costCents' : 'costUsd')!
      .replace(/^\$/, '')
      .trim();
    let costPico: bigint;
    try {
      costPico = picoFrom(cost, unit);
    } catch (err) {
      if (err instanceof BadAmountError) throw new CsvExportError(`line ${line}: "${cost}" is not an amount`);
      throw err;
    }
    return {
      day: dayOf(cell('day') ?? '', line),
      provider,
      model: cell('model')?.trim() || null,
      scope: cell('scope')?.trim() || null,
      requests: col.requests === undefined ? null : tokensOf(cell('requests'), line),
      tokens: hasTokens
        ? {
            input: tokensOf(cell('input'), line),
            cacheRead: tokensOf(cell('cacheRead'), line),
            cacheWrite: tokensOf(cell('cacheWrite'), line),
            output: tokensOf(cell('output'), line),
          }
        : null,
      costPico,
    };
  });
}
