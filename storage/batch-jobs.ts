/**
 * The batches created through the gateway (migration 016), on either store: one row per batch, written when its
 * creation answered and read when its results pass through. Each write is one statement, atomic on its own.
 */
import type { BatchJob, BatchJobsService } from '../records/batch-job';
import { toNumber, type SqlValue } from './codec';
import type { SqlDialect } from './dialect';
import type { Exec } from './query/run';

const COLUMNS = 'provider, batch_id, workspace_id, key_id, tags, created_at, output_file_id';

export class BatchJobTable implements BatchJobsService {
  constructor(
    private readonly dialect: SqlDialect,
    private readonly exec: Exec,
  ) {}

  private run(sql: string, params: SqlValue[]): Promise<Record<string, unknown>[]> {
    return this.exec({ sql: this.dialect.sql(sql), params: params.map((p) => this.dialect.bind(p)) as SqlValue[] });
  }

  async save(job: BatchJob): Promise<void> {
    await this.run(
      `INSERT INTO batch_jobs (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (provider, batch_id) DO NOTHING RETURNING batch_id`,
      [
        job.provider,
        job.batchId,
        job.workspaceId,
        job.keyId,
        JSON.stringify(job.tags),
        job.createdAt,
        job.outputFileId ?? null,
      ],
    );
  }

  async setOutputFile(provider: string, batchId: string, fileId: string): Promise<void> {
    await this.run(
      'UPDATE batch_jobs SET output_file_id = ? WHERE provider = ? AND batch_id = ? AND output_file_id IS NULL RETURNING batch_id',
      [fileId, provider, batchId],
    );
  }

  async findByResults(provider: string, id: string): Promise<BatchJob | undefined> {
    const rows = await this.run(
      `SELECT ${COLUMNS} FROM batch_jobs WHERE provider = ? AND (batch_id = ? OR output_file_id = ?) LIMIT 1`,
      [provider, id, id],
    );
    return rows.length === 0 ? undefined : jobFrom(rows[0]);
  }
}

function jobFrom(r: Record<string, unknown>): BatchJob {
  return {
    provider: String(r.provider),
    batchId: String(r.batch_id),
    workspaceId: r.workspace_id == null ? null : String(r.workspace_id),
    keyId: r.key_id == null ? null : String(r.key_id),
    tags: JSON.parse(String(r.tags)) as Record<string, string>,
    createdAt: toNumber(r.created_at),
    outputFileId: r.output_file_id == null ? null : String(r.output_file_id),
  };
}
