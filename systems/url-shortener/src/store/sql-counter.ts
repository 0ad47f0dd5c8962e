/**
 * The shared counter on PostgreSQL (or PGlite): one row of `code_counters`
 * (migrations/001_codes.sql), advanced by ONE atomic add per block (US-05). The UPDATE takes
 * the row's lock, so concurrent adds queue and each returns a distinct end; a writer that dies
 * after its add loses its block, never shares it (US-11).
 *
 * @example
 * const counter = new SqlCounter(db);
 * await counter.reserve(1_000); // 1000: the block [0, 1000) is this writer's
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import type { CounterPort } from "../domain/counter-blocks.ts";

export const LINKS_COUNTER = "links";

export class SqlCounter implements CounterPort {
  readonly #db: Queryable;
  readonly #name: string;

  constructor(db: Queryable, name: string = LINKS_COUNTER) {
    this.#db = db;
    this.#name = name;
  }

  async reserve(count: number): Promise<number> {
    const { rows } = await this.#db.query<{ value: bigint }>(
      "UPDATE code_counters SET value = value + $2 WHERE name = $1 RETURNING value",
      [this.#name, count],
    );
    const row = rows[0];
    if (!row) throw new Error(`code counter ${this.#name} is missing: were the migrations run?`);
    return Number(row.value);
  }

  /** The counter's value now: every number below it has been handed out to some writer. */
  async current(): Promise<number> {
    const { rows } = await this.#db.query<{ value: bigint }>(
      "SELECT value FROM code_counters WHERE name = $1",
      [this.#name],
    );
    return Number(rows[0]?.value ?? 0n);
  }
}
