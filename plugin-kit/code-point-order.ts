/**
 * Strings in Unicode code-point order, which is also UTF-8 byte order: the order Redis keeps a sorted set's members
 * in (ZRANGEBYLEX), so that a page of tag values cut in this process and one cut in Redis agree. JavaScript's `<`
 * compares UTF-16 code units, which puts U+E000..U+FFFF after the characters beyond U+FFFF.
 */
export function codePointCompare(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return rank(x) - rank(y);
  }
  return a.length - b.length;
}

/** Surrogates (D800..DFFF) moved above E000..FFFF: code-unit order becomes code-point order. */
function rank(unit: number): number {
  if (unit >= 0xe000) return unit - 0x800;
  if (unit >= 0xd800) return unit + 0x2000;
  return unit;
}
