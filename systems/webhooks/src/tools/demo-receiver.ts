/**
 * A tiny webhook receiver for demos and end-to-end tests: what a tenant's endpoint should
 * do (WH-13, WH-14). For each POST it reads the raw body (bounded), verifies the Standard
 * Webhooks signature and timestamp against the secrets it was given (several during a
 * rotation), drops a `webhook-id` it already accepted inside the tolerance window (replay
 * protection, and the dedupe an at-least-once sender requires), and logs one JSON line.
 *
 *   204  verified, first time            200  verified, already seen (a duplicate: done already)
 *   401  signature or timestamp invalid  413  body above the bound      405  not a POST
 *
 * It is the customer's side, not the service: it logs the event's type and a short excerpt
 * of its data, which the service itself never logs (WH-22).
 *
 * @example
 * // WEBHOOK_SECRETS=whsec_… npx casebook webhooks demo-receiver   (listens on 127.0.0.1:9113)
 * const receiver = await startDemoReceiver({ secrets: [secret], port: 0 });
 * const hook = await receiver.waitFor((w) => w.id === eventId, 5_000);
 * await receiver.close();
 */
import { EventEmitter, once } from "node:events";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { createLogger } from "@casebook/infra/http/logger";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { field, loadConfig } from "@casebook/kit/config";
import { ReplayGuard } from "../domain/replay-guard.ts";
import { DEFAULT_TOLERANCE_S, verifyWebhook } from "../domain/signature.ts";
import { deliveryErrors } from "../errors.ts";

export const DEMO_RECEIVER_PORT = 9113;
/** Bytes of body accepted; the service's payload bound is 256 KiB by default, plus the envelope. */
export const MAX_DEMO_BODY_BYTES = 1_048_576;
/** Webhooks kept in `received` (the oldest go first). */
export const MAX_DEMO_REMEMBERED = 1_000;
/** Webhook ids remembered for replay protection (each for twice the tolerance window). */
export const MAX_REPLAY_IDS = 100_000;
/** Characters of the event's data shown in a log line. */
const LOG_EXCERPT_CHARS = 200;

export interface ReceivedWebhook {
  id: string;
  timestampS: number;
  type: string | undefined;
  body: string;
  headers: IncomingHttpHeaders;
  /** True when an earlier request with this id was accepted inside the window. */
  duplicate: boolean;
}

export interface DemoReceiverOptions {
  /** Secrets to verify with (`whsec_…`), any of which may match. */
  secrets: readonly string[];
  port?: number;
  host?: string;
  toleranceS?: number;
  maxBodyBytes?: number;
  maxRemembered?: number;
  clock?: Clock;
  /** Answers a verified webhook after this long: an endpoint doing its own work (default 0). */
  delayMs?: number;
  /** One line per request; default JSON on stdout. */
  log?: (line: Record<string, unknown>) => void;
}

export interface DemoReceiver {
  readonly url: string;
  /** Verified webhooks, oldest first, at most maxRemembered. */
  readonly received: readonly ReceivedWebhook[];
  /** Rejected requests so far (bad signature, too large, wrong method). */
  readonly rejected: number;
  /** Resolves with the first webhook (already received or arriving) matching `predicate`. */
  waitFor(predicate: (w: ReceivedWebhook) => boolean, timeoutMs: number): Promise<ReceivedWebhook>;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const collect = (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= maxBytes) {
        chunks.push(chunk);
        return;
      }
      // Over the bound: keep nothing more, let the rest drain (the server's request timeout
      // bounds a sender that never stops), and answer 413 now.
      req.off("data", collect);
      req.resume();
      resolve(undefined);
    };
    req.on("data", collect);
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function envelope(body: Buffer): { type: string | undefined; excerpt: string } {
  try {
    const parsed = JSON.parse(body.toString("utf8")) as { type?: unknown; data?: unknown };
    const type = typeof parsed.type === "string" ? parsed.type : undefined;
    return { type, excerpt: JSON.stringify(parsed.data ?? null).slice(0, LOG_EXCERPT_CHARS) };
  } catch {
    return { type: undefined, excerpt: "" };
  }
}

