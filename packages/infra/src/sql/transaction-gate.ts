/**
 * One open transaction at a time on a single-connection database (PGlite, in this process or on
 * its own thread), and every other call held, unsent, until it ends: first come, first started.
 * A call held past `waitMs` is refused `SQL_TRANSACTION_NESTED` and never run — the one way a
 * call can wait that long on a healthy engine is to come from inside the open transaction, which
 * waits on that call: a deadlock, turned into an error that names it.
 *
 * This takes the place of tracking the transaction's async context with AsyncLocalStorage:
 * entering one per transaction turned Node's `process.nextTick` megamorphic for the whole
 * process (its tick-object literal went through the runtime on every call) — ~8% of
 * url-shortener's redirect throughput in perf (issue 18), paid by every request of every
 * service on an embedded store.
 *
 * @example
 * const gate = new TransactionGate({ waitMs: 30_000 });
 * const rows = await gate.call(() => engine.query("SELECT 1"));        // now, or once the open transaction ends
 * await gate.transaction(() => engine.transaction(async (tx) => …));   // holds every other call while it runs
 */
import { sqlErrors } from "./sql-errors.ts";

/** Default bound on a held call: longer than any transaction a store here runs, short of forever. */
export const DEFAULT_TRANSACTION_WAIT_MS = 30_000;

interface Held {
  start(): void;
  refuse(error: Error): void;
}

export class TransactionGate {
  readonly #waitMs: number;
  /** True from a transaction's start until it has ended (committed, rolled back or failed). */
  #open = false;
  readonly #held: Held[] = [];

  constructor(options: { waitMs?: number } = {}) {
    const waitMs = options.waitMs ?? DEFAULT_TRANSACTION_WAIT_MS;
    if (!Number.isInteger(waitMs) || waitMs < 1)
      throw new RangeError(`waitMs ${waitMs} must be an integer >= 1`);
    this.#waitMs = waitMs;
  }

  /** Calls held now. */
  get held(): number {
    return this.#held.length;
  }

  /** Starts `call` now when no transaction is open, else once the open one has ended. */
  call<T>(call: () => Promise<T>): Promise<T> {
    if (!this.#open) return call();
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => this.#expire(held), this.#waitMs);
      const held: Held = {
        start: () => {
          clearTimeout(timer);
          call().then(resolve, reject);
        },
        refuse: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      this.#held.push(held);
    });
  }

  /** Runs `body` as the one open transaction: every call made until it settles is held. */
  transaction<T>(body: () => Promise<T>): Promise<T> {
    return this.call(async () => {
      this.#open = true; // before the body's first await: a call made from here on is held
      try {
        return await body();
      } finally {
        this.#open = false;
        // Held calls start in order, up to the next transaction (which holds the rest again).
        while (!this.#open && this.#held.length > 0) this.#held.shift()!.start();
      }
    });
  }

  /** Refuses every held call with `error` (the engine closed or died under them). */
  refuseAll(error: () => Error): void {
    for (const held of this.#held.splice(0)) held.refuse(error());
  }

  #expire(held: Held): void {
    const at = this.#held.indexOf(held);
    if (at === -1) return;
    this.#held.splice(at, 1);
    const detail =
      `Waited ${this.#waitMs} ms for this database's open transaction to end: a call from inside that ` +
      "transaction waits on itself (use the `tx` handed to the callback), or the transaction runs too long.";
    held.refuse(sqlErrors.create("SQL_TRANSACTION_NESTED", { detail }));
  }
}
