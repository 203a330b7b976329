import { expect } from 'chai';
import {
  addDecimal,
  compareDecimal,
  decimalFromNumber,
  formatDecimal,
  isPlainDecimal,
  mulDecimal,
  normalize,
  parseDecimal,
  pow10,
  shiftDecimal,
  subDecimal,
} from '../../pricing/decimal';
import {
  ExactSum,
  formatUsd,
  parseUsd,
  picoPerToken,
  rateFromPerMillion,
  rateFromUsd,
  roundScaled,
} from '../../pricing/money';

/** The message of what `fn` throws. */
function thrown(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return `${(err as Error).name}: ${(err as Error).message}`;
  }
  throw new Error('expected a throw');
}

describe('exact decimals and money', () => {
  describe('parsing', () => {
    it('reads plain and exponent forms exactly, with trailing zeros removed', () => {
      expect(parseDecimal('2.50')).to.deep.equal({ coef: 25n, scale: 1 });
      expect(parseDecimal('-0.003625')).to.deep.equal({ coef: -3625n, scale: 6 });
      expect(parseDecimal('3.625e-9')).to.deep.equal({ coef: 3625n, scale: 12 });
      expect(parseDecimal('1.5E+3')).to.deep.equal({ coef: 1500n, scale: 0 });
      expect(parseDecimal('12e2')).to.deep.equal({ coef: 1200n, scale: 0 });
      expect(parseDecimal('0.000')).to.deep.equal({ coef: 0n, scale: 0 });
      expect(parseDecimal('-0')).to.deep.equal({ coef: 0n, scale: 0 });
      expect(parseDecimal('1000')).to.deep.equal({ coef: 1000n, scale: 0 });
    });

    it('refuses anything but a whole decimal number, naming it', () => {
      for (const bad of [
        '',
        ' 1',
        '1 ',
        'x1',
        '1x',
        '1.',
        '.5',
        '+1',
        '1e',
        '1e+',
        '1.5.2',
        '0x10',
        '--1',
        '1e-5x',
        'a1.5e-6',
      ]) {
        expect(
          thrown(() => parseDecimal(bad)),
          bad,
        ).to.equal(`SyntaxError: not a decimal number: ${JSON.stringify(bad)}`);
      }
    });

    it('refuses exponents no JSON or YAML double can have', () => {
      expect(parseDecimal('1e400')).to.deep.equal({ coef: 10n ** 400n, scale: 0 });
      expect(parseDecimal('1e-400')).to.deep.equal({ coef: 1n, scale: 400 });
      expect(thrown(() => parseDecimal('1e401'))).to.equal('RangeError: exponent out of range: 1e401');
      expect(thrown(() => parseDecimal('1e-401'))).to.equal('RangeError: exponent out of range: 1e-401');
    });

    it('isPlainDecimal accepts only unsigned plain decimals', () => {
      for (const ok of ['0', '2.5', '10000', '0.000001']) expect(isPlainDecimal(ok), ok).to.equal(true);
      for (const bad of ['-1', '1e-6', '.5', '1.', ' 1', '1 ', 'x2.5', '2.5x', '2.x5', '', 'NaN'])
        expect(isPlainDecimal(bad), bad).to.equal(false);
    });

    it('pow10 builds powers of ten and refuses negative or fractional exponents', () => {
      expect(pow10(0)).to.equal(1n);
      expect(pow10(18)).to.equal(1_000_000_000_000_000_000n);
      expect(pow10(3)).to.equal(1000n);
      expect(thrown(() => pow10(-1))).to.equal('RangeError: pow10: bad exponent -1');
      expect(thrown(() => pow10(1.5))).to.equal('RangeError: pow10: bad exponent 1.5');
    });
  });

  describe('formatting and arithmetic', () => {
    it('formats without exponent or trailing zeros, in canonical form', () => {
      expect(formatDecimal({ coef: 25n, scale: 7 })).to.equal('0.0000025');
      expect(formatDecimal({ coef: -5n, scale: 1 })).to.equal('-0.5');
      expect(formatDecimal({ coef: 1200n, scale: 2 })).to.equal('12');
      expect(formatDecimal({ coef: -1200n, scale: 0 })).to.equal('-1200');
      expect(formatDecimal({ coef: 12345n, scale: 2 })).to.equal('123.45');
      expect(normalize({ coef: 0n, scale: 9 })).to.deep.equal({ coef: 0n, scale: 0 });
      expect(normalize({ coef: 100n, scale: 1 })).to.deep.equal({ coef: 10n, scale: 0 });
    });

    it('shifts by powers of ten both ways', () => {
      expect(shiftDecimal('2.5e-6', 6)).to.equal('2.5');
      expect(shiftDecimal('0.15', 2)).to.equal('15');
      expect(shiftDecimal('15', -2)).to.equal('0.15');
      expect(shiftDecimal('3', 4)).to.equal('30000');
      expect(shiftDecimal('-1.25', 3)).to.equal('-1250');
    });

    it('adds, subtracts, multiplies and compares at any scale', () => {
      expect(addDecimal('0.1', '0.2')).to.equal('0.3');
      expect(addDecimal('1', '-0.999')).to.equal('0.001');
      expect(subDecimal('1', '0.2')).to.equal('0.8');
      expect(subDecimal('0.2', '1')).to.equal('-0.8');
      expect(subDecimal('2.5', '2.5')).to.equal('0');
      expect(mulDecimal('0.15', '0.8')).to.equal('0.12');
      expect(mulDecimal('-1.5', '2')).to.equal('-3');
      expect(compareDecimal('2.5', '2.50')).to.equal(0);
      expect(compareDecimal('0.1', '0.09')).to.equal(1);
      expect(compareDecimal('0.09', '0.1')).to.equal(-1);
      expect(compareDecimal('-1', '0')).to.equal(-1);
      expect(compareDecimal('10', '9.999')).to.equal(1);
    });

    it('reads a double back as the literal it was written as', () => {
      expect(decimalFromNumber(1.5e-7)).to.equal('0.00000015');
      expect(decimalFromNumber(-2.5)).to.equal('-2.5');
      expect(thrown(() => decimalFromNumber(Number.POSITIVE_INFINITY))).to.equal(
        'RangeError: not a finite number: Infinity',
      );
    });
  });

  describe('money', () => {
    it('turns a price per 1M tokens into a pico-USD rate per token, keeping extra digits as a fraction', () => {
      expect(rateFromPerMillion('2.5')).to.deep.equal({ num: 2_500_000n, scale: 0 });
      expect(rateFromPerMillion('0.0000001')).to.deep.equal({ num: 1n, scale: 1 });
      expect(rateFromPerMillion('10')).to.deep.equal({ num: 10_000_000n, scale: 0 });
      expect(rateFromUsd('1.5e-13')).to.deep.equal({ num: 15n, scale: 2 });
      expect(thrown(() => rateFromPerMillion('-2'))).to.equal('RangeError: negative price: -2');
      expect(thrown(() => picoPerToken('0.0000005'))).to.equal(
        'RangeError: price 0.0000005 has more than 6 decimals: its rate is fractional pico-USD',
      );
    });

    it('rounds only at the end, half away from zero, both signs', () => {
      expect(roundScaled({ coef: 25n, scale: 1 })).to.equal(3n);
      expect(roundScaled({ coef: 24n, scale: 1 })).to.equal(2n);
      expect(roundScaled({ coef: -25n, scale: 1 })).to.equal(-3n);
      expect(roundScaled({ coef: -24n, scale: 1 })).to.equal(-2n);
      expect(roundScaled({ coef: 7n, scale: 0 })).to.equal(7n);
      expect(parseUsd('-0.0000000000015')).to.equal(-2n);
      expect(parseUsd(' 0.5 ')).to.equal(500_000_000_000n);
    });

    it('sums rates of different scales exactly, whichever comes first', () => {
      const whole = rateFromPerMillion('1'); // 1,000,000 pico a token
      const tenth = rateFromPerMillion('0.0000001'); // 0.1 pico a token
      const hundredth = rateFromUsd('1e-14'); // 0.01 pico a unit
      // 2 x 1,000,000 + 3 x 0.1 + 5 x 0.01 = 2,000,000.35
      expect(new ExactSum().add(2n, whole).add(3n, tenth).add(5n, hundredth).exact()).to.deep.equal({
        coef: 200_000_035n,
        scale: 2,
      });
      expect(new ExactSum().add(5n, hundredth).add(3n, tenth).add(2n, whole).exact()).to.deep.equal({
        coef: 200_000_035n,
        scale: 2,
      });
      expect(new ExactSum().add(3n, tenth).add(5n, hundredth).toPico()).to.equal(0n); // 0.35 rounds to 0
      expect(new ExactSum().add(7n, tenth).toPico()).to.equal(1n); // 0.7 rounds to 1
    });

    it('formats pico-USD with a fixed number of places, rounding half away from zero, negatives too', () => {
      expect(formatUsd(-123_500_000n, 6)).to.equal('-0.000124');
      expect(formatUsd(-1_000_000_000_000n, 0)).to.equal('-1');
      expect(formatUsd(2_500_000_000_000n, 0)).to.equal('3');
      expect(formatUsd(1_499_999_999_999n, 0)).to.equal('1');
      expect(formatUsd(5n, 12)).to.equal('0.000000000005');
      // zero, and what rounds to zero, has no sign
      expect(formatUsd(0n, 2)).to.equal('0.00');
      expect(formatUsd(-1n, 2)).to.equal('0.00');
      expect(formatUsd(0n, 0)).to.equal('0');
      expect(thrown(() => formatUsd(1n, -1))).to.equal('RangeError: bad decimals: -1');
      expect(thrown(() => formatUsd(1n, 1.5))).to.equal('RangeError: bad decimals: 1.5');
    });
  });
});
