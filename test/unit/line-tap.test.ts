import { expect } from 'chai';
import { gzipSync } from 'node:zlib';
import { LineTap } from '../../core/line-tap';
import { anthropicUsageParser } from '../../providers/wire/messages';
import { openaiUsageParser } from '../../providers/openai/usage';
import { fixtureBytes } from '../helpers/fixtures';

/** Batch results read line by line as their bytes pass, whatever the chunks (BUILT fixtures, test/fixtures/SOURCES.md). */
describe('LineTap: batch results read line by line', () => {
  const openai = openaiUsageParser.batches!;
  const anthropic = anthropicUsageParser.batches!;

  async function read(tap: LineTap, bytes: Buffer, size: number) {
    for (let i = 0; i < bytes.length; i += size) tap.push(bytes.subarray(i, i + size));
    await tap.end();
    return tap.results().map((l) => [l.customId, l.endpoint, l.model, l.usage?.inputTokens, l.usage?.outputTokens]);
  }

  const OPENAI_LINES = [
    ['ticket-1', 'chat.completions', 'gpt-4o-mini-2024-07-18', 1200, 300],
    ['ticket-3', 'chat.completions', 'gpt-4o-mini-2024-07-18', 2000, 500],
  ];

  for (const size of [1, 7, 4096])
    it(`OpenAI's output file in chunks of ${size} bytes: the answered lines, the 400 left out`, async () => {
      const bytes = fixtureBytes('openai/batch_output_built.jsonl');
      expect(await read(new LineTap(openai, undefined), bytes, size)).to.deep.equal(OPENAI_LINES);
    });

  it("Anthropic's results, gzip-compressed and without a final newline: succeeded lines only", async () => {
    const bytes = gzipSync(fixtureBytes('anthropic/message_batch_results_built.jsonl').subarray(0, -1));
    expect(await read(new LineTap(anthropic, 'gzip'), bytes, 100)).to.deep.equal([
      ['ticket-a', 'messages', 'claude-haiku-4-5-20251001', 800, 200],
      ['ticket-c', 'messages', 'claude-haiku-4-5-20251001', 1500, 100],
    ]);
  });

  it('a line past 8 MiB and a line that is not JSON are passed over; the lines around them are read', async () => {
    const lines = fixtureBytes('openai/batch_output_built.jsonl').toString('utf8').split('\n');
    // An answered line, but too long to read: were it read, "huge" would be among the results.
    const long = lines[0].replace('"custom_id":"ticket-1"', `"custom_id":"huge","pad":"${'x'.repeat(9 << 20)}"`);
    const bytes = Buffer.from([lines[0], long, 'not json', lines[2], ''].join('\n'));
    expect(await read(new LineTap(openai, undefined), bytes, 1 << 16)).to.deep.equal(OPENAI_LINES);
  });
});
