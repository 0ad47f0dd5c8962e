/**
 * What the bank workload's clients saw, counted by outcome, plus the two kinds of evidence the
 * test must find empty: answers no correct service gives (a 400 to a valid request, a 5xx that
 * never stops, a deadlock) and replays that differ from the answer they replay (PY-13).
 * Both lists are bounded: past the bound only the count grows.
 *
 * @example
 * const tally = new Tally();
 * tally.add("payment.captured");
 * tally.unexpected("POST /v1/payments → 400 …");
 * tally.summary(); // "payment.captured=1 …"
 */

/** Evidence lines kept per list: enough to diagnose, bounded if everything goes wrong. */
const MAX_EVIDENCE = 50;

export class Tally {
  readonly counts = new Map<string, number>();
  readonly unexpectedLines: string[] = [];
  readonly replayMismatches: string[] = [];
  unexpectedCount = 0;

  add(name: string, by = 1): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + by);
  }

  get(name: string): number {
    return this.counts.get(name) ?? 0;
  }

  /** Sum of every counter whose name starts with `prefix`. */
  total(prefix: string): number {
    let sum = 0;
    for (const [name, count] of this.counts) if (name.startsWith(prefix)) sum += count;
    return sum;
  }

  unexpected(line: string): void {
    this.unexpectedCount += 1;
    if (this.unexpectedLines.length < MAX_EVIDENCE) this.unexpectedLines.push(line);
  }

  replayMismatch(line: string): void {
    if (this.replayMismatches.length < MAX_EVIDENCE) this.replayMismatches.push(line);
  }

  /** Counters sorted by name, one `name=count` each. */
  summary(): string {
    return [...this.counts.entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([name, count]) => `${name}=${count}`)
      .join(" ");
  }
}
