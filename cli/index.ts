#!/usr/bin/env node
// First: the young generation's cap must be in place before the other modules load (cli/early-memory.ts).
import './early-memory';
import 'reflect-metadata';
import cluster from 'node:cluster';
import { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configPath, loadConfigFile, type LoadedConfig } from '../config/load';
import { exitQuietlyWhenOutputCloses } from './closed-output';
import { registerCommands } from './commands';
import { errorLine, EXIT_INTERNAL, EXIT_USER, exitWithError, isUserError, listenFailure, UserError } from './errors';

exitQuietlyWhenOutputCloses();

/** The installed package's version: dist/cli/index.js sits two folders below package.json. */
const { version } = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
  version: string;
};

const program = new Command()
  .name('tollgate')
  .description('Tollgate: a transparent gateway for language-model APIs with exact cost attribution')
  .version(version, '-V, --version', 'print the version')
  .option('-c, --config <file>', 'config file (default: $GATEWAY_CONFIG or ./gateway.config.yaml)')
  // Commander's own refusals (unknown option, missing or invalid argument) end as the others do: one line, exit 2.
  .exitOverride()
  // (its suggestion, "(Did you mean usage?)", comes on a line of its own: joined to the message).
  .configureOutput({
    outputError: (text, write) => write(`tollgate: ${text.replace(/^error: /, '').replace(/\n(?=.)/g, ' ')}`),
  });

/** The config file, or a one-line error (exit 2) naming what is wrong with it. */
function loadOrExit(): LoadedConfig {
  try {
    return loadConfigFile(configPath(program.opts().config));
  } catch (err) {
    exitWithError(err);
  }
}

program
  .command('start')
  .description('start the gateway')
  .option(
    '-w, --workers <n>',
    'gateway processes sharing the port, a number or "auto" (one per CPU core); default: server.workers',
  )
  .action(async (options: { workers?: string }) => {
    // The gateway itself, loaded by the commands that run it only (cli/commands.ts says why).
    const { onPrimaryShutdown, runPrimary, workerCount } = await import('../runtime/cluster.js');
    const { startGateway } = await import('../runtime/servers.js');
    const loaded = loadOrExit();
    let workers: number;
    try {
      workers = workerCount(options.workers ?? loaded.config.server.workers);
    } catch (err) {
      exitWithError(new UserError((err as Error).message));
    }
    if (workers > 1 && cluster.isPrimary) {
      try {
        process.exit(await runPrimary(loaded, workers));
      } catch (err) {
        exitWithError(listenFailure(err), 'cannot start');
      }
    }
    let running;
    try {
      running = await startGateway(loaded);
    } catch (err) {
      const failure = listenFailure(err);
      // With several workers each fails alike (same config, same port): the first one says why, the others
      // exit with the same code, and the primary stops (runtime/cluster.ts).
      if (cluster.isWorker && cluster.worker?.id !== 1) process.exit(isUserError(failure) ? EXIT_USER : EXIT_INTERNAL);
      exitWithError(failure, 'cannot start');
    }
    const { gateway, url, adminUrl, stop } = running;
    gateway.logger.info(
      { url, adminUrl, config: loaded.path, providers: gateway.providers.list().map((p) => p.slug) },
      'tollgate listening',
    );
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
  .option('--json', 'print the result as JSON: {"valid": true, ...}, or {"valid": false, "error": ...} with exit 2')
  .action(async (opts: { json?: boolean }) => {
    const invalid = (err: unknown): never => {
      if (!opts.json) exitWithError(err);
      process.stdout.write(`${JSON.stringify({ valid: false, error: errorLine(err) })}\n`);
      process.exit(EXIT_USER);
    };
    let loaded: LoadedConfig;
    try {
      loaded = loadConfigFile(configPath(program.opts().config));
    } catch (err) {
      return invalid(err);
    }
    const c = loaded.config;
    try {
      // The gateway's wiring, loaded for this command only (cli/commands.ts says why).
      await (await import('../runtime/wiring.js')).prepareWiring(loaded);
    } catch (err) {
      invalid(new UserError(`${loaded.path}: ${errorLine(err)}`, { cause: err }));
    }
    if (opts.json) {
      const summary = {
        valid: true,
        path: loaded.path,
        proxy: `${c.server.host}:${c.server.port}`,
        providers: Object.keys(c.providers).length,
        workspaces: c.workspaces.length,
        plugins: c.plugins.length,
        warnings: loaded.warnings ?? [],
      };
      process.stdout.write(`${JSON.stringify(summary)}\n`);
      return;
    }
    for (const warning of loaded.warnings ?? []) process.stderr.write(`tollgate: warning: ${warning}\n`);
    process.stdout.write(
      `${loaded.path} is valid: proxy ${c.server.host}:${c.server.port}, ${Object.keys(c.providers).length} provider entries, ${c.workspaces.length} workspace(s), ${c.plugins.length} plugin(s)\n`,
    );
  });

registerCommands(program, loadOrExit, process.argv.slice(2))
  .then(() => program.parseAsync(process.argv))
  .catch((err) => exitWithError(err));
