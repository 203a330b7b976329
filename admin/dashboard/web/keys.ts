/** API Keys: list, create (the key is shown once, with a copy button), revoke. */
import { forgetKeyNames } from './key-names.js';
import { api, type KeyJson } from './api.js';
import type { AppCtx } from './context.js';
import { h, replace } from './dom.js';
import { ago, dateTime } from './format.js';

/** The key just created: shown until dismissed, revoked or the view is left; never stored. */
let created: (KeyJson & { key: string }) | undefined;

/** Drops the key shown once (the shell calls it when the view changes or the user signs out). */
export function forgetCreatedKey(): void {
  created = undefined;
}

export async function renderKeys(root: HTMLElement, ctx: AppCtx, isCurrent: () => boolean): Promise<void> {
  const banner = created
    ? newKeyBanner(created, () => {
        created = undefined;
        ctx.update({});
      })
    : null;
  const tableHost = h('div', { class: 'table-wrap' }, h('div', { class: 'empty-inline' }, 'Loading…'));
  replace(
    root,
    h(
      'section',
      { class: 'panel' },
      h('header', { class: 'panel-head' }, h('h2', {}, 'Create an API key')),
      h(
        'p',
        { class: 'muted' },
        'Clients send a gateway key as the X-Gateway-Key header. Only its hash is stored: the key is shown once, right after it is created.',
      ),
      createKeyForm(ctx),
      banner,
    ),
    h('section', { class: 'panel' }, h('header', { class: 'panel-head' }, h('h2', {}, 'API keys')), tableHost),
  );

  const first = await api.keys();
  if (!isCurrent()) return;
  if (first.data.length === 0) {
    replace(
      tableHost,
      h(
        'div',
        { class: 'empty-inline' },
        'No keys yet: create one above, or declare one under workspaces[].keys in gateway.config.yaml.',
      ),
    );
    return;
  }
  showKeys(ctx, tableHost, first);
}

/** Label (and workspace, when there are several): submitting creates the key and shows it once. */
function createKeyForm(ctx: AppCtx): HTMLFormElement {
  const label = h('input', {
    id: 'key-label',
    placeholder: 'e.g. support-bot production',
    maxlength: 200,
    size: 32,
    autocomplete: 'off',
  });
  const workspaces = ctx.info.workspaces;
  const ws = h(
    'select',
    { id: 'key-workspace', 'aria-label': 'Workspace' },
    workspaces.map((w) => h('option', { value: w.id }, w.name ? `${w.name} (${w.id})` : w.id)),
  );
  const form = h(
    'form',
    { class: 'create-key', id: 'create-key' },
    h('label', {}, h('span', { class: 'muted' }, 'Label'), label),
    workspaces.length > 1 ? h('label', {}, h('span', { class: 'muted' }, 'Workspace'), ws) : null,
    h('button', { type: 'submit', class: 'btn primary' }, 'Create key'),
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      forgetKeyNames();
      created = await api.createKey({
        label: label.value.trim() || undefined,
        workspace: workspaces.length > 1 ? ws.value : undefined,
      });
      ctx.update({});
    } catch (err) {
      ctx.fail(err);
    }
  });
  return form;
}

/** Fills `tableHost` with the keys of the first page; the API answers a page at a time, so further pages are
 * fetched on demand and join the table. */
function showKeys(ctx: AppCtx, tableHost: HTMLElement, first: { data: KeyJson[]; next_cursor: string | null }): void {
  let { data, next_cursor: next } = first;
  const more = h('button', { type: 'button', class: 'btn small', id: 'more-keys' }, 'Show more keys');
  more.addEventListener('click', async () => {
    more.disabled = true;
    try {
      const page = await api.keys(next);
      data = [...data, ...page.data];
      next = page.next_cursor;
      render();
    } catch (err) {
      ctx.fail(err);
    }
  });
  const render = () => {
    more.disabled = false;
    replace(tableHost, keysTable(ctx, data), next ? more : null);
  };
  render();
}

