/**
 * The quarantine: where a usage record goes when the store refused it for its content (storage/store-errors.ts), so
 * that it never blocks the records behind it and is never silently dropped.
 *
 * A quarantined record goes to the store's quarantined_records table (migration 006) with the error; if the store
 * refuses even that row for its content, to a JSONL file beside the spill file. Each one is counted and logged as
 * an error: its id, the error code and the bounded message, never the record's values (a model name or a tag is a
 * client's input). A store that is down when a record is to be quarantined makes add() throw: the caller keeps the
 * record and retries it as any other write.
 */
import { createHash } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { truncate } from '../core/truncate';
import type { UsageRecord } from '../records/usage-record';
import { recordToJson } from './record-json';
import type { StorageLogger, UsageStore } from './store';
import { isContentError, summarizeStoreError } from './store-errors';

/** A row of quarantined_records. */
export interface QuarantinedRecord {
  /** sha256 of recordJson, hex. */
  digest: string;
  /** At most RECORD_ID_MAX characters; null for a spill-file line that was not a record. */
  recordId: string | null;
  recordTs: number | null;
  quarantinedAt: number;
  errorCode: string | null;
  /** At most STORE_ERROR_MESSAGE_MAX characters. */
  errorMessage: string;
  /** The record as one spill-file line (or the unreadable line as it was). */
  recordJson: string;
}

/** The columns of quarantined_records that a quarantine fills, in the order of quarantineValues. */
export const QUARANTINE_COLUMNS =
  'digest, record_id, record_ts, quarantined_at, error_code, error_message, record_json';

export function quarantineValues(e: QuarantinedRecord): (string | number | null)[] {
  return [e.digest, e.recordId, e.recordTs, e.quarantinedAt, e.errorCode, e.errorMessage, e.recordJson];
}

/** Longest record id kept in quarantined_records (gateway ids are 36 characters; a hand-edited spill file may hold anything). */
export const RECORD_ID_MAX = 256;

/** Error code of a spill-file line that is not a usage record (not JSON, or a field of the wrong type). */
export const UNREADABLE_SPILL_LINE = 'unreadable_spill_line';

function entry(
  recordJson: string,
  recordId: string | null,
  recordTs: number | null,
  err: unknown,
  code?: string,
): QuarantinedRecord {
  const summary = summarizeStoreError(err);
  return {
    digest: createHash('sha256').update(recordJson, 'utf8').digest('hex'),
    recordId: recordId === null ? null : truncate(recordId, RECORD_ID_MAX),
    recordTs: Number.isSafeInteger(recordTs) ? recordTs : null,
    quarantinedAt: Date.now(),
    errorCode: code ?? summary.code,
    errorMessage: summary.message,
    recordJson,
  };
}

/** The quarantine entry of a record the store refused with `err`. */
export function quarantineRecord(record: UsageRecord, err: unknown): QuarantinedRecord {
  return entry(recordToJson(record), typeof record.id === 'string' ? record.id : null, record.ts, err);
}

/** The quarantine entry of a spill-file line that could not be read as a record. */
export function quarantineSpillLine(line: string, err: unknown): QuarantinedRecord {
  return entry(line, null, null, err, UNREADABLE_SPILL_LINE);
}

type QuarantineStore = Partial<Pick<UsageStore, 'quarantine'>>;

export interface QuarantineCounts {
  /** Records quarantined by this process (in the store's table or in the file). */
  quarantined: number;
  /** Of these, records the store could not take even into its quarantine table: in the file. */
  quarantinedToFile: number;
}

export class Quarantine {
  private readonly counts: QuarantineCounts = { quarantined: 0, quarantinedToFile: 0 };

  constructor(
    private readonly store: QuarantineStore,
    /** JSONL file for what the store's table refused: one {"quarantined_at", "error", "record"} object a line. */
    readonly filePath: string,
    /** Wraps each store call (the write queue's time-out). */
    private readonly call: <T>(write: () => Promise<T>) => Promise<T>,
    private readonly log?: StorageLogger,
  ) {}

  stats(): QuarantineCounts {
    return { ...this.counts };
  }

  /** Quarantines the entries; throws when neither the store (unavailable) nor the file could take them. */
  async add(entries: readonly QuarantinedRecord[]): Promise<void> {
    if (entries.length === 0) return;
    const quarantine = this.store.quarantine?.bind(this.store);
    if (quarantine) {
      try {
        await this.call(() => quarantine(entries));
        this.counted(entries, 'store');
        return;
      } catch (err) {
        if (!isContentError(err)) throw err;
        const { code, message } = summarizeStoreError(err);
        this.log?.warn(
          { records: entries.length, errorCode: code, error: message, path: this.filePath },
          'usage quarantine table refused the records: writing them to the quarantine file',
        );
      }
    }
    const lines = entries.map(
      (e) =>
        `${JSON.stringify({ quarantined_at: new Date(e.quarantinedAt).toISOString(), error: { code: e.errorCode, message: e.errorMessage }, record: e.recordJson })}\n`,
    );
    appendFileSync(this.filePath, lines.join('')); // throws when the disk refuses: the caller retries later
    this.counts.quarantinedToFile += entries.length;
    this.counted(entries, 'file');
  }

  private counted(entries: readonly QuarantinedRecord[], where: 'store' | 'file'): void {
    for (const e of entries) {
      this.counts.quarantined++;
      this.log?.error(
        {
          recordId: e.recordId === null ? null : truncate(e.recordId, 100),
          errorCode: e.errorCode,
          error: e.errorMessage,
          quarantine: where === 'store' ? 'quarantined_records' : this.filePath,
          quarantined: this.counts.quarantined,
        },
        'usage record quarantined: the store refused its content',
      );
    }
  }
}
