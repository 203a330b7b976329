/**
 * Bounds a text the gateway stores, logs or puts into an error message when it comes from a client or a provider:
 * a text longer than `max` characters (UTF-16 code units, as String.length counts) is cut and ends with
 * TRUNCATION_MARKER, so that the result is at most `max` characters long and visibly not the whole value.
 */
export const TRUNCATION_MARKER = '…[truncated]';

export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= TRUNCATION_MARKER.length) return TRUNCATION_MARKER.slice(0, max);
  let end = max - TRUNCATION_MARKER.length;
  // Never keep half of a surrogate pair: the cut text must stay valid UTF-16 (and encode to valid UTF-8).
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return text.slice(0, end) + TRUNCATION_MARKER;
}
