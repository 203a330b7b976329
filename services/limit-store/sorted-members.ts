import { codePointCompare } from '../../plugin-kit/code-point-order';

/**
 * A set of strings kept in code-point order (the order of a Redis sorted set read by ZRANGEBYLEX), so that a page
 * from any member on costs a binary search and the page: listing per-tag budgets never sorts every tag value.
 */
export class SortedMembers {
  private readonly members: string[] = [];

  add(member: string): void {
    const at = this.firstAfter(member, true);
    if (this.members[at] !== member) this.members.splice(at, 0, member);
  }

  /** The members after `after` (all from the first when undefined), at most `limit`. */
  range(after: string | undefined, limit: number): string[] {
    const from = after === undefined ? 0 : this.firstAfter(after, false);
    return this.members.slice(from, from + limit);
  }

  /** The index of the first member >= value (inclusive) or > value. */
  private firstAfter(value: string, inclusive: boolean): number {
    let lo = 0;
    let hi = this.members.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const order = codePointCompare(this.members[mid], value);
      if (order < 0 || (!inclusive && order === 0)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
