import { expect } from 'chai';
import { withJsonField } from '../../plugin-kit/body-field';

describe('withJsonField', () => {
  const add = (text: string, field = 'max_tokens', value = 7) =>
    withJsonField(Buffer.from(text), JSON.parse(text), field, value).toString();

  it('appends the field before the closing brace, every other byte kept (spacing, escapes, number formats, key order)', () => {
    expect(add('{"model":"m","t":1.0,"s":"\\u00e9"}')).to.equal('{"model":"m","t":1.0,"s":"\\u00e9","max_tokens":7}');
    expect(add('{ "b": 1e3,\n  "a": [] }\n\n')).to.equal('{ "b": 1e3,\n  "a": [] ,"max_tokens":7}\n\n');
  });

  it('an empty object gets the field without a comma', () => {
    expect(add('{}')).to.equal('{"max_tokens":7}');
    expect(add(' { } ')).to.equal(' { "max_tokens":7} ');
  });

  it('a field present as null is set in place, never sent twice', () => {
    const out = add('{"max_tokens":null,"model":"m"}');
    expect(out).to.equal('{"max_tokens":7,"model":"m"}');
  });

  it('the result parses to the object with the field added', () => {
    const text = '{"messages":[{"role":"user","content":"}"}],"n":2}';
    expect(JSON.parse(add(text, 'max_completion_tokens', 100))).to.deep.equal({
      ...JSON.parse(text),
      max_completion_tokens: 100,
    });
  });
});
