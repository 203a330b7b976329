import { expect } from 'chai';
import { GatewayContext } from '../../core/context';
import { endpointByKey } from '../../core/endpoints';
import { GatewayError } from '../../core/errors';
import { captureLogs } from '../../testing';
import { AttributionPlugin } from '../../plugins/attribution';

/** A request context with headers as Node gives them: the joined object and the raw name/value list. */
function request(raw: [string, string][]): GatewayContext {
  const headers: Record<string, string> = {};
  for (const [name, value] of raw) headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  const endpoint = endpointByKey('chat.completions');
  return new GatewayContext(
    'id',
    'POST',
    endpoint.path,
    endpoint,
    headers,
    captureLogs().logger,
    undefined,
    raw.flat(),
  );
}

function tagsOf(plugin: AttributionPlugin, raw: [string, string][]): Record<string, string> | string {
  const ctx = request(raw);
  try {
    plugin.onRequest(ctx);
  } catch (err) {
    return (err as GatewayError).code;
  }
  return { ...ctx.tags };
}

describe('attribution: tag sets already read are reused, never wrongly', () => {
  const plugin = new AttributionPlugin({ maxKeys: 32, maxKeyLength: 64, maxValueLength: 256 });
  const json: [string, string] = ['x-gateway-metadata', '{"agent":"bot","feature":"search"}'];

  it('the same headers give the same tags, each request its own copy', () => {
    const first = request([json, ['x-gateway-metadata-customer-id', 'acme']]);
    const second = request([json, ['x-gateway-metadata-customer-id', 'acme']]);
    plugin.onRequest(first);
    plugin.onRequest(second);
    expect({ ...second.tags }).to.deep.equal({ agent: 'bot', feature: 'search', customer_id: 'acme' });
    second.tags.extra = 'x';
    expect(tagsOf(plugin, [json, ['x-gateway-metadata-customer-id', 'acme']])).to.deep.equal({
      agent: 'bot',
      feature: 'search',
      customer_id: 'acme',
    });
  });

  it('any difference in a tag header is read anew', () => {
    expect(tagsOf(plugin, [json, ['x-gateway-metadata-customer-id', 'globex']])).to.deep.equal({
      agent: 'bot',
      feature: 'search',
      customer_id: 'globex',
    });
    expect(tagsOf(plugin, [json])).to.deep.equal({ agent: 'bot', feature: 'search' });
    expect(tagsOf(plugin, [['x-gateway-metadata-customer-id', 'acme']])).to.deep.equal({ customer_id: 'acme' });
  });

  it('a header sent twice is refused even when its joined value was accepted before', () => {
    // Node joins a repeated header with ", ": sent twice as "acme", it reads like one header "acme, acme".
    expect(tagsOf(plugin, [['x-gateway-metadata-customer-id', 'acme, acme']])).to.deep.equal({
      customer_id: 'acme, acme',
    });
    expect(
      tagsOf(plugin, [
        ['x-gateway-metadata-customer-id', 'acme'],
        ['x-gateway-metadata-customer-id', 'acme'],
      ]),
    ).to.equal('invalid_metadata');
    expect(tagsOf(plugin, [json, json])).to.equal('invalid_metadata');
    expect(
      tagsOf(plugin, [json, ['x-gateway-metadata-customer-id', 'acme'], ['x-gateway-metadata-customer-id', 'acme']]),
    ).to.equal('invalid_metadata');
  });

  it('an empty metadata header is not taken for an absent one', () => {
    expect(tagsOf(plugin, [])).to.deep.equal({});
    expect(tagsOf(plugin, [['x-gateway-metadata', '']])).to.equal('invalid_metadata');
  });

  it('a refused set stays refused', () => {
    const bad: [string, string] = ['x-gateway-metadata', '{"model":"x"}'];
    expect(tagsOf(plugin, [bad])).to.equal('invalid_metadata');
    expect(tagsOf(plugin, [bad])).to.equal('invalid_metadata');
  });
});
