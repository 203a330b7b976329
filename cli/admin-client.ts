/**
 * The CLI commands that need the running gateway's view (budgets with their spend and forecast) ask its admin API:
 * at --admin-url, else TOLLGATE_ADMIN_URL, else the admin listener of the config (admin.host, admin.port), with
 * the config's admin token (admin.token, usually ${TOLLGATE_ADMIN_TOKEN}).
 */
import type { LoadedConfig } from '../config/load';
import { UserError } from './errors';
import { localHost } from './local-host';

/** Longer than an admin answer should ever take; the admin API cancels its own queries before. */
const TIMEOUT_MS = 30_000;

export type AdminCall = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: object) => Promise<unknown>;

export function adminCall(loaded: LoadedConfig, adminUrl: string | undefined): AdminCall {
  const { host, port, token } = loaded.config.admin;
  const base = (adminUrl ?? process.env.TOLLGATE_ADMIN_URL ?? `http://${localHost(host)}:${port}`).replace(/\/+$/, '');
  if (!token) throw new UserError('the admin API needs admin.token (TOLLGATE_ADMIN_TOKEN) in the config');
  return async (method, path, body) => {
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
      throw new UserError(`cannot reach the admin API at ${base} (${cause}): is the gateway running?`);
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      const e = (json as { error?: { message: string; code: string } } | undefined)?.error;
      throw new UserError(e ? `${e.message} (${res.status} ${e.code})` : `${method} ${path} answered ${res.status}`);
    }
    return json;
  };
}
