/**
 * Local append-only JSONL spill for usage records the store could not take.
 *
 * New spills append to `path`. To replay, the active file is first renamed to
 * `<path>.replay-<ms>` so appends during the replay go to a fresh file; a replay file is deleted
 * only after all its records were written. A crash or failure mid-replay leaves the file for
 * the next attempt (re-writing records is harmless: inserts are idempotent by id).
 * One spill path per process: two processes must not share it.
 *
 * A full or read-only disk loses nothing it can avoid losing: an append that fails is cut back to where it began
 * (no torn line), and its records go to the fallback location (storage.spill_fallback) when there is one, else
 * stay in memory (at most `maxHeld` records) and are tried again every RETRY_MS, and handed to the store directly
 * once it takes writes (takeHeld). Each location's failure and recovery is logged once, as it is.
 */
import {
  appendFileSync,
  createReadStream,
  existsSync,
  mkdirSync,
  readdirSync,
  renameSync,
  statSync,
  truncateSync,
} from 'node:fs';
import { appendFile, truncate, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import type { UsageRecord } from '../records/usage-record';
import { recordFromJson, recordToJson } from './record-json';
import type { StorageLogger } from './store';
import { summarizeStoreError } from './store-errors';

/** Lines of a spill file, read back. */
export interface SpillBatch {
  records: UsageRecord[];
  /** Lines that are not usage records, and why. */
  unreadable: { line: string; err: unknown }[];
}

export interface SpillOptions {
  /** A second file, on another disk, for when `path` cannot be written. */
  fallbackPath?: string;
  /** Records kept in memory while no location can be written; beyond them records are dropped (and counted). */
  maxHeld?: number;
  log?: StorageLogger;
}

/** How soon records held in memory are tried on disk again. */
const RETRY_MS = 1000;

export class SpillFile {
  private readonly locations: string[];
  /** Active files with records appended since they were last moved aside (or found non-empty at start). */
  private readonly dirty = new Set<string>();
  private readonly replayFiles = new Set<string>();
  private seq = 0;
  /** Lines waiting for the write under way. */
  private queued: string[] = [];
  /** Lines no location could take, kept in memory. */
  private held: string[] = [];
  private dropped = 0;
  /** Writes and renames, one at a time. */
  private chain: Promise<void> = Promise.resolve();
  private drainScheduled = false;
  private retryTimer: NodeJS.Timeout | null = null;
  /** The error code of each location that failed last time, so that a failure is logged once. */
  private readonly failing = new Map<string, string>();
  /** The location that took the last write. */
  private lastWritten: string;
  private readonly maxHeld: number;
  private readonly log?: StorageLogger;

  constructor(
    readonly path: string,
    options: SpillOptions = {},
  ) {
    this.log = options.log;
    this.maxHeld = options.maxHeld ?? 100_000;
    this.locations = options.fallbackPath ? [path, options.fallbackPath] : [path];
    this.lastWritten = path;
    mkdirSync(dirname(path), { recursive: true });
    for (const location of this.locations) this.scan(location);
  }

  /** True while spilled records wait to be replayed. */
  pending(): boolean {
    return this.dirty.size > 0 || this.replayFiles.size > 0 || this.queued.length > 0 || this.held.length > 0;
  }

  /** Bytes waiting for replay: the active files, the files moved aside, and what waits in memory. */
  bytes(): number {
    let n = [...this.queued, ...this.held].reduce((sum, line) => sum + Buffer.byteLength(line), 0);
    for (const file of [...this.locations, ...this.replayFiles]) n += sizeOf(file);
    return n;
  }

  /** Records no location could take, held in memory; and those dropped beyond maxHeld. */
  stats(): { held: number; dropped: number } {
    return { held: this.held.length, dropped: this.dropped };
  }

  /** The file that took the last write (the fallback while the first location fails). */
  writtenTo(): string {
    return this.lastWritten;
  }

  /** Non-blocking append (the hot path during an outage): written in the background, in order. */
  append(records: readonly UsageRecord[]): void {
    if (records.length === 0) return;
    for (const r of records) this.queued.push(`${recordToJson(r)}\n`);
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    void this.serial(() => this.drain());
  }

  /** Synchronous append, for records arriving after close(). */
  appendSync(records: readonly UsageRecord[]): void {
    if (records.length === 0) return;
    const lines = records.map((r) => `${recordToJson(r)}\n`);
    for (const location of this.locations) {
      const before = sizeOf(location);
      try {
        appendFileSync(location, lines.join(''));
        this.wrote(location);
        return;
      } catch (err) {
        cutBack(() => truncateSync(location, before));
        this.failed(location, err, lines.length);
      }
    }
    this.hold(lines);
  }

  /** The records held in memory, handed over (to be written to the store); the caller appends back what fails. */
  takeHeld(): UsageRecord[] {
    return this.held.splice(0).map((line) => recordFromJson(line));
  }

  /** Moves the active files aside and returns every file awaiting replay, oldest first. */
  async takeForReplay(): Promise<string[]> {
    await this.serial(async () => {
      for (const location of this.dirty) {
        if (existsSync(location)) {
          const target = `${location}.replay-${String(Date.now()).padStart(15, '0')}-${String(this.seq++).padStart(6, '0')}`;
          renameSync(location, target);
          this.replayFiles.add(target);
        }
      }
      this.dirty.clear();
    });
    return [...this.replayFiles].sort((a, b) => basename(a).localeCompare(basename(b)));
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

  /** Writes what waits (held records are tried once more); resolves once every write settled. */
  async close(): Promise<void> {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.queued.unshift(...this.held.splice(0));
    await this.serial(() => this.drain());
  }

  private scan(location: string): void {
    if (sizeOf(location) > 0) this.dirty.add(location);
    const prefix = `${basename(location)}.replay-`;
    try {
      for (const name of readdirSync(dirname(location)))
        if (name.startsWith(prefix)) this.replayFiles.add(join(dirname(location), name));
    } catch {
      // a fallback folder not created yet
    }
  }

  private serial(op: () => Promise<void>): Promise<void> {
    const run = this.chain.then(op);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async drain(): Promise<void> {
    this.drainScheduled = false;
    while (this.queued.length > 0) await this.store(this.queued.splice(0));
  }

  /** Appends lines to the first location that takes them, else holds them in memory. */
  private async store(lines: string[]): Promise<void> {
    const text = lines.join('');
    for (const location of this.locations) {
      const before = sizeOf(location);
      try {
        if (location !== this.path) mkdirSync(dirname(location), { recursive: true });
        await appendFile(location, text);
        this.wrote(location);
        return;
      } catch (err) {
        await cutBack(() => truncate(location, before));
        this.failed(location, err, lines.length);
      }
    }
    this.hold(lines);
  }

  private wrote(location: string): void {
    this.dirty.add(location);
    this.lastWritten = location;
    if (this.failing.delete(location)) this.log?.info({ path: location }, 'usage spill file can be written again');
  }

  private failed(location: string, err: unknown, records: number): void {
    const { code, message } = summarizeStoreError(err);
    if (this.failing.get(location) === (code ?? message)) return;
    this.failing.set(location, code ?? message);
    const next = this.locations[this.locations.indexOf(location) + 1];
    this.log?.error(
      { path: location, errorCode: code, error: message, records, next: next ?? 'memory' },
      next
        ? 'usage spill file cannot be written: writing to the fallback location'
        : 'usage spill file cannot be written: records kept in memory until it can',
    );
  }

  private hold(lines: string[]): void {
    const room = Math.max(0, this.maxHeld - this.held.length);
    this.held.push(...lines.slice(0, room));
    if (lines.length > room) {
      this.dropped += lines.length - room;
      this.log?.error(
        { records: lines.length - room, held: this.held.length },
        'usage records lost: the spill file cannot be written and the records held in memory reached their bound',
      );
    }
    this.retryTimer ??= setTimeout(() => {
      this.retryTimer = null;
      if (this.held.length === 0) return;
      this.queued.unshift(...this.held.splice(0));
      if (!this.drainScheduled) {
        this.drainScheduled = true;
        void this.serial(() => this.drain());
      }
    }, RETRY_MS).unref();
  }
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** Cuts a file back to its size before a failed append, so that no torn line is left (best effort). */
function cutBack(op: () => void | Promise<void>): void | Promise<void> {
  try {
    const result = op();
    return result instanceof Promise ? result.catch(() => undefined) : undefined;
  } catch {
    return undefined;
  }
}
