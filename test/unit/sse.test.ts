import { expect } from 'chai';
import { SseDecoder } from '../../core/sse';
import type { SseEvent } from '../../core/usage';
import { fixtureBytes } from '../helpers/fixtures';

/** Every recorded SSE body, with its event count and event names verified by hand (grep -c '^data:' / '^event:'). */
const SSE_FIXTURES: { file: string; events: number; named: boolean }[] = [
  { file: 'openai/chat_stream_with_usage.sse', events: 16, named: false },
  { file: 'openai/chat_stream_with_usage_openai-python.sse', events: 34, named: false },
  { file: 'openai/chat_stream_without_usage.sse', events: 8, named: false },
  { file: 'openai/responses_stream.sse', events: 9, named: true },
  { file: 'anthropic/messages_stream.sse', events: 10, named: true },
  { file: 'openrouter/chat_stream_with_usage.sse', events: 4, named: false }, // 3 ": OPENROUTER PROCESSING" comments
  { file: 'openrouter/responses_stream.sse', events: 12, named: false }, // leading ": " comment
];

function decodeChunks(chunks: (Buffer | string)[]): SseEvent[] {
  const d = new SseDecoder();
  const out: SseEvent[] = [];
  for (const c of chunks) out.push(...d.push(c));
  out.push(...d.end());
  return out;
}

function bytewise(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < buf.length; i++) out.push(buf.subarray(i, i + 1));
  return out;
}

