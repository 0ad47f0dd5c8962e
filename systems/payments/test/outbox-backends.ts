/**
 * The backends the outbox suites run on: PGlite in memory and the real PostgreSQL in a
 * schema of its own, dropped at close. Only the outbox's migrations are applied (`004_outbox`,
 * `011_outbox_lease_vocabulary`: they depend on no other migration), plus `accounts_demo`, a stand-in for the caller's business rows.
 * Also the test publishers: a recorder that tests await on, and controllable gates.
 */
import { applyMigrations, readMigrations } from "@casebook/infra/sql/migrations";
import type { Database } from "@casebook/infra/sql/sql";
import { uniqueName } from "@casebook/lab/test-engines";
import type { OutboxEvent } from "../src/store/outbox.ts";
import type { EventPublisher } from "../src/workers/outbox-relay.ts";
import {
  MAX_TEST_POOL,
  MIGRATIONS_DIR,
  openPostgresTestSchema,
  SYSTEM,
  sqlBackends,
  type TestSchema,
} from "./sql-backends.ts";

export { MAX_TEST_POOL, SYSTEM };
/** Bound on waiting for a background relay to publish what a test expects. */
export const WAIT_TIMEOUT_MS = 20_000;

export interface OutboxSubject {
  db: Database;
  /** An ordering key no other case uses, so cases share the tables without meeting. */
  key(label: string): string;
}

export async function migrateOutbox(db: Database): Promise<void> {
  const names = ["004_outbox", "011_outbox_lease_vocabulary"];
  const outbox = (await readMigrations(MIGRATIONS_DIR)).filter((m) => names.includes(m.name));
  if (outbox.length !== names.length)
    throw new Error(`the outbox migrations ${names.join(", ")} are missing`);
  await applyMigrations(db, outbox);
  await db.exec(
    "CREATE TABLE IF NOT EXISTS accounts_demo (id text PRIMARY KEY, version int8 NOT NULL DEFAULT 0)",
  );
}

export function openPostgresSchema(url: string, maxConnections = MAX_TEST_POOL): Promise<TestSchema> {
  return openPostgresTestSchema(url, { prefix: "outbox", prepare: migrateOutbox, maxConnections });
}

function subjectOf(db: Database): OutboxSubject {
  return { db, key: (label) => uniqueName(`acct_${label}`) };
}

export const outboxBackends = sqlBackends({ prefix: "outbox", prepare: migrateOutbox, subject: subjectOf });

/** Records every publication (duplicates included) and lets a test await a condition on them. */
export class Recorder implements EventPublisher {
  readonly events: OutboxEvent[] = [];
  #waiters: { check: () => boolean; resolve: () => void }[] = [];

  async publish(event: OutboxEvent): Promise<void> {
    this.events.push(event);
    this.#waiters = this.#waiters.filter((w) => {
      if (!w.check()) return true;
      w.resolve();
      return false;
    });
  }

  /** Resolves when `check()` holds after some publication; rejects after `timeoutMs`. */
  until(check: () => boolean, what: string, timeoutMs = WAIT_TIMEOUT_MS): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs);
      this.#waiters.push({
        check,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  /** Event ids published for `key`, in publication order. */
  idsOf(key: string): string[] {
    return this.events.filter((e) => e.orderingKey === key).map((e) => e.eventId);
  }

  /** Seqs published for `key`, first occurrences only (what a deduping consumer sees). */
  dedupedSeqsOf(key: string): bigint[] {
    const seen = new Set<string>();
    const seqs: bigint[] = [];
    for (const e of this.events) {
      if (e.orderingKey !== key || seen.has(e.eventId)) continue;
      seen.add(e.eventId);
      seqs.push(e.seq);
    }
    return seqs;
  }
}

/** A promise with its resolve function exposed: a latch a test opens. */
export function latch(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** 1n..n as bigints. */
export function seqs(n: number): bigint[] {
  return Array.from({ length: n }, (_, i) => BigInt(i + 1));
}
