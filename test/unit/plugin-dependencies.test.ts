import { expect } from 'chai';
import { parseConfig } from '../../config/load';
import type { PluginDefinition } from '../../contracts/plugin-definition';
import { container as rootContainer } from 'tsyringe';
import { definePlugin } from '../../contracts/plugin-definition';
import { registerService, TOKENS } from '../../contracts/tokens';
import { checkPipeline, checkServices } from '../../runtime/loading/plugin-dependencies';
import { instantiatePlugin } from '../../runtime/loading/plugin-instance';
import { BUILTIN_PLUGINS } from '../../plugins';

const plugin = (name: string, meta: Partial<PluginDefinition<unknown>> = {}): PluginDefinition<unknown> => ({
  name,
  create: () => ({ name }),
  ...meta,
});
const pipeline = (...defs: PluginDefinition<unknown>[]) =>
  defs.map((definition, i) => ({ where: `plugins[${i}]`, definition }));
const config = (yaml = '') => parseConfig(yaml, {}, 'test config');
const problemsOf = (run: () => void): string => {
  try {
    run();
  } catch (err) {
    return (err as Error).message;
  }
  return '';
};

describe('plugin dependencies are checked when the pipeline loads', () => {
  it('accepts the default pipeline and its limits', () => {
    const c = config(
      'workspaces: [{ id: w, limits: { requests_per_minute: 5, concurrent_streams: 2, max_tokens: 100, required_tags: [team] } }]',
    );
    const defs = c.plugins.map((p) => BUILTIN_PLUGINS[p.use]);
    expect(problemsOf(() => checkPipeline(pipeline(...defs), c, Object.values(BUILTIN_PLUGINS)))).to.equal('');
  });

  it('names a plugin that needs another one missing from the pipeline', () => {
    const message = problemsOf(() =>
      checkPipeline(pipeline(plugin('a', { requires: { plugins: ['b'] } })), config(), []),
    );
    expect(message).to.include('plugins[0] (a) needs the "b" plugin in plugins:');
  });

  it('names a plugin listed on the wrong side of another', () => {
    const defs = pipeline(
      plugin('late', { order: { after: ['early'] } }),
      plugin('early'),
      plugin('first', { order: { before: ['early'] } }),
    );
    const message = problemsOf(() => checkPipeline(defs, config(), []));
    expect(message).to.include('plugins[0] (late) must come after "early" in plugins:');
    expect(message).to.include('plugins[2] (first) must come before "early" in plugins:');
  });

  it('refuses a list that breaks an order a built-in declares, naming both plugins', () => {
    const c = config();
    const listed = (...names: string[]) => pipeline(...names.map((n) => BUILTIN_PLUGINS[n]));
    const check = (...names: string[]) =>
      problemsOf(() => checkPipeline(listed(...names), c, Object.values(BUILTIN_PLUGINS)));
    expect(check('auth', 'header-strip', 'attribution', 'budget', 'max-tokens')).to.include(
      'plugins[4] (max-tokens) must come before "budget" in plugins:',
    );
    expect(check('auth', 'header-strip', 'attribution', 'rate-limit', 'concurrency')).to.include(
      'plugins[4] (concurrency) must come before "rate-limit" in plugins:',
    );
    expect(check('auth', 'header-strip', 'attribution', 'budget', 'rate-limit')).to.include(
      'plugins[4] (rate-limit) must come before "budget" in plugins:',
    );
    expect(check('auth', 'header-strip', 'attribution', 'usage-recorder', 'budget')).to.include(
      'plugins[4] (budget) must come before "usage-recorder" in plugins:',
    );
    expect(check('auth', 'header-strip', 'required-tags', 'attribution')).to.include(
      'plugins[2] (required-tags) must come after "attribution" in plugins:',
    );
    // Without attribution listed, nothing is ordered against it.
    expect(check('auth', 'header-strip', 'max-tokens', 'budget', 'usage-recorder')).to.equal('');
  });

  it('names the plugin a workspace limit needs, also for a per-tag limit', () => {
    const c = config('workspaces: [{ id: w, limits: { per_tag: { customer: { concurrent_streams: 1 } } } }]');
    const message = problemsOf(() => checkPipeline(pipeline(BUILTIN_PLUGINS.auth), c, Object.values(BUILTIN_PLUGINS)));
    expect(message).to.include('workspaces.w.limits needs the "concurrency" plugin in plugins:');
    expect(message).not.to.include('rate-limit');
  });

  it('hands create() the services a plugin injects, under the names it chose', async () => {
    const scope = rootContainer.createChildContainer();
    const clock = { now: () => 42 };
    registerService(scope, TOKENS.Clock, clock);
    registerService(scope, TOKENS.ConfigDir, '/etc/tollgate');
    let got: unknown;
    const def = definePlugin({
      name: 'injected',
      inject: { time: 'Clock', dir: 'ConfigDir' },
      create: (_c, _o, services) => {
        got = services;
        return { name: 'injected' };
      },
    });
    await instantiatePlugin(def as PluginDefinition<unknown>, {}, scope, 'plugins[0]');
    expect(got).to.deep.equal({ time: clock, dir: '/etc/tollgate' });
  });

  it('refuses to start a plugin that injects a service that is not registered, naming both', () => {
    const scope = rootContainer.createChildContainer();
    const def = plugin('needy', { inject: { store: 'UsageStore' } });
    expect(() => checkServices(pipeline(def), scope)).to.throw(
      'plugins[0] (needy) needs the UsageStore service, which is not registered',
    );
  });
});
