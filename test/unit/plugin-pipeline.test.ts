import { expect } from 'chai';
import { GatewayError } from '../../core/errors';
import type { GatewayPlugin } from '../../core/plugin-contract';
import { PluginPipeline } from '../../core/plugin-pipeline';
import { createTestContext } from '../../testing';

/** A plugin that notes each of its hooks in `seen`, and refuses in `refuseIn` when given. */
function recorder(
  name: string,
  seen: string[],
  hooks: ('onRequest' | 'beforeUpstream')[],
  refuseIn?: 'onRequest' | 'beforeUpstream',
): GatewayPlugin {
  const plugin: GatewayPlugin = { name, onComplete: () => void seen.push(`${name}.onComplete`) };
  for (const hook of hooks) {
    plugin[hook] = () => {
      seen.push(`${name}.${hook}`);
      if (hook === refuseIn) throw new GatewayError('policy_denied', `${name} refuses`);
    };
  }
  return plugin;
}

async function exchange(pipeline: PluginPipeline): Promise<void> {
  const ctx = createTestContext({ json: { model: 'gpt-4o-mini' } });
  try {
    await pipeline.run('onRequest', ctx);
    await pipeline.run('beforeUpstream', ctx);
  } catch {
    // refused: onComplete still runs for the plugins the request reached
  }
  await pipeline.complete(ctx);
}

describe('plugin hooks are symmetric: onComplete in reverse, only where admission reached', () => {
  it('runs onComplete in reverse order after a request that went through', async () => {
    const seen: string[] = [];
    await exchange(
      new PluginPipeline([
        recorder('a', seen, ['onRequest']),
        recorder('b', seen, ['beforeUpstream']),
        recorder('c', seen, []),
      ]),
    );
    expect(seen).to.deep.equal(['a.onRequest', 'b.beforeUpstream', 'c.onComplete', 'b.onComplete', 'a.onComplete']);
  });

  it('skips the plugins a refusal in beforeUpstream kept the request from, and completes the one that refused', async () => {
    const seen: string[] = [];
    const plugins = [
      recorder('a', seen, ['beforeUpstream']),
      recorder('b', seen, ['beforeUpstream'], 'beforeUpstream'),
      recorder('c', seen, ['beforeUpstream']),
      recorder('d', seen, ['onRequest']),
      recorder('obs', seen, []),
    ];
    await exchange(new PluginPipeline(plugins));
    expect(seen).to.deep.equal([
      'd.onRequest',
      'a.beforeUpstream',
      'b.beforeUpstream',
      'obs.onComplete',
      'd.onComplete',
      'b.onComplete',
      'a.onComplete',
    ]);
  });

  it('after a refusal in onRequest, completes only the onRequest plugins up to the refusing one and the observers', async () => {
    const seen: string[] = [];
    const plugins = [
      recorder('a', seen, ['onRequest', 'beforeUpstream']),
      recorder('b', seen, ['onRequest'], 'onRequest'),
      recorder('c', seen, ['onRequest']),
      recorder('d', seen, ['beforeUpstream']),
      recorder('obs', seen, []),
    ];
    await exchange(new PluginPipeline(plugins));
    expect(seen).to.deep.equal(['a.onRequest', 'b.onRequest', 'obs.onComplete', 'b.onComplete', 'a.onComplete']);
  });

  it('runs onResponse and onStreamEvent in reverse order too, mirroring admission', async () => {
    const seen: string[] = [];
    const observing = (name: string): GatewayPlugin => ({
      name,
      onRequest: () => void seen.push(`${name}.onRequest`),
      onResponse: () => void seen.push(`${name}.onResponse`),
      onStreamEvent: () => void seen.push(`${name}.onStreamEvent`),
    });
    const pipeline = new PluginPipeline([observing('a'), observing('b'), observing('c')]);
    const ctx = createTestContext({ json: { model: 'gpt-4o-mini' } });
    await pipeline.run('onRequest', ctx);
    await pipeline.run('onResponse', ctx);
    pipeline.streamEvent(ctx, { data: '{}' });
    expect(seen).to.deep.equal([
      'a.onRequest',
      'b.onRequest',
      'c.onRequest',
      'c.onResponse',
      'b.onResponse',
      'a.onResponse',
      'c.onStreamEvent',
      'b.onStreamEvent',
      'a.onStreamEvent',
    ]);
  });

  it('keeps how far admission got to itself: the context carries no admission state', async () => {
    const ctx = createTestContext({ json: { model: 'gpt-4o-mini' } });
    await new PluginPipeline([recorder('a', [], ['onRequest'])]).run('onRequest', ctx);
    expect(Object.keys(ctx)).to.not.include('admission');
  });
});
