import type { Command } from 'commander';
import type { LoadedConfig } from '../config/load';
import { localHost } from './local-host';

/** Longer than an orchestrator's usual probe time-out is pointless: it has given up by then. */
const TIMEOUT_MS = 4000;

/**
 * `tollgate healthcheck`: asks the running gateway's /healthz (or /readyz with --ready) on the port of the config it
 * runs with, and exits 0 when it answers 200, 1 otherwise. The container image's HEALTHCHECK runs it, so that a
 * mounted config's server.port is the one checked.
 */
export function registerHealthcheckCommand(program: Command, load: () => LoadedConfig): void {
  program
    .command('healthcheck')
    .description("ask the running gateway's /healthz on the configured port; exit 0 when it answers 200, else 1")
    .option('--ready', 'ask /readyz instead: exit 0 only when the gateway should get traffic')
    .action(async (opts: { ready?: boolean }) => {
      const { host, port } = load().config.server;
      const url = `http://${localHost(host)}:${port}/${opts.ready ? 'readyz' : 'healthz'}`;
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
        await res.body?.cancel();
        if (res.ok) return;
        process.stderr.write(`tollgate: ${url} answered ${res.status}\n`);
      } catch (err) {
        const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
        process.stderr.write(`tollgate: ${url}: ${cause}\n`);
      }
      process.exitCode = 1;
    });
}
