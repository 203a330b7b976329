/**
 * not_counted_count in every rollup table: the records of audio and images that had nothing to price them by
 * (provenance not_counted). With it a group made only of such records reads "not counted" rather than a known $0.
 *
 * The backfill: until this version every audio and image record that neither failed nor was cut was not counted,
 * and those that failed or were cut carry an error code. So in the hourly rollups, keyed by endpoint and status,
 * an audio or image row of a status below 400 holds requests - error_count of them; the daily rollups sum their
 * hours. The tag-set rollup has no endpoint: it counts the records themselves, so days whose records retention
 * already deleted keep 0 there.
 */
import type { Migration } from './index';

const DAY = 86_400_000;
const MEDIA = `('audio.speech', 'audio.transcriptions', 'audio.translations', 'images.generations', 'images.edits', 'images.variations')`;
const ROLLUPS = [
  'usage_rollup_hourly',
  'usage_tag_rollup_hourly',
  'usage_rollup_daily',
  'usage_tag_rollup_daily',
  'usage_tag_set_daily',
];

function ddl(int: string): string {
  return [
    ...ROLLUPS.map((t) => `ALTER TABLE ${t} ADD COLUMN not_counted_count ${int} NOT NULL DEFAULT 0;`),
    ...['usage_rollup_hourly', 'usage_tag_rollup_hourly'].map(
      (t) => `UPDATE ${t} SET not_counted_count = requests - error_count WHERE endpoint IN ${MEDIA} AND status < 400;`,
    ),
    `UPDATE usage_rollup_daily SET not_counted_count = COALESCE((SELECT SUM(h.not_counted_count)
  FROM usage_rollup_hourly h WHERE h.hour >= usage_rollup_daily.day AND h.hour < usage_rollup_daily.day + ${DAY}), 0);`,
    `UPDATE usage_tag_rollup_daily SET not_counted_count = COALESCE((SELECT SUM(h.not_counted_count)
  FROM usage_tag_rollup_hourly h WHERE h.tag_key = usage_tag_rollup_daily.tag_key
  AND h.tag_value = usage_tag_rollup_daily.tag_value
  AND h.hour >= usage_tag_rollup_daily.day AND h.hour < usage_tag_rollup_daily.day + ${DAY}), 0);`,
    `UPDATE usage_tag_set_daily SET not_counted_count = (SELECT COUNT(*) FROM usage_records r
  WHERE r.tag_set_id = usage_tag_set_daily.set_id AND r.provenance = 'not_counted'
  AND r.ts >= usage_tag_set_daily.day AND r.ts < usage_tag_set_daily.day + ${DAY});`,
  ].join('\n');
}

export const notCounted: Migration = {
  version: 9,
  name: 'not_counted',
  postgres: ddl('BIGINT'),
  sqlite: ddl('INTEGER'),
};
