/**
 * A JSON object body with one field added at its end, every other byte as the client sent it: no re-serialisation,
 * so number formats, escapes, key order and spacing are kept. `json` is the body parsed (to know whether the
 * object is empty, and whether the field is already there as null, in which case the object is serialised again
 * with the field set in place rather than sent with a duplicate key).
 */
export function withJsonField(
  body: Buffer,
  json: Record<string, unknown>,
  field: string,
  value: number | string | boolean,
): Buffer {
  if (Object.prototype.hasOwnProperty.call(json, field))
    return Buffer.from(JSON.stringify({ ...json, [field]: value }), 'utf8');
  let end = body.length - 1;
  while (end >= 0 && isJsonSpace(body[end])) end--;
  if (end < 0 || body[end] !== 0x7d /* } */) throw new Error('withJsonField: the body is not a JSON object');
  const added = `${Object.keys(json).length > 0 ? ',' : ''}${JSON.stringify(field)}:${JSON.stringify(value)}`;
  return Buffer.concat([body.subarray(0, end), Buffer.from(added, 'utf8'), body.subarray(end)]);
}

function isJsonSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}
