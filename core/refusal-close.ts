import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { closeLingering } from './lingering-close';

/**
 * Refusals after which the connection is closed, draining what the client still sends of the refused body first, so
 * that it reads the answer rather than a reset (core/lingering-close.ts): a body not read to its end
 * (core/body-intake.ts), and a request without a valid gateway key. A connection that brought no valid key gets one
 * answer: a client pipelining thousands of keyless requests would otherwise have each refused in turn, back to back
 * on the proxy's thread, holding every other tenant's request behind them. SDKs open a new connection after a close.
 */
const LINGER_AFTER: ReadonlySet<string> = new Set([
  'body_too_large',
  'body_timeout',
  'gateway_key_missing',
  'gateway_key_invalid',
  'auth_blocked',
]);
/**
 * Those, and gateway_busy: the gateway is short of body memory then, and reading on would take more of it; a busy
 * refusal closes at once, and a client still sending may see a reset.
 */
const CLOSE_AFTER: ReadonlySet<string> = new Set([...LINGER_AFTER, 'gateway_busy']);

/** Marks the refusal's answer `connection: close` when its code says so, and has the connection drain first when due. */
export function closeAfterRefusal(code: string, req: IncomingMessage, headers: OutgoingHttpHeaders): void {
  if (!CLOSE_AFTER.has(code)) return;
  headers.connection = 'close';
  if (LINGER_AFTER.has(code)) closeLingering(req);
}
