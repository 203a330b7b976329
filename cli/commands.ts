/**
 * The CLI's command groups, each registered from its own module, loaded only when needed: a command such as
 * `tollgate usage` then loads the config, the store and the report, not the whole gateway (its providers, plugins,
 * admin API and telemetry), which is most of the CLI's start-up time. Help, an unknown command or no command
 * registers them all, so that help lists every command and commander can suggest the nearest name.
 */
import type { Command } from 'commander';
import type { LoadedConfig } from '../config/load';

type Register = (program: Command, load: () => LoadedConfig) => void;

/* eslint-disable @typescript-eslint/no-require-imports -- each group is required only when its command runs */
const GROUPS: Record<string, () => Register> = {
  usage: () => (require('./usage') as typeof import('./usage')).registerUsageCommands,
  keys: () => (require('./keys') as typeof import('./keys')).registerKeyCommands,
  prices: () => (require('./prices') as typeof import('./prices')).registerPriceCommands,
  alerts: () => (require('./alerts') as typeof import('./alerts')).registerAlertCommands,
  freezes: () => (require('./freezes') as typeof import('./freezes')).registerFreezeCommands,
  budgets: () => (require('./budgets') as typeof import('./budgets')).registerBudgetCommands,
  reconcile: () => (require('./reconcile') as typeof import('./reconcile')).registerReconcileCommand,
  'reconcile-fix': () => (require('./reconcile-fix') as typeof import('./reconcile-fix')).registerReconcileFixCommand,
  demo: () => (require('./demo') as typeof import('./demo')).registerDemoCommand,
  healthcheck: () => (require('./healthcheck') as typeof import('./healthcheck')).registerHealthcheckCommand,
};
/* eslint-enable @typescript-eslint/no-require-imports */

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
export function registerCommands(program: Command, load: () => LoadedConfig, args: readonly string[]): void {
  const asked = commandName(args);
  const groups = asked !== undefined && Object.hasOwn(GROUPS, asked) ? [GROUPS[asked]] : Object.values(GROUPS);
  for (const group of groups) group()(program, load);
}
