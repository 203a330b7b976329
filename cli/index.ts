#!/usr/bin/env node
import 'reflect-metadata';
import cluster from 'node:cluster';
import { Command } from 'commander';
import { ConfigError, configPath, loadConfigFile, type LoadedConfig } from '../config/load';
import { GatewayError } from '../core/errors';
import { onPrimaryShutdown, runPrimary, workerCount } from '../runtime/cluster';
import { prepareWiring } from '../runtime/wiring';
import { startGateway } from '../runtime/servers';
import { registerDemoCommand } from './demo';
import { registerKeyCommands } from './keys';
import { registerUsageCommands } from './usage';

const program = new Command()
  .name('tollgate')
  .description('Tollgate: a transparent gateway for language-model APIs with exact cost attribution')
  .option('-c, --config <file>', 'config file (default: $GATEWAY_CONFIG or ./gateway.config.yaml)');

function loadOrExit(): LoadedConfig {
  try {
    return loadConfigFile(configPath(program.opts().config));
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`tollgate: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

program
  .command('start')
  .description('start the gateway')
  .option('-w, --workers <n>', 'gateway processes sharing the port, a number or "auto" (one per CPU core); default: server.workers')
  .action(async (options: { workers?: string }) => {
    const loaded = loadOrExit();
    let workers: number;
    try {
      workers = workerCount(options.workers ?? loaded.config.server.workers);
    } catch (err) {
      process.stderr.write(`tollgate: ${(err as Error).message}\n`);
      process.exit(2);
    }
    if (workers > 1 && cluster.isPrimary) {
      try {
        process.exit(await runPrimary(loaded, workers));
      } catch (err) {
        process.stderr.write(`tollgate: cannot start: ${(err as Error).message}\n`);
        process.exit(1);
      }
    }
    let running;
    try {
      running = await startGateway(loaded);
    } catch (err) {
      process.stderr.write(`tollgate: cannot start: ${(err as Error).message}\n`);
      process.exit(1);
    }
    const { gateway, url, adminUrl, stop } = running;
    gateway.logger.info({ url, adminUrl, config: loaded.path, providers: gateway.providers.list().map((p) => p.slug) }, 'tollgate listening');
    if (adminUrl) process.stderr.write(`Tollgate admin API and dashboard on ${adminUrl}\n`);
    process.stderr.write(`Tollgate proxy listening on ${url} (config ${loaded.path})\n`);
    let signals = 0;
    const shutdown = (signal: string, counted = true) => {
      if (counted && ++signals > 1) process.exit(130); // a second signal forces the exit
      gateway.logger.info({ signal }, 'shutting down: finishing in-flight requests');
      stop().then(
        () => process.exit(0),
        (err) => {
          process.stderr.write(`tollgate: shutdown failed: ${(err as Error).message}\n`);
          process.exit(1);
        },
      );
    };
    process.on('SIGTERM', () => shutdown('SIGTERM'));
    process.on('SIGINT', () => shutdown('SIGINT'));
    onPrimaryShutdown(() => shutdown('primary', false)); // multi-core mode: the primary stops every worker
  });

program
  .command('check-config')
  .description('validate the config file, its provider modules, plugins and prices, and exit (0 = valid)')
  .action(async () => {
    const loaded = loadOrExit();
    const c = loaded.config;
    try {
      await prepareWiring(loaded);
    } catch (err) {
      process.stderr.write(`tollgate: ${loaded.path}: ${(err as Error).message}\n`);
      process.exit(2);
    }
    for (const warning of loaded.warnings ?? []) process.stderr.write(`tollgate: warning: ${warning}\n`);
    process.stdout.write(`${loaded.path} is valid: proxy ${c.server.host}:${c.server.port}, ${Object.keys(c.providers).length} provider entries, ${c.workspaces.length} workspace(s), ${c.plugins.length} plugin(s)\n`);
  });

registerUsageCommands(program, loadOrExit);
registerKeyCommands(program, loadOrExit);
registerDemoCommand(program);

program.parseAsync(process.argv).catch((err) => {
  // A refusal the user can act on (unknown workspace ...) prints its message; anything else its stack.
  process.stderr.write(`tollgate: ${err instanceof GatewayError ? err.message : ((err as Error).stack ?? err)}\n`);
  process.exit(1);
});
