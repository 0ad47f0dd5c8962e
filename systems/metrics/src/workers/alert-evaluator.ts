/**
 * The alert evaluator (MT-07's third consumer, MT-08): it reads the sample stream — never the
 * TSDB — into a window of its own per tenant (an in-memory head block holding the last
 * `windowMs`), and evaluates the rule groups on that window every group interval at the
 * clock's now: pending → firing → resolved (`domain/alert-state.ts`), notifications in
 * Alertmanager's webhook shape, each alert labelled with its `tenant`. A slow or stopped hot
 * writer, or dashboards saturating the query path, do not touch it.
 *
 * A window holds only the series some rule can read: one that no rule's selector matches
 * (`vectorSelectorsOf`, a missing label read as empty, as the head's select does) is stepped
 * over when the message is decoded — the built-in cardinality rule alone reads one metric, so
 * by default the evaluator keeps almost nothing of the samples it reads.
 *
 * A (re)started evaluator keeps no state on disk: it recreates its consumer to replay the
 * stream from `now − replayMs` (a bounded window: enough for `rate(…[5m])` and the longest
 * `for:`), and before its first live evaluation re-evaluates the rules quietly at past
 * interval steps over that replay, which rebuilds each alert's `activeAt` — so an alert whose
 * condition held for longer than its `for:` fires at once instead of waiting `for:` again.
 *
 * With a notification log (`store/alert-log.ts`, on the stream too) every notification is
 * appended and acknowledged before it is handed to `notify` (write-ahead), and a restart then
 * restores each alert's last logged notification over the replay: a firing alert is repeated
 * at once with the same `notifiedAtMs`, startsAt and content — the same Idempotency-Key and
 * body at the webhooks system, which delivers it once. A notification whose log write fails is
 * sent anyway (an alert matters more than a duplicate), and the failure reported.
 *
 * @example
 * const evaluator = await startAlertEvaluator({ client, groups, clock, replayMs: 900_000, log, notify, onError });
 * await evaluator.stop();
 */
