/**
 * The alert evaluator's notification log, on the stream beside the samples (its own stream,
 * `METRICS_ALERT_LOG`): before a notification leaves, the evaluator appends what it decided —
 * tenant, group, rule, and each alert's AlertToSend with its `notifiedAtMs` — and waits for
 * the stream's ack (write-ahead). A restarted evaluator reads the log's last `windowMs` and
 * restores each alert's last notification (`AlertRuleState.restore`), so it repeats exactly
 * what its predecessor may or may not have got out — same Idempotency-Key, same body — instead
 * of deciding a new one from a replay that can see the data a little differently. The state
 * stays on the stream, as MT-08 asks: the evaluator never reads the TSDB.
 *
 * Bounded: the stream keeps `windowMs` (at least the resend interval, so a firing alert always
 * has a record in it), 50,000 records and 32 MiB, oldest dropped.
 *
 * @example
 * const log = new AlertLog(client, { windowMs: 960_000 });
 * await log.ensure();
 * await log.append({ tenant: "acme", group: "latency", ruleIndex: 0, alertname: "SlowApi", alerts });
 * const last = await log.readSince(Date.now() - 960_000); // oldest first
 */
import type { StreamClient } from "@casebook/infra/stream/stream";
import type { AlertToSend } from "../domain/alert-state.ts";

export const ALERT_LOG_STREAM = "METRICS_ALERT_LOG";
export const ALERT_LOG_SUBJECT = "metrics.alerts.notified";
/** Records the log keeps at most, and reads back at most. */
export const ALERT_LOG_MAX_RECORDS = 50_000;
/** Bytes the log keeps at most: small beside the samples' stream, which shares the server's store. */
export const ALERT_LOG_MAX_BYTES = 32 * 1024 * 1024;
const LOG_READER = "alert-log-reader";
const FETCH_BATCH = 1_000;

export interface LoggedNotification {
  readonly tenant: string;
  readonly group: string;
  readonly ruleIndex: number;
  readonly alertname: string;
  readonly alerts: readonly AlertToSend[];
}

/** JSON with the float value as text: NaN and ±Inf survive (JSON has no spelling for them). */
export function encodeLogged(record: LoggedNotification): string {
  return JSON.stringify({ ...record, alerts: record.alerts.map((a) => ({ ...a, value: String(a.value) })) });
}

export function decodeLogged(text: string): LoggedNotification {
  const raw = JSON.parse(text) as LoggedNotification & { alerts: Array<AlertToSend & { value: string }> };
  return { ...raw, alerts: raw.alerts.map((a) => ({ ...a, value: Number(a.value) })) };
}

export class AlertLog {
  readonly #client: StreamClient;
  readonly #windowMs: number;
  readonly #storage: "file" | "memory";

  constructor(client: StreamClient, options: { windowMs: number; storage?: "file" | "memory" }) {
    this.#client = client;
    this.#windowMs = options.windowMs;
    this.#storage = options.storage ?? "file";
  }

  async ensure(): Promise<void> {
    await this.#client.ensureStream({
      name: ALERT_LOG_STREAM,
      subjects: [ALERT_LOG_SUBJECT],
      storage: this.#storage,
      maxMessages: ALERT_LOG_MAX_RECORDS,
      maxBytes: ALERT_LOG_MAX_BYTES,
      maxAgeMs: this.#windowMs,
      maxMessageBytes: 960 * 1024,
      duplicateWindowMs: Math.min(120_000, this.#windowMs),
      discard: "old",
    });
  }

  /** Resolves once the stream acknowledged the record. */
  async append(record: LoggedNotification): Promise<void> {
    await this.#client.publish(ALERT_LOG_SUBJECT, encodeLogged(record));
  }

  /** The records stamped from `sinceMs` on, oldest first (a fresh replay consumer each time). */
  async readSince(sinceMs: number): Promise<LoggedNotification[]> {
    await this.#client.deleteConsumer(ALERT_LOG_STREAM, LOG_READER);
    await this.#client.ensureConsumer(ALERT_LOG_STREAM, {
      name: LOG_READER,
      deliver: { from: "time", timeMs: Math.max(1, sinceMs) },
      ackPolicy: "none",
      ackWaitMs: 30_000,
      maxDeliver: 1,
      maxAckPending: FETCH_BATCH,
    });
    const records: LoggedNotification[] = [];
    try {
      while (records.length < ALERT_LOG_MAX_RECORDS) {
        const batch = await this.#client.fetch(ALERT_LOG_STREAM, LOG_READER, {
          maxMessages: FETCH_BATCH,
          expiresMs: 100,
        });
        for (const message of batch) records.push(decodeLogged(message.text()));
        if (
          batch.length < FETCH_BATCH &&
          (await this.#client.consumerState(ALERT_LOG_STREAM, LOG_READER)).pending === 0
        )
          break;
      }
    } finally {
      await this.#client.deleteConsumer(ALERT_LOG_STREAM, LOG_READER);
    }
    return records;
  }
}
