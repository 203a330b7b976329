/** The spend freezes in force (GET /api/freezes), each with a button that lifts it (DELETE /api/freezes/{id}). */
import { api, type FreezeJson } from './api.js';
import type { AppCtx } from './context.js';
import { h } from './dom.js';
import { dateTime } from './format.js';
import { scopeText } from './key-names.js';

export function freezeTable(ctx: AppCtx, freezes: FreezeJson[]): HTMLElement {
  if (freezes.length === 0) return h('div', { class: 'empty-inline', id: 'no-freezes' }, 'No scope is frozen.');
  const lift = async (f: FreezeJson, button: HTMLButtonElement) => {
    button.disabled = true;
    try {
      await api.liftFreeze(f.id);
      ctx.update({});
    } catch (err) {
      button.disabled = false;
      ctx.fail(err);
    }
  };
  return h(
    'table',
    { class: 'grid', id: 'freezes' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['Freeze', 'Workspace', 'Refused', 'Why', 'Since', 'Until', ''].map((x) => h('th', {}, x)),
      ),
    ),
    h(
      'tbody',
      {},
      freezes.map((f) => {
        const button = h(
          'button',
          { type: 'button', class: 'btn small danger-outline', dataset: { lift: f.id } },
          'Lift',
        );
        button.onclick = () => void lift(f, button);
        return h(
          'tr',
          { dataset: { freeze: f.id, scope: f.scope } },
          h('td', { class: 'mono small' }, f.id),
          h('td', {}, f.workspace),
          h('td', {}, scopeText(f.scope)),
          h('td', { class: 'small' }, f.reason),
          h('td', { class: 'nowrap' }, dateTime(f.created_at)),
          h('td', { class: 'nowrap' }, f.expires_at ? dateTime(f.expires_at) : 'lifted by hand'),
          h('td', {}, button),
        );
      }),
    ),
  );
}
