import { expect } from 'chai';
import { GatewayError } from '../../core/errors';
import { parseTags, type TagHeaders } from '../../plugins/attribution/parse-tags';

const LIMITS = { maxKeys: 32, maxKeyLength: 64, maxValueLength: 256 };

/** Headers as Node gives them: lower-case names, values as latin1 strings of the bytes sent (here UTF-8). */
function headers(sent: [string, string][], timesSent?: TagHeaders['timesSent']): TagHeaders {
  const map = new Map<string, string>();
  for (const [name, value] of sent) {
    const key = name.toLowerCase();
    const bytes = Buffer.from(value, 'utf8').toString('latin1');
    map.set(key, map.has(key) ? `${map.get(key)}, ${bytes}` : bytes); // Node joins a repeated header with ", "
  }
  return { header: (n) => map.get(n), names: [...map.keys()], timesSent };
}

function refusal(h: TagHeaders): string {
  try {
    parseTags(h, LIMITS);
  } catch (err) {
    expect(err).to.be.instanceOf(GatewayError);
    expect((err as GatewayError).code).to.equal('invalid_metadata');
    return (err as GatewayError).message;
  }
  throw new Error('expected a refusal');
}

describe('attribution: parseTags', () => {
  it('decodes UTF-8 values in both forms, and keeps ASCII as is', () => {
    const tags = parseTags(
      headers([
        ['X-Gateway-Metadata', '{"customer_id":"Zürich","agent":"bot"}'],
        ['X-Gateway-Metadata-Feature', 'Café'],
      ]),
      LIMITS,
    );
    expect({ ...tags }).to.deep.equal({ customer_id: 'Zürich', agent: 'bot', feature: 'Café' });
  });

  it('says why a key is refused: repeated (exactly or after normalisation, in either form), reserved', () => {
    expect(refusal(headers([['X-Gateway-Metadata', '{"Agent":"x","agent":"y"}']]))).to.match(/"agent" is given twice/);
    expect(refusal(headers([['X-Gateway-Metadata', '{"agent":"x","agent":"y"}']]))).to.match(/"agent" is given twice/);
    expect(refusal(headers([['X-Gateway-Metadata', '{"customer-id":"x","Customer_Id":"y"}']]))).to.match(
      /"customer_id" is given twice/,
    );
    expect(
      refusal(
        headers([
          ['X-Gateway-Metadata-Customer-Id', 'a'],
          ['X-Gateway-Metadata-Customer_id', 'b'],
        ]),
      ),
    ).to.match(/two X-Gateway-Metadata-<Name> headers/);
    for (const key of [
      'model',
      'requested_model',
      'served_model',
      'provider',
      'status',
      'endpoint',
      'workspace',
      'key_id',
    ]) {
      expect(refusal(headers([['X-Gateway-Metadata', JSON.stringify({ [key]: 'x' })]])), key).to.match(
        new RegExp(`"${key}" .*is reserved`),
      );
    }
    // The documented clash rule across the two forms still holds: the flat header wins.
    expect({
      ...parseTags(
        headers([
          ['X-Gateway-Metadata', '{"agent":"json"}'],
          ['X-Gateway-Metadata-Agent', 'flat'],
        ]),
        LIMITS,
      ),
    }).to.deep.equal({ agent: 'flat' });
  });

  it('refuses a tag header sent twice when the core can tell (timesSent: Node joins repeats as "a, b")', () => {
    const twice = (name: string) =>
      headers(
        [
          [name, 'a'],
          [name, 'b'],
        ],
        (n) => (n === name.toLowerCase() ? 2 : 1),
      );
    expect(refusal(twice('X-Gateway-Metadata-Agent'))).to.match(/x-gateway-metadata-agent was sent more than once/);
    expect(refusal(twice('X-Gateway-Metadata'))).to.match(/x-gateway-metadata was sent more than once/);
    expect({
      ...parseTags(
        headers([['X-Gateway-Metadata-Agent', 'a']], () => 1),
        LIMITS,
      ),
    }).to.deep.equal({ agent: 'a' });
  });
});
