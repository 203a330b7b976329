import type { Command } from 'commander';
import type { LoadedConfig } from '../config/load';
import { freezeJson } from '../admin/freeze-routes';
import { UserError } from './errors';
import { withStore } from './store';
import { renderTable } from './table';

/**
 * `tollgate freezes list|lift`: the spend freezes in the store, and lifting one. A running gateway lets the scope
 * through within budgets.runtime_refresh_ms (it reads the store in the background).
 */
export function registerFreezeCommands(program: Command, load: () => LoadedConfig): void {
  const freezes = program
    .command('freezes')
    .description('keys and tag values frozen after a spend anomaly: list them, lift one');

  freezes
    .command('list')
    .description('list the freezes in force (with --all: lifted and expired too), newest first')
    .option('--all', 'lifted and expired freezes too')
    .option('-n, --limit <n>', 'how many', '100')
    .option('--json', 'print them as JSON (as GET /api/freezes answers)')
    .action(async (opts: { all?: boolean; limit: string; json?: boolean }) => {
      const limit = Number(opts.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
        throw new UserError('--limit must be a whole number from 1 to 1000');
      const now = Date.now();
      const rows = await withStore(
        load(),
        async (store) => {
          const table = store.spendFreezes!();
          return opts.all ? table.list(limit) : (await table.active(now)).reverse().slice(0, limit);
        },
        { mustExist: true },
      );
      const shown = rows.map((r) => freezeJson(r, now));
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(shown, null, 2)}\n`);
        return;
      }
      if (shown.length === 0) {
        process.stdout.write(opts.all ? 'No spend freeze was ever made.\n' : 'No spend freeze is in force.\n');
        return;
      }
      const table = shown.map((f) => [
        f.id,
        f.workspace,
        f.scope,
        f.state,
        f.created_at,
        f.lifted_at ?? f.expires_at ?? 'until lifted',
        f.reason,
      ]);
      const headers = ['id', 'workspace', 'scope', 'state', 'frozen', 'until', 'reason'];
      process.stdout.write(
        `${renderTable(
          headers.map((header) => ({ header })),
          table,
        )}\n`,
      );
    });

  freezes
    .command('lift')
    .description('lift a freeze: its key or tag value is served again')
    .argument('<id>', 'the freeze id (frz_...)')
    .option('--json', 'print the freeze as JSON (as DELETE /api/freezes/{id} answers)')
    .action(async (id: string, opts: { json?: boolean }) => {
      const now = Date.now();
      const row = await withStore(load(), (store) => store.spendFreezes!().lift(id, now), { mustExist: true });
      if (!row) throw new UserError(`no spend freeze with id ${id}; tollgate freezes list --all shows them`);
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(freezeJson(row, now), null, 2)}\n`);
        return;
      }
      process.stdout.write(
        row.liftedAt !== null
          ? `Lifted ${row.id} (${row.scope} in workspace ${row.workspace}): running gateways serve it again within budgets.runtime_refresh_ms.\n`
          : `${row.id} had expired already; nothing to lift.\n`,
      );
    });
}
