/**
 * The CLI's command groups, each registered from its own module, loaded only when needed: a command such as
 * `tollgate usage` then loads the config, the store and the report, not the whole gateway (its providers, plugins,
 * admin API and telemetry), which is most of the CLI's start-up time. Help, an unknown command or no command
 * registers them all, so that help lists every command and commander can suggest the nearest name.
 */
import type { Command } from 'commander';
import type { LoadedConfig } from '../config/load';

type Register = (program: Command, load: () => LoadedConfig) => void;

const GROUPS: Record<string, () => Promise<Register>> = {
  usage: async () => (await import('./usage.js')).registerUsageCommands,
  keys: async () => (await import('./keys.js')).registerKeyCommands,
  prices: async () => (await import('./prices.js')).registerPriceCommands,
  alerts: async () => (await import('./alerts.js')).registerAlertCommands,
  freezes: async () => (await import('./freezes.js')).registerFreezeCommands,
  budgets: async () => (await import('./budgets.js')).registerBudgetCommands,
  reconcile: async () => (await import('./reconcile.js')).registerReconcileCommand,
  'reconcile-fix': async () => (await import('./reconcile-fix.js')).registerReconcileFixCommand,
  demo: async () => (await import('./demo.js')).registerDemoCommand,
  healthcheck: async () => (await import('./healthcheck.js')).registerHealthcheckCommand,
};

/** Options of the program itself that take a value (the value is not the command's name). */
const PROGRAM_OPTIONS_WITH_VALUE = new Set(['-c', '--config']);

/** The command named on the command line (its first word that is no option), or undefined. */
export function commandName(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (PROGRAM_OPTIONS_WITH_VALUE.has(arg)) i++;
    else if (!arg.startsWith('-')) return arg;
  }
  return undefined;
}

/** Registers the group of the command asked for, or every group when none of them is asked for. */
export async function registerCommands(
  program: Command,
  load: () => LoadedConfig,
  args: readonly string[],
): Promise<void> {
  const asked = commandName(args);
  const groups = asked !== undefined && Object.hasOwn(GROUPS, asked) ? [GROUPS[asked]] : Object.values(GROUPS);
  for (const group of groups) (await group())(program, load);
}