/** Deterministic PRNG (mulberry32) so a failing split is reproducible from its seed. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomSplit(buf: Buffer, seed: number, maxSize: number): Buffer[] {
  const next = rng(seed);
  const out: Buffer[] = [];
  for (let i = 0; i < buf.length;) {
    const size = 1 + Math.floor(next() * maxSize);
    out.push(buf.subarray(i, i + size));
    i += size;
  }
  return out;
}

const withLineEnding = (buf: Buffer, eol: string): Buffer =>
  Buffer.from(buf.toString('utf8').split('\n').join(eol), 'utf8');

describe('SseDecoder', () => {
  describe('recorded fixtures', () => {
    for (const { file, events, named } of SSE_FIXTURES) {
      describe(file, () => {
        const bytes = fixtureBytes(file);
        const whole = decodeChunks([bytes]);

        it(`decodes ${events} events in one piece`, () => {
          expect(whole).to.have.length(events);
          for (const e of whole) {
            expect(e.data.length).to.be.greaterThan(0);
            expect(e.data.startsWith(' '), 'the single space after "data:" is removed').to.equal(false);
            expect(e.event !== undefined).to.equal(named);
            expect(e.id).to.equal(undefined);
          }
        });

        it('gives identical events fed byte by byte', () => {
          expect(decodeChunks(bytewise(bytes))).to.deep.equal(whole);
        });

        it('gives identical events for random chunk sizes', () => {
          for (let seed = 1; seed <= 25; seed++) {
            expect(decodeChunks(randomSplit(bytes, seed, 1 + (seed % 5) * 97)), `seed ${seed}`).to.deep.equal(whole);
          }
        });

        it('gives identical events with CRLF and CR line endings, in one piece and split', () => {
          for (const eol of ['\r\n', '\r']) {
            const variant = withLineEnding(bytes, eol);
            expect(decodeChunks([variant])).to.deep.equal(whole);
            expect(decodeChunks(bytewise(variant))).to.deep.equal(whole);
            expect(decodeChunks(randomSplit(variant, 7, 64))).to.deep.equal(whole);
          }
        });

        it('gives identical events from string chunks', () => {
          expect(decodeChunks([bytes.toString('utf8')])).to.deep.equal(whole);
        });
      });
    }

    it('keeps Anthropic event names in order and its padded data verbatim', () => {
      const events = decodeChunks([fixtureBytes('anthropic/messages_stream.sse')]);
      expect(events.map((e) => e.event)).to.deep.equal([
        'message_start',
        'content_block_start',
        'ping',
        'content_block_delta',
        'content_block_delta',
        'content_block_delta',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ]);
      expect(events[2]!.data).to.equal('{"type": "ping"}');
      // Trailing space padding is part of the data (the recorded line is `data: {"type":"message_stop" }`).
      expect(events[9]!.data).to.equal('{"type":"message_stop" }');
    });

    it('drops OpenRouter comment lines and keeps [DONE] as a data event', () => {
      const events = decodeChunks([fixtureBytes('openrouter/chat_stream_with_usage.sse')]);
      expect(events.some((e) => e.data.includes('OPENROUTER'))).to.equal(false);
      expect(events[3]!.data).to.equal('[DONE]');
    });
  });

  describe('framing rules', () => {
    const decode = (...chunks: string[]) => decodeChunks(chunks);

    it('joins multi-line data with "\\n"', () => {
      expect(decode('data: a\ndata: b\ndata:\ndata: c\n\n')).to.deep.equal([{ data: 'a\nb\n\nc' }]);
    });

    it('removes only one optional space after the colon', () => {
      expect(decode('data:x\n\ndata:  y\n\nevent:e\ndata:z\n\n')).to.deep.equal([
        { data: 'x' },
        { data: ' y' },
        { event: 'e', data: 'z' },
      ]);
    });

    it('treats a field name without a colon as an empty value', () => {
      expect(decode('data\n\n')).to.deep.equal([{ data: '' }]);
    });

    it('ignores comments, retry and unknown fields, and does not dispatch events without data', () => {
      expect(decode(': hi\nretry: 100\nfoo: bar\n\nevent: lonely\n\n\n\ndata: 1\n\n')).to.deep.equal([{ data: '1' }]);
    });

    it('resets the event type after each dispatch', () => {
      expect(decode('event: a\ndata: 1\n\ndata: 2\n\n')).to.deep.equal([{ event: 'a', data: '1' }, { data: '2' }]);
    });

    it('keeps the last event id across events and ignores ids containing NUL', () => {
      expect(decode('id: 7\ndata: a\n\ndata: b\n\nid: x\0y\ndata: c\n\nid\ndata: d\n\n')).to.deep.equal([
        { data: 'a', id: '7' },
        { data: 'b', id: '7' },
        { data: 'c', id: '7' },
        { data: 'd' },
      ]);
    });

    it('handles LF, CRLF and CR mixed in one stream', () => {
      const events = decode('data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r');
      expect(events).to.deep.equal([{ data: 'a\nb\nc' }, { data: 'd' }]);
    });

    it('treats a CR ending one chunk and an LF starting the next as one line break', () => {
      expect(decode('data: a\r', '\ndata: b\r', '\n\r', '\n')).to.deep.equal([{ data: 'a\nb' }]);
    });

    it('keeps a multi-byte UTF-8 character split across chunks', () => {
      const bytes = Buffer.from('data: héllo 😀 中文\n\n', 'utf8');
      expect(decodeChunks(bytewise(bytes))).to.deep.equal([{ data: 'héllo 😀 中文' }]);
      // Split inside the 4-byte emoji only.
      const cut = bytes.indexOf(Buffer.from('😀', 'utf8')) + 2;
      expect(decodeChunks([bytes.subarray(0, cut), bytes.subarray(cut)])).to.deep.equal([{ data: 'héllo 😀 中文' }]);
    });

    it('drops a leading byte-order mark', () => {
      const bom = Buffer.from([0xef, 0xbb, 0xbf]);
      const rest = Buffer.concat([bom.subarray(2), Buffer.from('data: x\n\n')]);
      expect(decodeChunks([bom.subarray(0, 2), rest])).to.deep.equal([{ data: 'x' }]);
    });

    it('returns events as soon as their blank line arrives', () => {
      const d = new SseDecoder();
      expect(d.push('data: 1\n')).to.deep.equal([]);
      expect(d.push('\ndata: 2')).to.deep.equal([{ data: '1' }]);
      expect(d.push('\n\n')).to.deep.equal([{ data: '2' }]);
      expect(d.end()).to.deep.equal([]);
    });

    it('at end of stream dispatches an event missing its blank line, even with an unterminated last line', () => {
      expect(decode('data: 1\n\ndata: {"usage":{}}\n')).to.deep.equal([{ data: '1' }, { data: '{"usage":{}}' }]);
      expect(decode('event: x\ndata: tail')).to.deep.equal([{ event: 'x', data: 'tail' }]);
      expect(decode('event: only\n')).to.deep.equal([]);
    });

    it('does not rescan a long line delivered in many chunks', () => {
      const d = new SseDecoder();
      const piece = 'x'.repeat(1000);
      const started = Date.now();
      d.push('data: ');
      for (let i = 0; i < 5000; i++) d.push(piece); // a 5 MB line
      const [event] = d.push('\n\n');
      expect(event!.data.length).to.equal(5_000_000);
      expect(Date.now() - started).to.be.lessThan(2000);
    });
  });
});
