/** Each provider's money unit converted once: the same charge in OpenAI dollars and Anthropic cents is one amount. */
import { expect } from 'chai';
import { BadAmountError, picoFrom, requireUsd } from '../../reconcile/units';

describe('reconciliation: dollars against cents', () => {
  it('reads OpenAI dollars (JSON numbers) and Anthropic cents (decimal strings) as the same pico-USD', () => {
    expect(picoFrom(0.06, 'usd')).to.equal(60_000_000_000n);
    expect(picoFrom('6', 'cents')).to.equal(60_000_000_000n);
    expect(picoFrom('6.000', 'cents')).to.equal(picoFrom(0.06, 'usd'));
    expect(picoFrom('123.78912', 'cents')).to.equal(1_237_891_200_000n);
    expect(picoFrom(2.5e-7, 'usd')).to.equal(250_000n);
  });

  it('keeps a credit negative and refuses what is no amount', () => {
    expect(picoFrom('-150', 'cents')).to.equal(-1_500_000_000_000n);
    for (const bad of [null, undefined, 'abc', '1e3', Number.NaN, '', { value: 1 }])
      expect(() => picoFrom(bad, 'usd')).to.throw(BadAmountError);
  });

  it('refuses a currency other than US dollars instead of summing it as dollars', () => {
    expect(() => requireUsd('usd')).to.not.throw();
    expect(() => requireUsd('USD')).to.not.throw();
    expect(() => requireUsd('eur')).to.throw('currency "eur" is not USD');
  });
});