function answer(res: ServerResponse, status: number, body?: object): void {
  if (body === undefined) res.writeHead(status).end();
  else res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

/** What one request's handling reads and updates. */
interface ReceiverState {
  secrets: readonly string[];
  clock: Clock;
  toleranceS: number;
  maxBodyBytes: number;
  maxRemembered: number;
  guard: ReplayGuard;
  received: ReceivedWebhook[];
  arrivals: EventEmitter;
  log: (line: Record<string, unknown>) => void;
  rejected: number;
  delayMs: number;
}

/** Verifies, dedupes, records and answers one request (see the status table above). */
async function handleWebhook(state: ReceiverState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== "POST") {
    state.rejected += 1;
    return answer(res, 405, { error: "POST only" });
  }
  const body = await readBody(req, state.maxBodyBytes);
  if (body === undefined) {
    state.rejected += 1;
    return answer(res, 413, { error: `body above ${state.maxBodyBytes} bytes` });
  }
  const nowS = Math.floor(state.clock.nowMs() / 1_000);
  let verified: { id: string; timestampS: number };
  try {
    const { secrets, toleranceS } = state;
    verified = verifyWebhook({ headers: req.headers, body, secrets, nowS, toleranceS });
  } catch (error) {
    state.rejected += 1;
    const reason = deliveryErrors.is(error) ? error.fields.reason : "unverifiable";
    state.log({ msg: "webhook rejected", reason, id: req.headers["webhook-id"] });
    return answer(res, 401, { error: "signature invalid", reason });
  }
  let duplicate = false;
  try {
    state.guard.accept(verified.id, nowS);
  } catch (error) {
    if (!deliveryErrors.is(error, "WEBHOOK_REPLAY_DETECTED")) throw error;
    duplicate = true;
  }
  const { type, excerpt } = envelope(body);
  const hook = { ...verified, type, body: body.toString("utf8"), headers: req.headers, duplicate };
  state.received.push(hook);
  if (state.received.length > state.maxRemembered) state.received.shift();
  state.log({ msg: "webhook received", id: hook.id, type, duplicate, bytes: body.length, data: excerpt });
  state.arrivals.emit("webhook", hook);
  if (state.delayMs > 0) await sleep(state.delayMs);
  return duplicate ? answer(res, 200, { duplicate: true }) : answer(res, 204);
}

/** The first webhook matching `predicate`, already received or arriving within `timeoutMs`. */
function waitForWebhook(
  state: ReceiverState,
  predicate: (w: ReceivedWebhook) => boolean,
  timeoutMs: number,
): Promise<ReceivedWebhook> {
  const seen = state.received.find(predicate);
  if (seen) return Promise.resolve(seen);
  return new Promise((resolve, reject) => {
    const onWebhook = (hook: ReceivedWebhook) => {
      if (!predicate(hook)) return;
      clearTimeout(timer);
      state.arrivals.off("webhook", onWebhook);
      resolve(hook);
    };
    const timer = setTimeout(() => {
      state.arrivals.off("webhook", onWebhook);
      reject(new Error(`no matching webhook within ${timeoutMs} ms (${state.received.length} received)`));
    }, timeoutMs);
    state.arrivals.on("webhook", onWebhook);
  });
}

/**
 * Starts the receiver (default 127.0.0.1:9113; port 0 picks a free one).
 *
 * @example
 * const r = await startDemoReceiver({ secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], port: 0 });
 */
export async function startDemoReceiver(options: DemoReceiverOptions): Promise<DemoReceiver> {
  if (options.secrets.length === 0) throw new RangeError("the demo receiver needs at least one secret");
  const toleranceS = options.toleranceS ?? DEFAULT_TOLERANCE_S;
  const state: ReceiverState = {
    secrets: options.secrets,
    clock: options.clock ?? systemClock,
    toleranceS,
    maxBodyBytes: options.maxBodyBytes ?? MAX_DEMO_BODY_BYTES,
    maxRemembered: options.maxRemembered ?? MAX_DEMO_REMEMBERED,
    guard: new ReplayGuard({ toleranceS, maxEntries: MAX_REPLAY_IDS }),
    received: [],
    arrivals: new EventEmitter(),
    log: options.log ?? ((line) => process.stdout.write(`${JSON.stringify(line)}\n`)),
    rejected: 0,
    delayMs: options.delayMs ?? 0,
  };
  const server = createServer({ keepAliveTimeout: 5_000, requestTimeout: 30_000 }, (req, res) => {
    handleWebhook(state, req, res).catch((error: unknown) => {
      state.log({ msg: "receiver failed", error: String(error) });
      if (!res.headersSent) answer(res, 500, { error: "receiver failed" });
    });
  });
  server.listen(options.port ?? DEMO_RECEIVER_PORT, options.host ?? "127.0.0.1");
  await once(server, "listening");
  const { port, address } = server.address() as AddressInfo;
  return {
    url: `http://${address}:${port}`,
    received: state.received,
    get rejected() {
      return state.rejected;
    },
    waitFor: (predicate, timeoutMs) => waitForWebhook(state, predicate, timeoutMs),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

const demoSchema = {
  port: field.int({
    env: "DEMO_RECEIVER_PORT",
    default: DEMO_RECEIVER_PORT,
    min: 0,
    max: 65535,
    description: "Port",
  }),
  host: field.string({ env: "DEMO_RECEIVER_HOST", default: "127.0.0.1", description: "Interface" }),
  secrets: field.string({
    env: "WEBHOOK_SECRETS",
    required: true,
    secret: true,
    description: "Comma-separated whsec_ secrets of the subscription (old and new during a rotation)",
  }),
};

if (import.meta.main) {
  await runServiceEntry({
    name: "demo-receiver",
    summary: "a webhook endpoint that verifies Standard Webhooks signatures and logs each webhook",
    schema: demoSchema,
    usage: ["WEBHOOK_SECRETS=whsec_… npx casebook webhooks demo-receiver"],
    start: async () => {
      const config = loadConfig(demoSchema, { env: process.env });
      const secrets = config.secrets.split(",").map((s) => s.trim());
      const receiver = await startDemoReceiver({ secrets, port: config.port, host: config.host });
      const log = createLogger({ service: "demo-receiver", version: "0.1.0" });
      log.info({ url: `${receiver.url}/hooks` }, "demo receiver listening");
      return { close: () => receiver.close(), log };
    },
  });
}
