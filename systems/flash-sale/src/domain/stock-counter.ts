/**
 * FS-06: one port, four ways to take tickets from one sale's counter under the same load —
 * PostgreSQL's pessimistic row lock, its optimistic version check with retry, its conditional
 * `UPDATE … WHERE available >= n` (FS-07: the durable choice), and the Redis script (FS-05).
 * Each is correct; they differ in what a crowd on one row costs, which the bench measures
 * side by side and `retries` makes visible.
 *
 * @example
 * const r = await counter.take("s1", 1);
 * r.taken;   // false when sold out
 * r.retries; // optimistic only: conflicts before this attempt won or gave up
 */
export type CounterStrategy = "pessimistic" | "optimistic" | "conditional" | "redis-script";

export interface TakeResult {
  readonly taken: boolean;
  /** What the counter holds after this attempt (undefined when the strategy cannot tell). */
  readonly availableAfter: number | undefined;
  /** Version conflicts this attempt met and retried (optimistic); 0 for the others. */
  readonly retries: number;
  /** True when the optimistic attempt hit its retry bound: refused without knowing the stock. */
  readonly gaveUp: boolean;
}

export interface StockCounter {
  readonly strategy: CounterStrategy;
  take(saleId: string, quantity: number): Promise<TakeResult>;
}
