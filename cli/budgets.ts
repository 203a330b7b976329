import type { Command } from 'commander';
import type { LoadedConfig } from '../config/load';
import { adminCall, type AdminCall } from './admin-client';
import { UserError } from './errors';
import { collect, keyValues } from './key-values';
import { renderTable } from './table';

/** The fields of GET /api/budgets the table shows. */
interface BudgetRow {
  id: string;
  workspace: string;
  scope: string;
  period: string;
  spent_usd: string;
  limit_usd: string;
  used_share: number;
  action: string;
  forecast: { projected_usd: string; limit_reached_at: string | null } | null;
}

interface SetOptions {
  workspace?: string;
  period?: string;
  usd?: string;
  tag: string[];
  perTag?: string;
  key?: string;
  perKey?: boolean;
  override: string[];
  alertAt?: string;
  onExceed?: string;
  minOutputTokens?: string;
  adminUrl?: string;
  json?: boolean;
}

/**
 * `tollgate budgets list|set|delete`: the budgets of the running gateway through its admin API (GET, POST, PATCH
 * and DELETE /api/budgets), since their spend and forecast live in the gateway's limit store. YAML budgets are
 * listed and read-only.
 */
export function registerBudgetCommands(program: Command, load: () => LoadedConfig): void {
  const budgets = program
    .command('budgets')
    .description("budgets with their spend, limit and forecast, through the running gateway's admin API");
  const adminUrl = '--admin-url <url>';
  const adminUrlHelp = 'the admin API (default: TOLLGATE_ADMIN_URL, else admin.host and admin.port of the config)';

  budgets
    .command('list')
    .description('list every budget in its current period: spend, limit, forecast and action')
    .option(adminUrl, adminUrlHelp)
    .option('--json', 'print them as JSON (the fields of GET /api/budgets)')
    .action(async (opts: { adminUrl?: string; json?: boolean }) => {
      const rows = await allBudgets(adminCall(load(), opts.adminUrl));
      process.stdout.write(opts.json ? `${JSON.stringify(rows, null, 2)}\n` : `${budgetTable(rows)}\n`);
    });

  budgets
    .command('set [id]')
    .description('create a runtime budget, or change the one with this id (only the options given)')
    .option('-w, --workspace <id>', 'workspace (default: the first in the config; cannot change)')
    .option('--period <period>', 'day or month')
    .option('--usd <amount>', 'the limit for the period, e.g. 25 or 12.5')
    .option('--tag <key=value>', 'only requests with this tag value count (repeatable)', collect, [] as string[])
    .option('--per-tag <key>', 'a budget of this size for every value of this tag')
    .option('--key <id>', 'only requests made with this gateway key count')
    .option('--per-key', 'a budget of this size for every gateway key')
    .option(
      '--override <value=usd>',
      'with --per-tag or --per-key: another limit for one value (repeatable)',
      collect,
      [],
    )
    .option('--alert-at <shares>', 'alert thresholds, shares of the limit, e.g. 0.5,0.8,1')
    .option('--on-exceed <action>', 'block (refuse), warn (only alert) or clamp (lower the output-token limit)')
    .option('--min-output-tokens <n>', 'with --on-exceed clamp: the fewest output tokens a clamped request keeps')
    .option(adminUrl, adminUrlHelp)
    .option('--json', 'print the budget as JSON (the answer of POST or PATCH /api/budgets)')
    .action(async (id: string | undefined, opts: SetOptions) => {
      const call = adminCall(load(), opts.adminUrl);
      const body = budgetBody(opts);
      if (!id && (body.period === undefined || body.usd === undefined))
        throw new UserError('a new budget needs --period and --usd');
      const saved = (
        id
          ? await call('PATCH', `/api/budgets/${encodeURIComponent(id)}`, body)
          : await call('POST', '/api/budgets', body)
      ) as { id: string };
      process.stdout.write(opts.json ? `${JSON.stringify(saved)}\n` : `${id ? 'Changed' : 'Created'} ${saved.id}\n`);
    });

  budgets
    .command('delete <id>')
    .description('delete a runtime budget (budgets of the YAML are changed there)')
    .option(adminUrl, adminUrlHelp)
    .option('--json', 'print the result as JSON (the answer of DELETE /api/budgets/{id})')
    .action(async (id: string, opts: { adminUrl?: string; json?: boolean }) => {
      const done = await adminCall(load(), opts.adminUrl)('DELETE', `/api/budgets/${encodeURIComponent(id)}`);
      process.stdout.write(opts.json ? `${JSON.stringify(done)}\n` : `Deleted ${id}\n`);
    });
}

/** Every page of GET /api/budgets. */
async function allBudgets(call: AdminCall): Promise<BudgetRow[]> {
  const rows: BudgetRow[] = [];
  let cursor: string | null = null;
  do {
    const page = (await call(
      'GET',
      `/api/budgets?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    )) as { data: BudgetRow[]; next_cursor: string | null };
    rows.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  return rows;
}

function budgetTable(rows: BudgetRow[]): string {
  const forecast = (b: BudgetRow) => {
    if (!b.forecast) return '-';
    const reached = b.forecast.limit_reached_at;
    return `$${b.forecast.projected_usd}${reached ? ` (limit ${reached.slice(0, 16).replace('T', ' ')})` : ''}`;
  };
  return renderTable(
    [
      { header: 'id' },
      { header: 'workspace' },
      { header: 'scope' },
      { header: 'period' },
      { header: 'spent', align: 'right' },
      { header: 'limit', align: 'right' },
      { header: 'used', align: 'right' },
      { header: 'forecast', align: 'right' },
      { header: 'action' },
    ],
    rows.map((b) => [
      b.id,
      b.workspace,
      b.scope,
      b.period,
      `$${b.spent_usd}`,
      `$${b.limit_usd}`,
      `${Math.round(b.used_share * 1000) / 10}%`,
      forecast(b),
      b.action,
    ]),
  );
}

/** The fields given, as POST/PATCH /api/budgets takes them; the admin API checks them. */
function budgetBody(opts: SetOptions): Record<string, unknown> {
  const body: Record<string, unknown> = {
    workspace: opts.workspace,
    period: opts.period,
    usd: opts.usd,
    per_tag: opts.perTag,
    key: opts.key,
    per_key: opts.perKey,
    on_exceed: opts.onExceed,
  };
  if (opts.tag.length > 0) body.tag = keyValues(opts.tag, '--tag');
  if (opts.override.length > 0) body.overrides = keyValues(opts.override, '--override');
  if (opts.alertAt !== undefined) body.alert_at = opts.alertAt.split(',').map((s) => Number(s.trim()));
  if (opts.minOutputTokens !== undefined) body.min_output_tokens = Number(opts.minOutputTokens);
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
}
