/**
 * An alert as a Slack message (incoming webhooks take Block Kit): `text` is the notification and the fallback,
 * `blocks` the message itself: a header, the summary, the figures as fields, a button to the dashboard and a
 * context line with the alert id. Text from the configuration or the traffic (workspace, tag values) is escaped.
 */
import type { Alert } from './alert';
import { parseUsd } from '../pricing/money';
import { forecastSentence, usdText } from './alert-text';

type TextObject = { type: 'mrkdwn' | 'plain_text'; text: string };
type Block = Record<string, unknown> & { type: string };

/** Slack's limits: a header's text, a section's text, a field's text, fields per section. */
const HEADER_MAX = 150;
const SECTION_MAX = 3000;
const FIELD_MAX = 2000;
const FIELDS_MAX = 10;

/** &, < and > are control characters in Slack's mrkdwn. */
export function slackEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const clip = (s: string, max: number) => (s.length <= max ? s : `${s.slice(0, max - 1)}…`);
const mrkdwn = (text: string, max: number): TextObject => ({ type: 'mrkdwn', text: clip(text, max) });

function figures(a: Alert): [string, string][] {
  const rows: [string, string | null][] = [
    ['Workspace', a.workspace],
    ['Scope', a.scope],
    [
      'Budget',
      a.budget ? `${usdText(parseUsd(a.budget.limit_usd))} per ${a.budget.period} (${a.budget.action})` : null,
    ],
    ['Spend', a.spend_usd === null ? null : usdText(parseUsd(a.spend_usd))],
    ['Threshold', a.threshold === null ? null : `${Math.round(a.threshold * 1000) / 10}%`],
    ['Rule', a.rule],
    ['Forecast', a.forecast && a.budget ? forecastSentence(a.forecast, a.budget) : null],
    ...Object.entries(a.fields),
  ];
  return rows.filter((r): r is [string, string] => r[1] !== null);
}

export function slackMessage(a: Alert): { text: string; blocks: Block[] } {
  const fields = figures(a)
    .slice(0, FIELDS_MAX)
    .map(([name, value]) => mrkdwn(`*${slackEscape(name)}*\n${slackEscape(value)}`, FIELD_MAX));
  const blocks: Block[] = [
    { type: 'header', text: { type: 'plain_text', text: clip(a.title, HEADER_MAX), emoji: true } },
    { type: 'section', text: mrkdwn(slackEscape(a.summary), SECTION_MAX) },
  ];
  if (fields.length > 0) blocks.push({ type: 'section', fields });
  if (a.dashboard_url)
    blocks.push({
      type: 'actions',
      elements: [{ type: 'button', text: { type: 'plain_text', text: 'Open the dashboard' }, url: a.dashboard_url }],
    });
  blocks.push({
    type: 'context',
    elements: [mrkdwn(`${slackEscape(a.kind)} · alert_id ${a.alert_id} · ${a.created_at}`, SECTION_MAX)],
  });
  // The notification names the budget, the spend and what fired (title and summary), and links the dashboard.
  const link = a.dashboard_url ? ` <${a.dashboard_url}|Open the dashboard>` : '';
  return { text: `${clip(slackEscape(`${a.title}. ${a.summary}`), SECTION_MAX - link.length)}${link}`, blocks };
}
