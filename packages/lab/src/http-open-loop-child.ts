/**
 * An open-loop HTTP load generator in a process of its own (PEERS.md: a generator sharing the
 * server's or the bench's event loop measures itself). It runs load-generator.ts's open loop
 * (same schedule, warm-up, late and dropped sends, latency from the intended send time) over GET
 * requests on keep-alive sockets through `LeanHttpClient` (requests formatted once, answers read
 * to their status: Node's http client cost ~10× wrk's CPU per request, which at 70% of a
 * server's wrk maximum took that server's CPU on 2 cores), without a promise, timer or
 * AbortController per request (issue 20: 80 → 55 µs of CPU per request at 2 000/s against nginx),
 * and speaks JSON lines over stdin/stdout:
 *
 *   ← {"ready": true}
 *   → {"cmd":"run", url, requests: [{path, headers}], okStatuses, first, stride, ratePerS, durationMs, warmupMs, connections?}
 *   ← {"asked", "count", "ok", "errors", "timeouts", "dropped", "late", "connectionsOpened", "sentPerS", "achievedRatePerS", "buckets"}
 *   → {"cmd":"close"}
 *
 * Request i of this child sends `requests[(first + i × stride) % n]`, so N children started with
 * first = 0..N-1 and stride N share the list without sending the same request in lockstep. An
 * answer whose status is not in `okStatuses` is an error. `buckets` is the latency histogram
 * (µs from the intended send time, [lowValue, count] pairs) for the parent to merge
 * (http-open-loop-processes.ts starts and drives these children).
 *
 * @example
 * const child = await spawnChild(httpOpenLoopChildEntry, { ready: /"ready"/ });
 * child.send(JSON.stringify({ cmd: "run", url, requests: [{ path: "/x" }], okStatuses: [302], first: 0, stride: 1, ratePerS: 1_000, durationMs: 5_000, warmupMs: 1_000 }));
 * const result = JSON.parse(await child.nextLine()) as HttpOpenLoopResult;
 */
import { createInterface } from "node:readline";
import { Histogram } from "@casebook/kit/histogram";
import { LeanHttpClient, leanGetRequest } from "./lean-http-client.ts";

export const httpOpenLoopChildEntry = new URL(import.meta.url);

