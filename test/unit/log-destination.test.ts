import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';

/**
 * The gateway's log destination, driven through the gateway's own logger (createLogger) in a child process
 * writing to a real file or pipe, as `npm start` writes to stdout. A line is `{"level":30,...,"n":<i>,...}`.
 */
const LOGGER = require.resolve('../../runtime/logger');

/** Writes `count` info lines (some long, some non-ASCII), then does `then` (exit | end | wait). */
const WRITER = `
const { openSync } = require('node:fs');
const { createLogger } = require(process.argv[1]);
const { LogDestination } = require(process.argv[2]);
const [count, then, out] = [Number(process.argv[3]), process.argv[4], process.argv[5]];
const fd = out === '-' ? 1 : openSync(out, 'w');
const log = createLogger('info', new LogDestination(fd));
for (let i = 0; i < count; i++) log.info({ n: i, text: i % 97 === 0 ? 'Zürich 東京 '.repeat(200) : 'x' }, 'line');
if (then === 'exit') process.exit(0); // what the CLI does after a shutdown
if (then === 'wait') setTimeout(() => {}, 1000); // the process stays up; only the 200 ms hand-over writes
// 'end': nothing more to do, the process ends when its event loop is empty
`;

const DESTINATION = require.resolve('../../runtime/log-destination');

function numbersIn(text: string): number[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { n: number }).n);
}

describe('log destination (lines gathered into blocks before SonicBoom)', function () {
  this.timeout(20_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-log-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const run = (count: number, then: string, out: string) =>
    execFileSync(process.execPath, ['-e', WRITER, LOGGER, DESTINATION, String(count), then, out], {
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    });

  it('writes every line whole and in order, also the lines still gathered when the process exits', () => {
    const file = join(dir, 'exit.log');
    run(20_000, 'exit', file);
    expect(numbersIn(readFileSync(file, 'utf8'))).to.deep.equal(Array.from({ length: 20_000 }, (_, i) => i));
    expect(readFileSync(file, 'utf8')).to.include('Zürich 東京');
  });

  it('writes every line when the process ends by itself, its event loop empty', () => {
    const file = join(dir, 'end.log');
    run(5_000, 'end', file);
    expect(numbersIn(readFileSync(file, 'utf8'))).to.deep.equal(Array.from({ length: 5_000 }, (_, i) => i));
  });

  it('writes a lone line within about 200 ms, without waiting for a block to fill', async () => {
    const file = join(dir, 'quiet.log');
    const child = spawn(process.execPath, ['-e', WRITER, LOGGER, DESTINATION, '1', 'wait', file], { stdio: 'ignore' });
    try {
      const t0 = Date.now();
      let seen = '';
      while (Date.now() - t0 < 900 && seen === '') {
        await new Promise((resolve) => setTimeout(resolve, 20));
        seen = existsSync(file) ? readFileSync(file, 'utf8') : ''; // the child may not have opened it yet
      }
      expect(numbersIn(seen), 'the line is out while the process still runs').to.deep.equal([0]);
      expect(Date.now() - t0).to.be.below(700);
    } finally {
      child.kill();
    }
  });

  it('keeps the order of 200,000 lines through a pipe that the reader drains slowly', () => {
    const out = execFileSync(
      'sh',
      [
        '-c',
        `"${process.execPath}" -e "$0" "$@" | (sleep 0.3; cat)`,
        WRITER,
        LOGGER,
        DESTINATION,
        '200000',
        'exit',
        '-',
      ],
      {
        encoding: 'utf8',
        maxBuffer: 512 * 1024 * 1024,
      },
    );
    expect(numbersIn(out)).to.deep.equal(Array.from({ length: 200_000 }, (_, i) => i));
  });
});
