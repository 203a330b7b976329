/** A test alert, sent at once to one channel outside the outbox: POST /api/alerts/test and `tollgate alerts test`. */
import type { AlertsConfig } from '../config/alerts';
import { completeAlert, type Alert } from './alert';
import type { AlertChannel } from './channels';
import type { PostResult } from './post-json';

export async function sendTestAlert(
  channel: AlertChannel,
  config: AlertsConfig,
  now = Date.now(),
): Promise<{ alert: Alert; result: PostResult }> {
  const alert = completeAlert(
    {
      kind: 'test',
      key: `${channel.name}:${now}`,
      workspace: null,
      scope: 'gateway',
      title: 'Tollgate test alert',
      summary: `A test of the alert channel ${channel.name}: alerts reach this channel.`,
      view: '#/usage',
    },
    now,
    config.dashboard_url,
  );
  return { alert, result: await channel.send(alert, config.delivery.timeout_ms) };
}
