/** The latest budget and spend-anomaly alerts (GET /api/alerts), once each whatever the channels that carried them. */
import { api, type AlertRow } from './api.js';
import { h } from './dom.js';
import { dateTime } from './format.js';
import { scopeText } from './key-names.js';

const SHOWN = 20;
const aboutSpend = (kind: string): boolean => kind.startsWith('budget.') || kind === 'spend.anomaly';

export async function alertHistory(): Promise<HTMLElement> {
  const { data } = await api.alerts();
  const seen = new Set<string>();
  const rows: AlertRow[] = [];
  for (const a of data) {
    if (rows.length === SHOWN || !aboutSpend(a.kind) || seen.has(a.alert_id)) continue;
    seen.add(a.alert_id);
    rows.push(a);
  }
  if (rows.length === 0)
    return h(
      'div',
      { class: 'empty-inline', id: 'no-alerts' },
      data.length === 0
        ? 'No alert yet (alerts need a channel under alerts.channels).'
        : 'No budget or spend alert among the latest alerts.',
    );
  return h(
    'table',
    { class: 'grid', id: 'budget-alerts' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['Raised', 'Kind', 'Scope', 'What', 'Delivery'].map((x) => h('th', {}, x)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((a) =>
        h(
          'tr',
          { dataset: { alert: a.alert_id, kind: a.kind } },
          h('td', { class: 'nowrap' }, dateTime(a.created_at)),
          h('td', { class: 'mono small' }, a.kind),
          h('td', {}, scopeText(a.alert.scope)),
          h('td', { class: 'small' }, a.alert.title),
          h('td', {}, h('span', { class: `badge ${a.state === 'sent' ? 'good' : 'warn'}` }, a.state)),
        ),
      ),
    ),
  );
}
