/**
 * batch_jobs: the batches created through the gateway, so that their results, priced line by line as they pass
 * through later, are attributed to the creating request's workspace, key and tags:
 *   provider, batch_id   the provider's slug and its batch id
 *   output_file_id       OpenAI's output file, named by the batch once it is done (results are fetched by file id)
 *   created_at           when the batch was created: the time its results' records carry
 *   tags                 the creating request's tags, as JSON
 */
import type { Migration } from './index';

function ddl(int: string, strict: string): string {
  return `CREATE TABLE batch_jobs (
  provider TEXT NOT NULL,
  batch_id TEXT NOT NULL,
  workspace_id TEXT,
  key_id TEXT,
  tags TEXT NOT NULL,
  created_at ${int} NOT NULL,
  output_file_id TEXT,
  PRIMARY KEY (provider, batch_id)
)${strict};
CREATE INDEX batch_jobs_output_file ON batch_jobs (provider, output_file_id);`;
}

export const batchJobs: Migration = {
  version: 16,
  name: 'batch_jobs',
  postgres: ddl('BIGINT', ''),
  sqlite: ddl('INTEGER', ' STRICT'),
};
