/**
 * Local append-only JSONL spill for usage records the store could not take.
 *
 * New spills append to `path`. To replay, the active file is first renamed to
 * `<path>.replay-<ms>` so appends during the replay go to a fresh file; a replay file is deleted
 * only after all its records were written. A crash or failure mid-replay leaves the file for
 * the next attempt (re-writing records is harmless: inserts are idempotent by id).
 * One spill path per process: two processes must not share it.
 */
import {
  appendFileSync,
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  renameSync,
  statSync,
  type WriteStream,
} from 'node:fs';
import { unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import type { UsageRecord } from '../core/usage';
import { recordFromJson, recordToJson } from './record-json';
import type { StorageLogger } from './store';

/** Lines of a spill file, read back. */
export interface SpillBatch {
  records: UsageRecord[];
  /** Lines that are not usage records, and why. */
  unreadable: { line: string; err: unknown }[];
}

export class SpillFile {
  private stream: WriteStream | null = null;
  /** Records appended to the active file since it was last moved aside (or found non-empty at start). */
  private activeDirty: boolean;
  private readonly replayFiles = new Set<string>();
  private seq = 0;
  private rotating = false;
  private readonly held: string[] = [];

  constructor(
    readonly path: string,
    private readonly log?: StorageLogger,
  ) {
    mkdirSync(dirname(path), { recursive: true });
    this.activeDirty = existsSync(path) && statSync(path).size > 0;
    const prefix = `${basename(path)}.replay-`;
    for (const name of readdirSync(dirname(path)))
      if (name.startsWith(prefix)) this.replayFiles.add(join(dirname(path), name));
  }

  /** True while spilled records wait to be replayed. */
  pending(): boolean {
    return this.activeDirty || this.replayFiles.size > 0;
  }

  /** Bytes waiting for replay: the active file (buffered appends included) and the files moved aside. */
  bytes(): number {
    let n = (this.stream?.writableLength ?? 0) + this.held.reduce((sum, text) => sum + Buffer.byteLength(text), 0);
    for (const file of [this.path, ...this.replayFiles]) {
      try {
        n += statSync(file).size;
      } catch {
        // not created yet, or replayed and removed meanwhile
      }
    }
    return n;
  }

  /** Buffered, non-blocking append (the hot path during an outage). */
  append(records: readonly UsageRecord[]): void {
    if (records.length === 0) return;
    const text = records.map((r) => `${recordToJson(r)}\n`).join('');
    if (this.rotating) this.held.push(text);
    else this.write(text);
  }

  private write(text: string): void {
    if (!this.stream) {
      this.stream = createWriteStream(this.path, { flags: 'a' });
      this.stream.on('error', (err) =>
        this.log?.error({ err, path: this.path }, 'usage spill file write failed: records may be lost'),
      );
    }
    this.stream.write(text);
    this.activeDirty = true;
  }

  /** Synchronous append, for records arriving after close(). */
  appendSync(records: readonly UsageRecord[]): void {
    if (records.length === 0) return;
    appendFileSync(this.path, records.map((r) => `${recordToJson(r)}\n`).join(''));
    this.activeDirty = true;
  }

  /** Moves the active file aside and returns every file awaiting replay, oldest first. */
  async takeForReplay(): Promise<string[]> {
    if (this.activeDirty) {
      // Appends arriving while the stream drains are held back and go to the fresh active file.
      this.rotating = true;
      const old = this.stream;
      this.stream = null;
      try {
        if (old) await endStream(old);
        if (existsSync(this.path)) {
          const target = `${this.path}.replay-${String(Date.now()).padStart(15, '0')}-${String(this.seq++).padStart(6, '0')}`;
          renameSync(this.path, target);
          this.replayFiles.add(target);
        }
        this.activeDirty = false;
      } finally {
        this.rotating = false;
        const held = this.held.splice(0).join('');
        if (held) this.write(held);
      }
    }
    return [...this.replayFiles].sort();
  }

  /**
   * Records of a replay file in batches of at most `batchSize` lines. A line that is not a record (a torn last line
   * after a crash, a corrupted or hand-edited line) comes in `unreadable`, with the reason, for the quarantine.
   */
  async *read(file: string, batchSize: number): AsyncGenerator<SpillBatch> {
    const input = createReadStream(file, { encoding: 'utf8' });
    const lines = createInterface({ input, crlfDelay: Infinity });
    let batch: SpillBatch = { records: [], unreadable: [] };
    try {
      for await (const line of lines) {
        if (!line.trim()) continue;
        try {
          batch.records.push(recordFromJson(line));
        } catch (err) {
          batch.unreadable.push({ line, err });
        }
        if (batch.records.length + batch.unreadable.length >= batchSize) {
          yield batch;
          batch = { records: [], unreadable: [] };
        }
      }
      if (batch.records.length + batch.unreadable.length) yield batch;
    } finally {
      lines.close();
      input.destroy();
    }
  }

  /** Deletes a fully replayed file. */
  async remove(file: string): Promise<void> {
    await unlink(file).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
    this.replayFiles.delete(file);
  }

  /** Flushes buffered appends to disk. */
  async close(): Promise<void> {
    const held = this.held.splice(0).join('');
    if (held) this.write(held);
    const s = this.stream;
    this.stream = null;
    if (s) await endStream(s);
  }
}

function endStream(s: WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (s.destroyed || s.writableFinished) return resolve();
    s.once('error', () => resolve());
    s.end(() => resolve());
  });
}
