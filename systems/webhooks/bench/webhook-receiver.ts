/**
 * A webhook receiver on 127.0.0.1 for the worker's tests and bench: it verifies every
 * request with the `standardwebhooks` library (the receiver's side of WH-13, written by
 * someone else than our signer), counts requests per webhook-id (exactly-once checks),
 * measures commit→receipt from the body's `timestamp` (the event's commit), and answers
 * as told: 2xx, a status (with Retry-After), a connection reset ("down"), or nothing at
 * all (a held request, until the receiver closes).
 *
 * @example
 * const receiver = await startWebhookReceiver({ secrets: [secret] });
 * receiver.setMode({ kind: "status", status: 503, retryAfter: "30" });
 * await receiver.waitFor(() => receiver.requests >= 10, 5_000);
 * await receiver.close();
 */
import { EventEmitter, once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { Webhook } from "standardwebhooks";

export type ReceiverMode =
  | { kind: "ok"; delayMs?: number }
  | { kind: "status"; status: number; retryAfter?: string }
  | { kind: "reset" }
  | { kind: "hold" };

export interface ReceivedWebhook {
  id: string;
  path: string;
  /** Receiver's wall clock at the request's end. */
  receivedAtMs: number;
  /** receivedAtMs − the body's `timestamp` (the event's commit). */
  commitToReceiptMs: number;
  verified: boolean;
  /** Signatures in `webhook-signature` (two during a rotation overlap). */
  signatures: number;
  answer: number | "reset" | "hold";
  body: string;
  /** The three Standard Webhooks headers, as received. */
  headers: { "webhook-id": string; "webhook-timestamp": string; "webhook-signature": string };
}

export interface WebhookReceiverOptions {
  /** Secrets the receiver holds; a request verifies when any of them matches. */
  secrets: readonly string[];
  /** Keep every request (tests) or only counts and latencies (bench). Default true. */
  keepRequests?: boolean;
  /** Called for every request, after it is counted. */
  onRequest?: (request: ReceivedWebhook) => void;
}

export interface WebhookReceiver {
  readonly port: number;
  url(path?: string): string;
  setMode(mode: ReceiverMode): void;
  /** Requests received, all modes. */
  readonly requests: number;
  /** Requests that failed verification. */
  readonly unverified: number;
  readonly received: readonly ReceivedWebhook[];
  /** Requests per `<path> <webhook-id>`. */
  readonly countsByKey: ReadonlyMap<string, number>;
  /** Resolves once `predicate()` holds (checked now and after each request); rejects after `timeoutMs`. */
  waitFor(predicate: () => boolean, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

function header(req: IncomingMessage, name: string): string {
  const value = req.headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? "";
}

function webhookHeaders(req: IncomingMessage): ReceivedWebhook["headers"] {
  return {
    "webhook-id": header(req, "webhook-id"),
    "webhook-timestamp": header(req, "webhook-timestamp"),
    "webhook-signature": header(req, "webhook-signature"),
  };
}

function verifies(hooks: readonly Webhook[], body: string, headers: ReceivedWebhook["headers"]): boolean {
  return hooks.some((hook) => {
    try {
      hook.verify(body, headers);
      return true;
    } catch {
      return false;
    }
  });
}

function commitOf(body: string): number {
  try {
    return Date.parse((JSON.parse(body) as { timestamp?: string }).timestamp ?? "");
  } catch {
    return Number.NaN;
  }
}

function answer(
  mode: ReceiverMode,
  res: ServerResponse,
  held: Set<ServerResponse>,
): number | "reset" | "hold" {
  switch (mode.kind) {
    case "ok":
      // A delay stands for the receiver's own work: it holds a worker slot, not the CPU.
      if (mode.delayMs === undefined) res.writeHead(204).end();
      else setTimeout(() => res.writeHead(204).end(), mode.delayMs);
      return 204;
    case "status":
      res
        .writeHead(mode.status, mode.retryAfter === undefined ? {} : { "retry-after": mode.retryAfter })
        .end();
      return mode.status;
    case "reset":
      res.socket?.destroy();
      return "reset";
    case "hold":
      held.add(res);
      return "hold";
  }
}

/** Starts a receiver on an ephemeral port of 127.0.0.1. */
export async function startWebhookReceiver(options: WebhookReceiverOptions): Promise<WebhookReceiver> {
  const hooks = options.secrets.map((secret) => new Webhook(secret));
  const keep = options.keepRequests ?? true;
  const events = new EventEmitter();
  const received: ReceivedWebhook[] = [];
  const countsByKey = new Map<string, number>();
  const held = new Set<ServerResponse>();
  const sockets = new Set<Socket>();
  let mode: ReceiverMode = { kind: "ok" };
  let requests = 0;
  let unverified = 0;
  const server = createServer({ keepAliveTimeout: 10_000 }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const headers = webhookHeaders(req);
      const id = headers["webhook-id"];
      const path = req.url ?? "/";
      const verified = verifies(hooks, body, headers);
      const receivedAtMs = Date.now();
      const key = `${path} ${id}`;
      countsByKey.set(key, (countsByKey.get(key) ?? 0) + 1);
      requests += 1;
      if (!verified) unverified += 1;
      const signatures = headers["webhook-signature"].split(" ").filter(Boolean).length;
      const got: ReceivedWebhook = {
        id,
        path,
        receivedAtMs,
        commitToReceiptMs: receivedAtMs - commitOf(body),
        verified,
        signatures,
        answer: answer(mode, res, held),
        body,
        headers,
      };
      if (keep) received.push(got);
      options.onRequest?.(got);
      events.emit("request");
    });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    port,
    url: (path = "/hook") => `http://127.0.0.1:${port}${path}`,
    setMode: (next) => {
      mode = next;
    },
    get requests() {
      return requests;
    },
    get unverified() {
      return unverified;
    },
    received,
    countsByKey,
    waitFor: (predicate, timeoutMs) => waitFor(events, predicate, timeoutMs),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        held.clear();
        server.close(() => resolve());
      }),
  };
}

function waitFor(events: EventEmitter, predicate: () => boolean, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    if (predicate()) return resolve();
    const check = () => {
      if (!predicate()) return;
      clearTimeout(timer);
      events.off("request", check);
      resolve();
    };
    const timer = setTimeout(() => {
      events.off("request", check);
      reject(new Error(`receiver: condition not met within ${timeoutMs} ms`));
    }, timeoutMs);
    events.on("request", check);
  });
}
