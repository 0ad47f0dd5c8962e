/**
 * The columns an outbox's tables must have, as DDL: what the systems' own checksummed `.sql`
 * migrations write out explicitly (payments `004_outbox` + `011_outbox_lease_vocabulary`,
 * webhooks `003_events` + `007_outbox_lease_vocabulary`), and what the contract suite creates.
 * The systems do not call these: a migration is a file a reviewer reads, not generated text.
 *
 * @example
 * await db.exec(orderedOutboxDdl({ streams: "outbox_streams", events: "outbox_events" }));
 * await db.exec(unorderedOutboxDdl({ table: "outbox", columns: "tenant_id text NOT NULL" }));
 */
import { checkIdentifier, quoteIdentifier } from "./sql-schema.ts";

/** Both tables of an `OrderedOutbox`: one stream row per key (the leased item), its events. */
export function orderedOutboxDdl(names: { streams?: string; events?: string } = {}): string {
  const streams = checkIdentifier(names.streams ?? "outbox_streams");
  const s = quoteIdentifier(streams);
  const e = quoteIdentifier(checkIdentifier(names.events ?? "outbox_events"));
  return `
CREATE TABLE ${s} (
  ordering_key     text        PRIMARY KEY CHECK (char_length(ordering_key) BETWEEN 1 AND 255),
  last_seq         int8        NOT NULL CHECK (last_seq >= 1),
  published_seq    int8        NOT NULL DEFAULT 0 CHECK (published_seq BETWEEN 0 AND last_seq),
  lease_owner      text,
  lease_expires_at timestamptz,
  lease_version    int8        NOT NULL DEFAULT 0,
  attempts         int4        NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  next_attempt_at  timestamptz NOT NULL,
  last_error       text,
  parked_at        timestamptz,
  CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL))
);
CREATE INDEX ${quoteIdentifier(`${streams}_due`)} ON ${s} (next_attempt_at)
  WHERE published_seq < last_seq AND parked_at IS NULL;
CREATE TABLE ${e} (
  ordering_key text        NOT NULL REFERENCES ${s} (ordering_key),
  seq          int8        NOT NULL CHECK (seq >= 1),
  event_id     text        NOT NULL UNIQUE CHECK (char_length(event_id) BETWEEN 1 AND 255),
  type         text        NOT NULL CHECK (char_length(type) BETWEEN 1 AND 100),
  payload      jsonb       NOT NULL,
  created_at   timestamptz NOT NULL,
  published_at timestamptz,
  PRIMARY KEY (ordering_key, seq)
);`;
}

/** The table of an `UnorderedOutbox`; `columns` is the caller's extra column DDL (constant text). */
export function unorderedOutboxDdl(options: { table?: string; columns?: string } = {}): string {
  const table = checkIdentifier(options.table ?? "outbox");
  const t = quoteIdentifier(table);
  const extra = options.columns === undefined ? "" : `${options.columns},\n  `;
  return `
CREATE TABLE ${t} (
  id               int8        GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id         text        NOT NULL UNIQUE CHECK (char_length(event_id) BETWEEN 1 AND 255),
  ${extra}created_at       timestamptz NOT NULL,
  next_attempt_at  timestamptz NOT NULL,
  lease_owner      text,
  lease_expires_at timestamptz,
  lease_version    int8        NOT NULL DEFAULT 0,
  publish_count    int4        NOT NULL DEFAULT 0 CHECK (publish_count >= 0),
  attempts         int4        NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  last_error       text        CHECK (last_error IS NULL OR char_length(last_error) <= 1000),
  published_at     timestamptz,
  parked_at        timestamptz,
  CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL))
);
CREATE INDEX ${quoteIdentifier(`${table}_due`)} ON ${t} (next_attempt_at, id)
  WHERE published_at IS NULL AND parked_at IS NULL;`;
}
