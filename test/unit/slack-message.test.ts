import { expect } from 'chai';
import { completeAlert } from '../../alerts/alert';
import { forecastAlert, thresholdAlerts } from '../../alerts/budget-alerts';
import { slackMessage } from '../../alerts/slack-message';
import type { BudgetStatus } from '../../contracts/services';
import { slackShapeProblems } from '../helpers/alert-receiver';

const USD = 1_000_000_000_000n; // pico-USD
const MONTH_START = Date.UTC(2026, 10, 1);
const MONTH_END = Date.UTC(2026, 11, 1);
const NOW = Date.UTC(2026, 10, 12, 9, 30);

/** A monthly $2,000 budget with $1,600 spent, burning towards $2,310 and its limit on the 24th. */
const budget: BudgetStatus = {
  key: 'ws:default:customer_id=acme:month:1793491200000',
  id: 'yaml:default:0',
  source: 'yaml',
  workspace: 'default',
  scope: 'customer_id=acme',
  period: 'month',
  periodStart: MONTH_START,
  periodEnd: MONTH_END,
  limitPico: 2000n * USD,
  spentPico: 1600n * USD,
  reservedPico: 0n,
  alertAt: [0.8],
  alerted: true,
  action: 'block',
  filters: { workspace: 'default', customer_id: 'acme' },
};
const forecast = { projectedPico: 2310n * USD, limitReachedAt: Date.UTC(2026, 10, 24, 6), windowMs: 3_600_000 };
const DASHBOARD = 'https://tollgate.example.com:8081/';

describe('Slack message of a budget alert', () => {
  it("names the workspace, the budget, the spend, the threshold, the forecast and the dashboard in Slack's shape", () => {
    const [input] = thresholdAlerts(budget, forecast);
    const alert = completeAlert(input, NOW, DASHBOARD);
    const message = slackMessage(alert);
    expect(slackShapeProblems(message)).to.deep.equal([]);
    expect(message.text).to.equal(
      'Budget 80% used: $1,600.00 of $2,000.00. The monthly budget of workspace default (customer_id=acme) reached 80% ' +
        'of its limit: $1,600.00 of $2,000.00 spent. At this rate the month ends at $2,310.00 of $2,000.00, the limit ' +
        'reached on the 24th. <https://tollgate.example.com:8081/#/usage|Open the dashboard>',
    );
    const fields = Object.fromEntries(
      (message.blocks.find((b) => b.fields)!.fields as { text: string }[]).map((f) => f.text.split('\n')),
    );
    expect(fields).to.deep.equal({
      '*Workspace*': 'default',
      '*Scope*': 'customer_id=acme',
      '*Budget*': '$2,000.00 per month (block)',
      '*Spend*': '$1,600.00',
      '*Threshold*': '80%',
      '*Rule*': 'alert_at 0.8',
      '*Forecast*': 'At this rate the month ends at $2,310.00 of $2,000.00, the limit reached on the 24th.',
    });
    const button = message.blocks.find((b) => b.type === 'actions')!.elements as { url: string }[];
    expect(button[0].url).to.equal('https://tollgate.example.com:8081/#/usage');
    console.log(`      a Slack message's text as rendered:\n      ${message.text}`);
  });

  it('a forecast alert says when a daily budget reaches its limit, to the minute', () => {
    const day = { ...budget, period: 'day' as const, periodEnd: MONTH_START + 86_400_000, spentPico: 900n * USD };
    const input = forecastAlert(day, { ...forecast, limitReachedAt: MONTH_START + 17 * 3_600_000 + 40 * 60_000 })!;
    const message = slackMessage(completeAlert(input, NOW, undefined));
    expect(slackShapeProblems(message)).to.deep.equal([]);
    expect(message.text).to.equal(
      'Budget forecast: $2,310.00 of $2,000.00 by the end of the period. The daily budget of workspace default ' +
        '(customer_id=acme) has $900.00 spent so far. At this rate the day ends at $2,310.00 of $2,000.00, the limit ' +
        'reached at 17:40 UTC.',
    );
  });
});
