/**
 * Every text a usage record stores is bounded (plugins/usage-recorder/record.ts), whoever set it: the provider (the
 * served model, a stream's error code), another plugin (tags). Lengths are checked against numbers written here.
 */
import { expect } from 'chai';
import { modelField } from '../../intake/body';
import { GatewayError } from '../../core/errors';
import { createTestContext } from '../../testing';
import { TRUNCATION_MARKER, truncate } from '../../core/truncate';
import { buildRecord } from '../../plugins/usage-recorder/record';

describe('text bounds', () => {
  it('truncate: at most max characters, the marker at the end, never half a surrogate pair', () => {
    expect(truncate('short', 10)).to.equal('short');
    expect(truncate('x'.repeat(10), 10)).to.equal('x'.repeat(10));
    expect(truncate('x'.repeat(14), 13)).to.equal('x…[truncated]');
    const cut = truncate('a'.repeat(300), 100);
    expect(cut).to.have.length(100);
    expect(cut).to.equal(`${'a'.repeat(100 - 12)}…[truncated]`);
    expect(TRUNCATION_MARKER).to.equal('…[truncated]');
    // 87 characters, then an emoji (two UTF-16 units) straddling the cut at 88: it is dropped whole.
    const emoji = truncate(`${'b'.repeat(87)}😀${'c'.repeat(50)}`, 100);
    expect(emoji).to.equal(`${'b'.repeat(87)}…[truncated]`);
    expect(Buffer.from(emoji, 'utf8').toString('utf8')).to.equal(emoji); // no lone surrogate (would become U+FFFD)
    expect(truncate('abcdef', 4)).to.equal('…[tr');
  });

  it('a model name of at most 256 characters is taken; a longer one is refused with invalid_model, without echoing it', () => {
    expect(modelField(undefined)).to.equal(undefined);
    expect(modelField('m'.repeat(256))).to.equal('m'.repeat(256));
    let refused: unknown;
    try {
      modelField(`gpt-4o-${'q'.repeat(1393)}`);
    } catch (err) {
      refused = err;
    }
    expect(refused).to.be.instanceOf(GatewayError);
    const e = refused as GatewayError;
    expect([e.status, e.code, e.param]).to.deep.equal([400, 'invalid_model', 'model']);
    expect(e.message).to.equal('The "model" field is 1400 characters long; a model name has at most 256.');
    expect(() => modelField(42)).to.throw(GatewayError, 'must be a string');
  });

  it('a record keeps every text within its bound, the marker showing where it was cut', () => {
    const tags: Record<string, string> = {};
    for (let i = 0; i < 300; i++) tags[`k${String(i).padStart(3, '0')}`] = 'v';
    tags[`long_${'k'.repeat(400)}`] = 'x';
    tags.huge = 'y'.repeat(10_000);
    const ctx = createTestContext({
      model: 'gpt-4o-mini',
      provider: 'openrouter',
      tags,
      status: 200,
      usage: {
        inputTokens: 1,
        outputTokens: 1,
        servedModel: `anthropic/${'s'.repeat(5000)}`,
        searchContextSize: 'h'.repeat(500),
        streamError: 'e'.repeat(64),
      },
    });
    const r = buildRecord(ctx, undefined, 'v1');
    expect(r.model).to.equal('gpt-4o-mini');
    expect(r.servedModel).to.have.length(256);
    expect(r.servedModel!.startsWith('anthropic/sss')).to.equal(true);
    expect(r.servedModel!.endsWith('…[truncated]')).to.equal(true);
    expect(r.searchContextSize).to.have.length(64);
    // A provider's stream error code is 64 characters at most: "upstream_" + 64 fits the record's 80 whole.
    expect(r.errorCode).to.equal(`upstream_${'e'.repeat(64)}`);
    const keys = Object.keys(r.tags);
    expect(keys).to.have.length(256); // the first 256 keys, in the order they were set
    expect(keys[0]).to.equal('k000');
    expect(keys.at(-1)).to.equal('k255');
    for (const [k, v] of Object.entries(r.tags))
      expect(k.length <= 256 && v.length <= 4096, k.slice(0, 20)).to.equal(true);
  });

  it('tags within the bounds are kept as they are, __proto__ included', () => {
    const tags: Record<string, string> = Object.create(null);
    tags.customer_id = 'acme';
    tags.__proto__ = 'odd but allowed';
    tags.note = 'z'.repeat(4096);
    const r = buildRecord(createTestContext({ model: 'gpt-4o-mini', tags, status: 200 }), undefined, 'v1');
    expect(Object.keys(r.tags)).to.deep.equal(['customer_id', '__proto__', 'note']);
    expect(JSON.stringify(r.tags)).to.equal(
      JSON.stringify({ customer_id: 'acme', ['__proto__']: 'odd but allowed', note: 'z'.repeat(4096) }),
    );
    expect(Object.getPrototypeOf(r.tags)).to.equal(Object.prototype);
  });
});
