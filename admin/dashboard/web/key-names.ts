/**
 * Keys by name: every grouping, filter and series shows a key by its label, as the API Keys view does, with its id
 * on hover. The labels are read once (every page of GET /api/keys) and again after a key is created or revoked.
 */
import { api } from './api.js';

/** Pages of 1,000 keys read for the names; a store holding more shows the rest by id. */
const MAX_PAGES = 20;

let names: Promise<Map<string, string>> | undefined;

async function readNames(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let cursor: string | null = null;
  for (let i = 0; i < MAX_PAGES; i++) {
    const page = await api.keys(cursor);
    for (const k of page.data) if (k.label) out.set(k.id, k.label);
    cursor = page.next_cursor;
    if (!cursor) break;
  }
  return out;
}

let loaded = new Map<string, string>();

/** Reads the labels (once, until forgotten); afterwards keyLabel answers from memory. */
export async function loadKeyNames(): Promise<void> {
  names ??= readNames().catch((err: unknown) => {
    names = undefined;
    throw err;
  });
  loaded = await names;
}

/** A key was created or revoked: read the labels again next time. */
export function forgetKeyNames(): void {
  names = undefined;
}

/** Whether a dimension's values are key ids. */
export const isKeyDim = (dim: string): boolean => dim === 'key_id';

/** What a value of `dim` is shown as: a key's label (its id when it has none), any other value as it is. */
export function shownValue(dim: string, value: string): string {
  return isKeyDim(dim) ? (loaded.get(value) ?? value) : value;
}

/** The hover text of a shown value: a key's id, when its label is shown instead. */
export function valueTitle(dim: string, value: string): string | undefined {
  return isKeyDim(dim) && loaded.has(value) ? `key id ${value}` : undefined;
}

/** The key id a typed filter value names: a label (exactly, case-insensitive) or an id. */
export function keyIdOf(typed: string): string {
  const lower = typed.toLowerCase();
  for (const [id, label] of loaded) if (label.toLowerCase() === lower) return id;
  return typed;
}

/** "key_id=key_ab12" shows the key's label, as everywhere on the page; a tag value as it is. */
export function scopeText(scope: string): string {
  const at = scope.indexOf('=');
  return at < 0 ? scope : `${scope.slice(0, at)} = ${shownValue(scope.slice(0, at), scope.slice(at + 1))}`;
}
