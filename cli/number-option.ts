import { InvalidArgumentError } from 'commander';

/**
 * A commander argument parser for a whole number in [min, max]: "-5", "1e9", "3.5" or "abc" are refused with
 * the option named, before anything runs.
 */
export function wholeNumber(min: number, max: number): (value: string) => number {
  return (value: string) => {
    const n = /^-?\d+$/.test(value.trim()) ? Number(value) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(
        `expected a whole number from ${min.toLocaleString('en-US')} to ${max.toLocaleString('en-US')}.`,
      );
    }
    return n;
  };
}
