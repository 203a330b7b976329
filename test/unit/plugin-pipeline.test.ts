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

  it('completes every request for a plugin written for plugin API 1, as that version did, in the same reverse order', async () => {
    const seen: string[] = [];
    const v1 = recorder('v1', seen, ['onRequest', 'beforeUpstream']);
    const plugins = [
      recorder('a', seen, ['onRequest'], 'onRequest'),
      v1,
      recorder('v2', seen, ['onRequest']),
      recorder('obs', seen, []),
    ];
    await exchange(new PluginPipeline(plugins, new Set([v1])));
    expect(seen).to.deep.equal(['a.onRequest', 'obs.onComplete', 'v1.onComplete', 'a.onComplete']);
  });
});
