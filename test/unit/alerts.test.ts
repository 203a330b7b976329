import { expect } from 'chai';
import { BurnRates, project } from '../../alerts/forecast';
import { slackEscape } from '../../alerts/slack-message';
import { retryAfterMs } from '../../alerts/post-json';
import { parseConfig } from '../../config/load';

const HOUR = 3_600_000;

describe('alerts', () => {
  describe('channel config', () => {
    const refusal = (channels: string) => {
      try {
        parseConfig(`alerts: { channels: ${channels} }`, {}, 'test config');
      } catch (err) {
        return (err as Error).message;
      }
      return 'accepted';
    };

    it('accepts a webhook with a secret and a Slack webhook', () => {
      expect(
        refusal(
          '[{ name: ops, type: webhook, url: "https://example.com/h", secret: "0123456789abcdef" }, { name: team, type: slack, url: "https://hooks.slack.com/services/T/B/x" }]',
        ),
      ).to.equal('accepted');
    });

    it('refuses a malformed channel with a message naming what is wrong and where', () => {
      expect(refusal('[{ name: ops, type: webhook, url: "https://example.com/h" }]')).to.match(
        /alerts\.channels\[0\]\.secret: a webhook needs a secret/,
      );
      expect(refusal('[{ name: ops, type: webhook, url: "https://example.com/h", secret: short }]')).to.include(
        'a webhook secret of at least 16 characters',
      );
      expect(refusal('[{ name: ops, type: email, url: "https://example.com/h" }]')).to.include(
        'a channel needs type: webhook (with url and secret) or type: slack (with url)',
      );
      expect(refusal('[{ name: team, type: slack, url: "hooks.slack.com/services/x" }]')).to.match(
        /alerts\.channels\[0\]\.url: expected an http\(s\) URL/,
      );
      expect(
        refusal(
          '[{ name: a, type: slack, url: "https://x.example/1" }, { name: a, type: slack, url: "https://x.example/2" }]',
        ),
      ).to.include('channel name a is used twice');
      expect(refusal('[{ name: a, type: slack, url: "https://x.example/1", secret: "0123456789abcdef" }]')).to.match(
        /alerts\.channels\[0\]: unknown key "secret"/,
      );
    });

    it('alert_at takes one share or a list (sorted, default 50/80/100%), action block or alert', () => {
      const budgets = (limits: string) =>
        parseConfig(`workspaces: [{ id: w, limits: { budgets: [${limits}] } }]`, {}, 'test config').workspaces[0].limits
          .budgets;
      expect(budgets('{ period: day, usd: 5 }')[0]).to.deep.include({ alert_at: [0.5, 0.8, 1], action: 'block' });
      expect(budgets('{ period: day, usd: 5, alert_at: [1, 0.25], action: alert }')[0]).to.deep.include({
        alert_at: [0.25, 1],
        action: 'alert',
      });
      expect(() => budgets('{ period: day, usd: 5, action: warn }')).to.throw(/action/);
    });
  });

  describe('forecast', () => {
    it('projects spend at the end of the period from the burn of the window, and when the limit is reached', () => {
      const now = 0;
      // $1 spent, $1 more in the last hour, 10 hours left: $11 by the end; the $6 limit is reached in 5 hours.
      const f = project(10n ** 12n, 10n ** 12n, HOUR, now, 10 * HOUR, 6n * 10n ** 12n);
      expect(f.projectedPico).to.equal(11n * 10n ** 12n);
      expect(f.limitReachedAt).to.equal(5 * HOUR);
      expect(project(0n, 10n ** 12n, HOUR, now, 2 * HOUR, 6n * 10n ** 12n).limitReachedAt, 'not this period').to.equal(
        null,
      );
    });

    it('measures the burn over the trailing window from samples, and only once watched long enough', () => {
      const burn = new BurnRates(HOUR, 10 * 60_000);
      const budget = { key: 'k', limitPico: 100n, periodEnd: 10 * HOUR };
      for (let t = 0; t <= 2 * HOUR; t += 60_000) burn.observe([{ key: 'k', spentPico: BigInt(t / 60_000) }], t);
      // One pico-USD a minute: 60 over the last hour, 120 spent, 8 hours left: 120 + 8 x 60.
      const f = burn.forecast({ ...budget, spentPico: 120n }, 2 * HOUR)!;
      expect(f.projectedPico).to.equal(600n);
      const young = new BurnRates(HOUR, 10 * 60_000);
      young.observe([{ key: 'k', spentPico: 0n }], 0);
      young.observe([{ key: 'k', spentPico: 5n }], 60_000);
      expect(young.forecast({ ...budget, spentPico: 5n }, 60_000)).to.equal(null);
      young.observe([], 120_000);
      expect(young.forecast({ ...budget, spentPico: 5n }, 20 * 60_000), 'forgotten once gone').to.equal(null);
    });
  });

  it('reads Retry-After in seconds or as a date, and escapes Slack control characters', () => {
    expect(retryAfterMs('30')).to.equal(30_000);
    expect(retryAfterMs(new Date(70_000).toUTCString(), 10_000)).to.equal(60_000);
    expect(retryAfterMs('soon')).to.equal(null);
    expect(slackEscape('<!channel> & co')).to.equal('&lt;!channel&gt; &amp; co');
  });
});
