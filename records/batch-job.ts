/** A batch created through the gateway: who created it, with which tags, when; OpenAI's output file once named. */
export interface BatchJob {
  provider: string;
  batchId: string;
  workspaceId: string | null;
  keyId: string | null;
  tags: Record<string, string>;
  createdAt: number;
  outputFileId?: string | null;
}

/** Where batch creations are kept until their results pass through (storage/batch-jobs.ts). */
export interface BatchJobsService {
  /** Keeps a batch; a second answer naming the same batch changes nothing. */
  save(job: BatchJob): Promise<void>;
  /** Notes the output file a kept batch's retrieval named (OpenAI fetches results by file id). */
  setOutputFile(provider: string, batchId: string, fileId: string): Promise<void>;
  /** The kept batch whose results have this id: the batch's own (Anthropic) or its output file's (OpenAI). */
  findByResults(provider: string, id: string): Promise<BatchJob | undefined>;
}