/** One request of the list: a path and the headers it carries. */
export interface HttpLoadRequest {
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface HttpOpenLoopCommand {
  readonly cmd: "run";
  readonly url: string;
  readonly requests: readonly HttpLoadRequest[];
  /** Statuses that count as answered (e.g. [200, 206], or [302]). */
  readonly okStatuses: readonly number[];
  readonly first: number;
  readonly stride: number;
  readonly ratePerS: number;
  /** The whole run, warm-up included. */
  readonly durationMs: number;
  readonly warmupMs: number;
  /**
   * A fixed pool: this many connections opened before the first send and no more (a send that
   * finds none idle waits for one, its wait counted — latency is from the intended send time).
   * Undefined: none opened up front, and up to MAX_SOCKETS opened as sends find none idle.
   */
  readonly connections?: number;
}

export interface HttpOpenLoopResult {
  /** The rate this child was asked for. */
  readonly asked: number;
  /** Measured requests answered or failed (dropped ones excluded): the ones sent. */
  readonly count: number;
  readonly ok: number;
  /** Statuses not in okStatuses, socket errors and timeouts. */
  readonly errors: number;
  readonly timeouts: number;
  /** Due while MAX_IN_FLIGHT were in flight, so never sent. */
  readonly dropped: number;
  /** Sent more than 10 ms after their intended time (the generator fell behind). */
  readonly late: number;
  /** Connections the run opened, before its first send and during it. */
  readonly connectionsOpened: number;
  /** Measured sends per second of the measured schedule. */
  readonly sentPerS: number;
  readonly achievedRatePerS: number;
  /** Latencies from the intended send time, µs: [lowValue, count]. */
  readonly buckets: readonly (readonly [number, number])[];
}

const REQUEST_TIMEOUT_MS = 5_000;
const MAX_IN_FLIGHT = 2_000;
/** Connections per generator (requests beyond wait for one, their latency counted from their intended time). */
const MAX_SOCKETS = 256;

/** Requests unanswered past REQUEST_TIMEOUT_MS are failed by a sweep this often (no timer per request). */
const SWEEP_EVERY_MS = 100;
/** A send this far behind its intended time counts as late (the generator fell behind). */
const LATE_AFTER_MS = 10;

/**
 * The open loop of load-generator.ts's `runOpenLoop` (the same schedule, warm-up, drops, late
 * sends and latencies from the intended send time), written for one purpose: no promise, timer
 * or AbortController per request — a request is a callback on LeanHttpClient, timeouts are one
 * sweep — so the generator's CPU per request stays near wrk's and out of the measured server's
 * way on a small machine.
 */
export async function runHttpOpenLoop(command: HttpOpenLoopCommand): Promise<HttpOpenLoopResult> {
  const { ratePerS, durationMs, warmupMs } = command;
  if (!(ratePerS > 0 && Number.isFinite(ratePerS)))
    throw new RangeError(`ratePerS must be > 0, got ${ratePerS}`);
  if (!(durationMs > warmupMs && warmupMs >= 0))
    throw new RangeError(`durationMs (${durationMs}) must exceed warmupMs (${warmupMs}) >= 0`);
  const url = new URL(command.url);
  const pool = command.connections;
  if (pool !== undefined && !(Number.isInteger(pool) && pool >= 1 && pool <= MAX_SOCKETS))
    throw new RangeError(`connections must be an integer in 1..${MAX_SOCKETS}, got ${pool}`);
  const client = new LeanHttpClient({
    host: url.hostname,
    port: Number(url.port),
    maxSockets: pool ?? MAX_SOCKETS,
  });
  if (pool !== undefined) await client.preconnect(pool);
  // Host as Node's client sends it (host:port) unless the request names its own.
  const requests = command.requests.map((r) => {
    const named = Object.keys(r.headers ?? {}).some((name) => name.toLowerCase() === "host");
    return leanGetRequest(r.path, named ? r.headers : { host: url.host, ...r.headers });
  });
  const n = requests.length;
  const ok = new Set(command.okStatuses);
  const histogram = new Histogram({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    significantDigits: 3,
  });
  const intervalMs = 1_000 / ratePerS;
  const total = Math.max(1, Math.floor((durationMs * ratePerS) / 1_000));
  const timedOut = new Error("request passed its timeout");
  let answered = 0;
  let okCount = 0;
  let errors = 0;
  let timeouts = 0;
  let dropped = 0;
  let late = 0;
  let inFlight = 0;
  let lastCompletionMs = 0;
  let next = 0;
  const startMs = performance.now();
  const measureStartMs = startMs + warmupMs;
  const sweep = setInterval(
    () => client.expire(performance.now() - REQUEST_TIMEOUT_MS, timedOut),
    SWEEP_EVERY_MS,
  );
  try {
    await new Promise<void>((finished) => {
      const sendOne = (index: number, intendedMs: number, measured: boolean) => {
        inFlight++;
        client.request(requests[(command.first + index * command.stride) % n]!, (status, error) => {
          inFlight--;
          if (measured) {
            const nowMs = performance.now();
            histogram.record(Math.max(0, Math.round((nowMs - intendedMs) * 1_000)));
            answered++;
            if (status >= 0 && ok.has(status)) okCount++;
            else {
              errors++;
              if (error === timedOut) timeouts++;
            }
            if (nowMs > lastCompletionMs) lastCompletionMs = nowMs;
          }
          if (next >= total && inFlight === 0) finished();
        });
      };
      const tick = () => {
        const nowMs = performance.now();
        for (; next < total && startMs + next * intervalMs <= nowMs; next++) {
          const intendedMs = startMs + next * intervalMs;
          const measured = intendedMs >= measureStartMs;
          if (inFlight >= MAX_IN_FLIGHT) {
            if (measured) dropped++;
            continue;
          }
          if (measured && nowMs - intendedMs > LATE_AFTER_MS) late++;
          sendOne(next, intendedMs, measured);
        }
        if (next < total) setTimeout(tick, Math.max(0, startMs + next * intervalMs - performance.now()));
        else if (inFlight === 0) finished();
      };
      tick();
    });
  } finally {
    clearInterval(sweep);
    client.close();
  }
  if (lastCompletionMs === 0) lastCompletionMs = Math.max(performance.now(), measureStartMs);
  const measuredMs = Math.max(0, lastCompletionMs - measureStartMs);
  return {
    asked: ratePerS,
    count: answered,
    ok: okCount,
    errors,
    timeouts,
    dropped,
    late,
    connectionsOpened: client.opened,
    sentPerS: answered / ((durationMs - warmupMs) / 1_000),
    achievedRatePerS: measuredMs > 0 ? (answered * 1_000) / measuredMs : 0,
    buckets: [...histogram.buckets()].map((b) => [b.lowValue, b.count] as const),
  };
}

async function serve(): Promise<void> {
  const reply = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
  reply({ ready: true });
  for await (const line of createInterface({ input: process.stdin })) {
    const command = JSON.parse(line) as HttpOpenLoopCommand | { cmd: "close" };
    if (command.cmd === "close") break;
    reply(await runHttpOpenLoop(command));
  }
  process.exit(0);
}

if (import.meta.main) await serve();
