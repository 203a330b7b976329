/**
 * What a record's cost rests on beyond its token counts, so that repricing charges it as the answer was billed:
 *   service_tier         the tier the answer says served it (flex, priority, batch ...), NULL when it named none
 *                        (every record before this migration: they were priced at the standard rates)
 *   input_audio_tokens   audio tokens of the input, a part of input_tokens (gpt-4o-audio-preview chats)
 *   output_audio_tokens  audio tokens generated, a part of output_tokens
 * The rollups need nothing new: they sum costs, and a repricing moves the cost it changes.
 */
import type { Migration } from './index';

function ddl(int: string): string {
  return [
    'ALTER TABLE usage_records ADD COLUMN service_tier TEXT;',
    `ALTER TABLE usage_records ADD COLUMN input_audio_tokens ${int};`,
    `ALTER TABLE usage_records ADD COLUMN output_audio_tokens ${int};`,
  ].join('\n');
}

export const servedTierAudio: Migration = {
  version: 12,
  name: 'served_tier_audio',
  postgres: ddl('BIGINT'),
  sqlite: ddl('INTEGER'),
};