import type { StreamClient } from "@casebook/infra/stream/stream";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { Clock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import type { AlertNotification } from "../domain/alert-notification.ts";
import type { RuleGroup } from "../domain/alert-rules.ts";
import { AlertRuleState } from "../domain/alert-state.ts";
import { alertmanagerPayload } from "../domain/alertmanager-payload.ts";
import { HeadBlock } from "../domain/head-block.ts";
import { matchesSeries } from "../domain/label-matcher.ts";
import { type Labels, seriesKey } from "../domain/labels.ts";
import { vectorSelectorsOf } from "../domain/promql-ast.ts";
import { PromqlEngine } from "../domain/promql-engine.ts";
import type { InstantVector } from "../domain/promql-values.ts";
import { DEFAULT_INTERNED_SERIES, SeriesInterner } from "../domain/series-interner.ts";
import { decodeStreamColumns } from "../domain/stream-batch.ts";
import type { AlertLog, LoggedNotification } from "../store/alert-log.ts";
import { SAMPLE_STREAM } from "../store/sample-stream.ts";

export const ALERT_EVALUATOR_CONSUMER = "alert-evaluator";
/** The window's heads cut chunks (and drop them) at minute boundaries. */
const WINDOW_BLOCK_MS = 60_000;

export interface AlertEvaluatorOptions {
  readonly client: StreamClient;
  readonly groups: readonly RuleGroup[];
  readonly clock: Clock;
  /** How far back a (re)start replays the stream; also the window kept (at least lookback + longest range). */
  readonly replayMs: number;
  /** The notification log: written ahead of every notification, read back at a restart. */
  readonly log?: AlertLog;
  readonly notify: (notification: AlertNotification) => void;
  readonly receiver?: string;
  readonly externalUrl?: string;
  /** Series one tenant's window may hold (its cardinality bound). Default 1,000,000. */
  readonly maxSeriesPerTenant?: number;
  /** Re-send a firing alert this often. Default 60 s. */
  readonly resendMs?: number;
  readonly consumerName?: string;
  /** After each live evaluation of a group: how many rule evaluations (rules × tenants' windows) it ran. */
  readonly onEvaluated?: (event: { group: string; ruleEvaluations: number }) => void;
  readonly onError: (error: unknown) => void;
}

/** A series as the evaluator interns it: whether a rule's selector reads it is decided once. */
interface EvaluatorSeries {
  readonly labels: Labels;
  readonly key: string;
  readonly read: boolean;
}

interface TenantWindow {
  readonly head: HeadBlock;
  readonly engine: PromqlEngine;
  /** Per group, per rule. */
  readonly states: AlertRuleState[][];
}

export interface AlertEvaluator {
  /** Every tenant's alerts and their state, for tests and a /alerts view. */
  alerts(): Array<{
    tenant: string;
    alertname: string;
    state: string;
    labels: Readonly<Record<string, string>>;
  }>;
  /** Messages read from the stream so far. */
  readonly messagesRead: number;
  /** Series the windows hold: only those a rule's selector matches (every tenant). */
  readonly seriesHeld: number;
  stop(): Promise<void>;
}

export async function startAlertEvaluator(options: AlertEvaluatorOptions): Promise<AlertEvaluator> {
  const { client, clock } = options;
  const consumer = options.consumerName ?? ALERT_EVALUATOR_CONSUMER;
  const windows = new Map<string, TenantWindow>();
  let messagesRead = 0;
  // A rule reads series through its selectors only: the window keeps what one of them matches.
  const selectors = options.groups.flatMap((g) => g.rules.flatMap((rule) => vectorSelectorsOf(rule.ast)));
  const readByRules = (labels: Labels): boolean => selectors.some((s) => matchesSeries(s.matchers, labels));
  // Each label set met once: its key, and whether a rule reads it, decided then.
  const interner = new SeriesInterner<EvaluatorSeries>({ maxEntries: DEFAULT_INTERNED_SERIES });
  const entryOf = (labels: Labels): EvaluatorSeries => ({
    labels,
    key: seriesKey(labels),
    read: readByRules(labels),
  });

  const windowOf = (tenant: string): TenantWindow => {
    let window = windows.get(tenant);
    if (window === undefined) {
      const max = options.maxSeriesPerTenant ?? 1_000_000;
      const head = new HeadBlock({
        blockRangeMs: WINDOW_BLOCK_MS,
        limits: { maxSeries: max, maxSeriesPerMetric: max },
      });
      window = {
        head,
        engine: new PromqlEngine({ select: (matchers, mint, maxt) => head.select(matchers, mint, maxt) }),
        states: options.groups.map((g) =>
          g.rules.map((rule) => new AlertRuleState(rule, { resendMs: options.resendMs ?? 60_000 })),
        ),
      };
      windows.set(tenant, window);
    }
    return window;
  };

  const apply = (data: Uint8Array): void => {
    messagesRead++;
    const { tenant, batch } = decodeStreamColumns(data, { interner, entryOf, keep: (entry) => entry.read });
    const { head } = windowOf(tenant);
    // Replayed or overlapping samples are already there, and those before the window are not
    // kept: skip them; a refused batch only costs this window.
    const plan = head.planColumns(batch, { onLimit: "skip", stored: "skip", tooOld: "skip" });
    if (plan.ok) head.commit(plan);
  };

  const trim = (nowMs: number): void => {
    const boundary = Math.floor((nowMs - options.replayMs) / WINDOW_BLOCK_MS) * WINDOW_BLOCK_MS;
    for (const { head } of windows.values()) if (boundary > head.minValidT) head.truncateBefore(boundary);
  };

  const evaluateGroup = (groupIndex: number, nowMs: number, quiet: boolean): AlertNotification[] => {
    const group = options.groups[groupIndex]!;
    const out: AlertNotification[] = [];
    for (const [tenant, window] of windows) {
      for (const [ruleIndex, state] of window.states[groupIndex]!.entries()) {
        let vector: InstantVector;
        try {
          const value = window.engine.instant(state.rule.ast, nowMs);
          vector =
            value.type === "vector"
              ? value.samples
              : value.type === "scalar"
                ? [{ labels: [], v: value.v }]
                : [];
        } catch (error) {
          options.onError(error);
          continue;
        }
        const withTenant = vector.map((s) => ({ ...s, labels: [...s.labels, ["tenant", tenant] as const] }));
        const toSend = state.evaluate(withTenant, nowMs, { quiet });
        if (toSend.length === 0) continue;
        out.push({
          tenant,
          group: group.name,
          ruleIndex,
          alertname: state.rule.alert,
          alerts: toSend,
          payload: alertmanagerPayload({
            receiver: options.receiver ?? "casebook-metrics",
            alertname: state.rule.alert,
            alerts: toSend,
            externalUrl: options.externalUrl ?? "",
            generatorUrl: `${options.externalUrl ?? ""}/graph?g0.expr=${encodeURIComponent(state.rule.expr)}&group=${encodeURIComponent(group.name)}`,
          }),
        });
      }
    }
    return out;
  };

  // Write-ahead: logged (acknowledged) before it leaves, so a restart repeats it rather than deciding anew.
  const send = async (notifications: readonly AlertNotification[]): Promise<void> => {
    for (const notification of notifications) {
      if (options.log !== undefined) {
        const { tenant, group, ruleIndex, alertname, alerts } = notification;
        await options.log.append({ tenant, group, ruleIndex, alertname, alerts }).catch(options.onError);
      }
      options.notify(notification);
    }
  };

  /** The last logged notification of each alert, put back over the replayed state. */
  const restore = (records: readonly LoggedNotification[]): void => {
    const last = new Map<
      string,
      { record: LoggedNotification; alert: LoggedNotification["alerts"][number] }
    >();
    for (const record of records) {
      for (const alert of record.alerts) {
        last.set(JSON.stringify([record.tenant, record.group, record.ruleIndex, alert.fingerprint]), {
          record,
          alert,
        });
      }
    }
    for (const { record, alert } of last.values()) {
      const g = options.groups.findIndex((group) => group.name === record.group);
      const state = g < 0 ? undefined : windowOf(record.tenant).states[g]![record.ruleIndex];
      if (state !== undefined && state.rule.alert === record.alertname) state.restore(alert);
    }
  };

  // 1. Replay a bounded window: a fresh consumer from now − replayMs, no acks (state is rebuilt, not resumed).
  const startMs = clock.nowMs();
  await client.deleteConsumer(SAMPLE_STREAM, consumer);
  await client.ensureConsumer(SAMPLE_STREAM, {
    name: consumer,
    deliver: { from: "time", timeMs: Math.max(1, startMs - options.replayMs) },
    ackPolicy: "none",
    ackWaitMs: 30_000,
    maxDeliver: 1,
    maxAckPending: 10_000,
  });
  for (;;) {
    const batch = await client.fetch(SAMPLE_STREAM, consumer, { maxMessages: 1_000, expiresMs: 100 });
    for (const message of batch) {
      try {
        apply(message.data);
      } catch (error) {
        options.onError(error);
      }
    }
    if (batch.length < 1_000 && (await client.consumerState(SAMPLE_STREAM, consumer)).pending === 0) break;
  }
  // 2. Rebuild pending/firing state: quiet evaluations at past steps of each group's interval.
  const nowMs = clock.nowMs();
  const nextDue = options.groups.map(() => nowMs);
  options.groups.forEach((group, g) => {
    const span = Math.min(
      options.replayMs,
      Math.max(0, ...group.rules.map((r) => r.forMs)) + group.intervalMs,
    );
    for (
      let t = nowMs - Math.floor(span / group.intervalMs) * group.intervalMs;
      t < nowMs;
      t += group.intervalMs
    ) {
      evaluateGroup(g, t, true);
    }
  });
  // 3. What the previous evaluator notified last, alert by alert (its log covers the replay and a resend).
  if (options.log !== undefined) {
    await options.log.ensure();
    restore(await options.log.readSince(nowMs - options.replayMs - (options.resendMs ?? 60_000)));
  }

  // 4. Live: one loop reads the stream, another evaluates the groups when due.
  const reader = new BackgroundLoop({
    name: "alert evaluator stream reader",
    round: async () => {
      const batch = await client.fetch(SAMPLE_STREAM, consumer, { maxMessages: 1_000, expiresMs: 500 });
      for (const message of batch) {
        try {
          apply(message.data);
        } catch (error) {
          options.onError(error);
        }
      }
      return batch.length === 1_000;
    },
    idleMs: 10,
    failureBackoff: { capMs: 5_000, jitter: "equal", random: systemRandom },
    onError: (error) => options.onError(error),
  });
  const minInterval = Math.min(...options.groups.map((g) => g.intervalMs), 60_000);
  const evaluator = new BackgroundLoop({
    name: "alert evaluator rules",
    round: async () => {
      const now = clock.nowMs();
      for (const [g, group] of options.groups.entries()) {
        if (now < nextDue[g]!) continue;
        const notifications = evaluateGroup(g, now, false);
        nextDue[g] = now + group.intervalMs;
        options.onEvaluated?.({ group: group.name, ruleEvaluations: group.rules.length * windows.size });
        await send(notifications);
      }
      trim(now);
      return false;
    },
    idleMs: Math.max(10, Math.floor(minInterval / 4)),
    failureBackoff: { capMs: 5_000, jitter: "equal", random: systemRandom },
    onError: (error) => options.onError(error),
  });
  reader.start();
  evaluator.start();
  return {
    alerts: () =>
      [...windows].flatMap(([tenant, window]) =>
        window.states.flat().flatMap((state) =>
          state.alerts.map((a) => ({
            tenant,
            alertname: state.rule.alert,
            state: a.state,
            labels: a.labels,
          })),
        ),
      ),
    get messagesRead() {
      return messagesRead;
    },
    get seriesHeld() {
      let n = 0;
      for (const { head } of windows.values()) n += head.seriesCount;
      return n;
    },
    stop: async () => {
      await Promise.allSettled([reader.stop(), evaluator.stop()]);
    },
  };
}
