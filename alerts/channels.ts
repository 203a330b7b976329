/**
 * The alert channels: a signed generic webhook and a Slack incoming webhook. Each turns an alert into the body its
 * receiver expects and sends it with postJson.
 */
import { createHmac } from 'node:crypto';
import type { AlertChannelConfig } from '../config/alerts';
import type { Alert } from './alert';
import { postJson, type PostResult } from './post-json';
import { slackMessage } from './slack-message';

export interface AlertChannel {
  readonly name: string;
  readonly type: AlertChannelConfig['type'];
  send(alert: Alert, timeoutMs: number): Promise<PostResult>;
}

const SIGNATURE_HEADER = 'x-tollgate-signature';
const TIMESTAMP_HEADER = 'x-tollgate-timestamp';

/** The signature header's value: HMAC-SHA256 of the exact body bytes with the channel's secret, in hex. */
export function signature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

export function openChannel(c: AlertChannelConfig): AlertChannel {
  if (c.type === 'slack')
    return {
      name: c.name,
      type: c.type,
      send: (alert, timeoutMs) => postJson(c.url, JSON.stringify(slackMessage(alert)), {}, timeoutMs),
    };
  return {
    name: c.name,
    type: c.type,
    send: (alert, timeoutMs) => {
      const body = JSON.stringify(alert);
      return postJson(
        c.url,
        body,
        {
          [SIGNATURE_HEADER]: signature(c.secret, body),
          [TIMESTAMP_HEADER]: String(Math.floor(Date.now() / 1000)),
          'x-tollgate-alert-id': alert.alert_id,
        },
        timeoutMs,
      );
    },
  };
}
