/**
 * GET /api/alerts (the alert history, newest first, page by page) and POST /api/alerts/test (a test alert sent at
 * once to one channel). Neither shows a channel's URL or secret: only its name and type.
 */
import type Router from '@koa/router';
import type { AlertService } from '../alerts/service';
import { parseJsonBody, readBody } from '../intake/body';
import { GatewayError } from '../core/errors';
import type { OutboxRow } from '../storage/alert-outbox';
import { decodePageCursor, encodePageCursor, isPositiveId } from './page-cursor';
import { limitFrom, queryValue } from './query-params';

function alertJson(row: OutboxRow) {
  return {
    alert_id: row.alertId,
    channel: row.channel,
    kind: row.kind,
    workspace: row.workspace,
    created_at: new Date(row.createdAt).toISOString(),
    state: row.state,
    attempts: row.attempts,
    sent_at: row.sentAt === null ? null : new Date(row.sentAt).toISOString(),
    next_attempt_at: row.state === 'sent' ? null : new Date(row.nextAttemptAt).toISOString(),
    last_error: row.lastError,
    alert: JSON.parse(row.body) as unknown,
  };
}

export function registerAlertRoutes(router: Router, alerts: AlertService): void {
  router.get('/alerts', async (ctx) => {
    const limit = limitFrom(ctx.query);
    const cursor = queryValue(ctx.query, 'cursor');
    const before = cursor ? decodePageCursor(cursor, isPositiveId) : null;
    const rows = await alerts.history(limit + 1, before);
    const page = rows.slice(0, limit);
    ctx.body = {
      data: page.map(alertJson),
      next_cursor: rows.length > limit ? encodePageCursor(page[page.length - 1].seq) : null,
    };
  });

  router.post('/alerts/test', async (ctx) => {
    const body = ctx.request.length ? parseJsonBody(await readBody(ctx.req, 64 * 1024)) : {};
    const name = body.channel;
    const names = alerts.channels.map((c) => c.name);
    if (typeof name !== 'string' || !names.includes(name))
      throw new GatewayError(
        'invalid_body',
        names.length === 0
          ? 'No alert channel is configured (alerts.channels).'
          : `channel must name a configured alert channel: ${names.join(', ')}`,
        { param: 'channel' },
      );
    const sent = (await alerts.test(name))!;
    ctx.body = {
      channel: name,
      delivered: sent.result.ok,
      status: sent.result.status,
      error: sent.result.error,
      alert: sent.alert,
    };
  });
}