function keysTable(ctx: AppCtx, keys: KeyJson[]): HTMLElement {
  // Active keys first (newest first), then the revoked ones, then the read-only keys of gateway.config.yaml.
  const fromConfig = (k: KeyJson) => k.source === 'config';
  const rows = [...keys].sort(
    (a, b) =>
      Number(fromConfig(a)) - Number(fromConfig(b)) ||
      Number(a.revoked) - Number(b.revoked) ||
      (b.created_at ?? '').localeCompare(a.created_at ?? '') ||
      a.id.localeCompare(b.id),
  );
  return h(
    'table',
    { class: 'grid', id: 'keys' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['Label', 'Key id', 'Workspace', 'Created', 'Last used', 'Status', ''].map((t) => h('th', {}, t)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((k) => keyRow(ctx, k)),
    ),
  );
}

function newKeyBanner(k: KeyJson & { key: string }, dismiss: () => void): HTMLElement {
  const input = h('input', {
    id: 'new-key',
    class: 'mono',
    readonly: true,
    value: k.key,
    size: 56,
    'aria-label': 'The new key',
  });
  const status = h('span', { class: 'muted small', id: 'copy-status' });
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(k.key);
    } catch {
      // Not a secure context (plain http to a remote host): fall back to selecting and copying.
      input.select();
      document.execCommand('copy');
    }
    status.textContent = 'Copied';
  };
  return h(
    'div',
    { class: 'new-key', dataset: { keyId: k.id } },
    h('strong', {}, `Key ${k.id} created${k.label ? ` (${k.label})` : ''}.`),
    ' Copy it now: it is shown only this once and cannot be recovered.',
    h(
      'div',
      { class: 'new-key-row' },
      input,
      h('button', { type: 'button', class: 'btn primary', id: 'copy-key', onclick: copy }, 'Copy'),
      status,
      h('span', { class: 'spacer' }),
      h('button', { type: 'button', class: 'btn small', onclick: dismiss }, 'Done'),
    ),
  );
}

function keyRow(ctx: AppCtx, k: KeyJson): HTMLElement {
  if (k.source === 'config') return configKeyRow(k);
  const action = k.revoked
    ? null
    : h('button', { type: 'button', class: 'btn small danger-outline', dataset: { revoke: k.id } }, 'Revoke');
  if (action) {
    let armed: number | undefined;
    action.addEventListener('click', async () => {
      if (armed === undefined) {
        // Two clicks: the first arms the button, the second revokes (no modal dialog).
        action.textContent = 'Confirm revoke';
        action.classList.add('danger');
        armed = window.setTimeout(() => {
          armed = undefined;
          action.textContent = 'Revoke';
          action.classList.remove('danger');
        }, 5000);
        return;
      }
      clearTimeout(armed);
      action.disabled = true;
      try {
        forgetKeyNames();
        await api.revokeKey(k.id);
        if (created?.id === k.id) created = undefined; // a revoked key is of no use: stop showing it
        ctx.update({});
      } catch (err) {
        ctx.fail(err);
      }
    });
  }
  return h(
    'tr',
    { dataset: { keyId: k.id, revoked: String(k.revoked) }, class: k.revoked ? 'revoked' : '' },
    h('td', {}, k.label || h('span', { class: 'muted' }, '(no label)')),
    h('td', { class: 'mono' }, k.id),
    h('td', {}, k.workspace),
    h('td', { class: 'nowrap', title: k.created_at }, dateTime(k.created_at)),
    h('td', { class: 'nowrap', title: k.last_used_at ?? 'never used' }, ago(k.last_used_at)),
    h(
      'td',
      {},
      k.revoked
        ? h('span', { class: 'badge bad', title: k.revoked_at ?? undefined }, `revoked ${dateTime(k.revoked_at)}`)
        : h('span', { class: 'badge good' }, 'active'),
    ),
    h('td', { class: 'num' }, action),
  );
}

/** A key declared in gateway.config.yaml: read-only here (change it in the file), no dates kept for it. */
function configKeyRow(k: KeyJson): HTMLElement {
  return h(
    'tr',
    { dataset: { keyId: k.id, revoked: 'false', source: 'config' }, class: 'from-config' },
    h('td', {}, k.label || h('span', { class: 'muted' }, '(no label)')),
    h('td', { class: 'mono' }, k.id),
    h('td', {}, k.workspace),
    h('td', { class: 'muted' }, '—'),
    h(
      'td',
      {
        class: 'muted',
        title: 'Use of keys declared in gateway.config.yaml is not tracked here: group the usage by key id',
      },
      '—',
    ),
    h(
      'td',
      {},
      h(
        'span',
        { class: 'badge', title: 'Declared in gateway.config.yaml (workspaces[].keys): change or remove it there' },
        'from config',
      ),
    ),
    h('td', { class: 'num' }),
  );
}
