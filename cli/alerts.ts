import type { Command } from 'commander';
import type { LoadedConfig } from '../config/load';
import { openChannel } from '../alerts/channels';
import { sendTestAlert } from '../alerts/test-alert';
import { UserError } from './errors';
import { withStore } from './store';
import { renderTable } from './table';

/** `tollgate alerts list|test`: the alert history from the store, and a test alert to one channel. */
export function registerAlertCommands(program: Command, load: () => LoadedConfig): void {
  const alerts = program.command('alerts').description('budget alerts: their history, and a test to a channel');

  alerts
    .command('list')
    .description('list the alerts raised, newest first, with their delivery to each channel')
    .option('-n, --limit <n>', 'how many', '50')
    .option('--json', 'print them as JSON (the stored alerts)')
    .action(async (opts: { limit: string; json?: boolean }) => {
      const limit = Number(opts.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
        throw new UserError('--limit must be a whole number from 1 to 1000');
      const rows = await withStore(load(), async (store) => store.alertOutbox?.().list(limit, null) ?? [], {
        mustExist: true,
      });
      if (opts.json) {
        process.stdout.write(
          `${JSON.stringify(
            rows.map((r) => ({ ...r, body: JSON.parse(r.body) })),
            null,
            2,
          )}\n`,
        );
        return;
      }
      const table = rows.map((r) => [
        new Date(r.createdAt).toISOString(),
        r.channel,
        r.kind,
        (JSON.parse(r.body) as { title: string }).title,
        r.state === 'sent' ? 'sent' : `pending (${r.attempts} attempts${r.lastError ? `, ${r.lastError}` : ''})`,
      ]);
      process.stdout.write(
        `${renderTable(
          ['raised', 'channel', 'kind', 'alert', 'delivery'].map((header) => ({ header })),
          table,
        )}\n`,
      );
    });

  alerts
    .command('test')
    .description('send a test alert to a channel of alerts.channels now, and say whether it was taken')
    .argument('<channel>', 'the channel name')
    .option('--json', 'print the result as JSON: alert_id, channel, type, delivered, status')
    .action(async (name: string, opts: { json?: boolean }) => {
      const config = load().config.alerts;
      const channel = config.channels.find((c) => c.name === name);
      if (!channel)
        throw new UserError(
          `no alert channel named ${name}; configured: ${config.channels.map((c) => c.name).join(', ') || 'none'}`,
        );
      const { alert, result } = await sendTestAlert(openChannel(channel), config);
      if (!result.ok) throw new UserError(`channel ${name} did not take the test alert: ${result.error}`);
      if (opts.json) {
        const out = {
          alert_id: alert.alert_id,
          channel: name,
          type: channel.type,
          delivered: true,
          status: result.status,
        };
        process.stdout.write(`${JSON.stringify(out)}\n`);
        return;
      }
      process.stdout.write(
        `Test alert ${alert.alert_id} delivered to ${name} (${channel.type}, HTTP ${result.status})\n`,
      );
    });
}
