import { expect } from 'chai';
import { Command } from 'commander';
import { commandName, registerCommands } from '../../cli/commands';
import type { LoadedConfig } from '../../config/load';

describe('the CLI loads the command it runs', () => {
  const names = async (args: string[]) => {
    const program = new Command();
    await registerCommands(program, () => ({}) as LoadedConfig, args);
    return program.commands.map((c) => c.name());
  };

  it('finds the command after the program options, skipping the value of --config', () => {
    expect(commandName(['usage', '-g', 'model'])).to.equal('usage');
    expect(commandName(['-c', 'usage', 'keys', 'list'])).to.equal('keys');
    expect(commandName(['--config', 'x.yaml', 'prices'])).to.equal('prices');
    expect(commandName(['--config=x.yaml', 'budgets'])).to.equal('budgets');
    expect(commandName(['--help'])).to.equal(undefined);
  });

  it('registers only the group asked for, and every group for help or an unknown name', async () => {
    expect(await names(['usage', '--all'])).to.deep.equal(['usage']);
    const every = [
      'usage',
      'keys',
      'prices',
      'alerts',
      'freezes',
      'budgets',
      'reconcile',
      'reconcile-fix',
      'demo',
      'healthcheck',
    ];
    expect(await names(['--help'])).to.deep.equal(every);
    expect(await names(['help', 'usage'])).to.deep.equal(every);
    expect(await names(['usgae'])).to.deep.equal(every);
  });
});
