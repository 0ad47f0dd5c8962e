/**
 * chat started by main() as in production, on the fastest engine here: the real PostgreSQL
 * in a fresh schema (dropped at close) when it answers, else PGlite in a temporary data
 * directory. Plus the little a test needs to act as the app backend (a user token) and as
 * a device (a WebSocket that records every frame and waits for one by predicate).
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { tcpReachable, testDatabaseUrl, uniqueName } from "@casebook/lab/test-engines";
import { WebSocket } from "ws";
import { type MainOptions, main, type RunningSystem } from "../src/main.ts";

export const JWT_SECRET = "a-test-secret-of-at-least-32-characters!";

/** Env for main(): PostgreSQL with a fresh schema when reachable, else a PGlite directory. */
export async function engineEnv(): Promise<{ env: NodeJS.ProcessEnv; drop(): Promise<void> }> {
  const url = new URL(testDatabaseUrl);
  if (await tcpReachable(url.hostname, Number(url.port || 5432))) {
    const schema = uniqueName("chat_sys");
    return {
      env: { DATABASE_URL: testDatabaseUrl, CHAT_DB_SCHEMA: schema, CHAT_DB_MAX_CONNECTIONS: "4" },
      drop: async () => {
        const db = await openDatabase({ system: "chat", url: testDatabaseUrl, schema });
        try {
          await db.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
        } finally {
          await db.close();
        }
      },
    };
  }
  const dir = await mkdtemp(join(tmpdir(), "casebook-chat-"));
  return { env: { CASEBOOK_DATA: dir }, drop: () => rm(dir, { recursive: true, force: true }) };
}

export interface TestSystem {
  readonly running: RunningSystem;
  token(userId: string, deviceId?: string, ttlS?: number): Promise<string>;
  api<T = Record<string, unknown>>(
    token: string,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: T }>;
  close(): Promise<void>;
}

export async function startSystem(
  extraEnv: NodeJS.ProcessEnv = {},
  options: MainOptions = {},
): Promise<TestSystem> {
  const engine = await engineEnv();
  let running: RunningSystem;
  try {
    running = await main(
      // A short drain: a close with sockets still open would spread their 4000s over the default 5 s.
      {
        PORT: "0",
        LOG_LEVEL: process.env.CHAT_TEST_LOG_LEVEL ?? "silent",
        CHAT_JWT_SECRET: JWT_SECRET,
        CHAT_DRAIN_MS: "100",
        ...engine.env,
        ...extraEnv,
      },
      options,
    );
  } catch (err) {
    await engine.drop();
    throw err;
  }
  const api = async <T>(token: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${running.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, json: (text === "" ? {} : JSON.parse(text)) as T };
  };
  return {
    running,
    api,
    async token(userId, deviceId = "phone", ttlS = 3_600) {
      const { status, json } = await api<{ token: string }>(running.issuerToken, "POST", "/v1/tokens", {
        userId,
        deviceId,
        ttlS,
      });
      assert.equal(status, 201);
      return json.token;
    },
    async close() {
      try {
        await running.close();
      } finally {
        await engine.drop();
      }
    },
  };
}

export type Frame = Record<string, unknown> & { action: string };

/** A device's socket: every frame recorded, `next(pred)` waits for the first matching one not yet taken. */
export class TestSocket {
  readonly frames: Frame[] = [];
  readonly ws: WebSocket;
  closeCode: number | undefined;
  readonly #waiters: { pred: (f: Frame) => boolean; resolve: (f: Frame) => void }[] = [];
  readonly #closed: Promise<number>;
  #taken = new Set<Frame>();

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on("message", (data) => {
      const frame = JSON.parse(data.toString("utf8")) as Frame;
      this.frames.push(frame);
      for (const waiter of [...this.#waiters]) {
        if (!this.#taken.has(frame) && waiter.pred(frame)) {
          this.#taken.add(frame);
          this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
          waiter.resolve(frame);
        }
      }
    });
    this.#closed = new Promise((resolve) =>
      ws.on("close", (code) => {
        this.closeCode = code;
        resolve(code);
      }),
    );
  }

  static async open(baseUrl: string, token: string): Promise<TestSocket> {
    const ws = new WebSocket(`${baseUrl.replace(/^http/, "ws")}/v1/socket`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const socket = new TestSocket(ws);
    await socket.next((f) => f.action === "welcome");
    return socket;
  }

  send(frame: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(frame));
  }

  next(pred: (f: Frame) => boolean, timeoutMs = 15_000): Promise<Frame> {
    const found = this.frames.find((f) => !this.#taken.has(f) && pred(f));
    if (found) {
      this.#taken.add(found);
      return Promise.resolve(found);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(`no matching frame in ${timeoutMs} ms; got ${JSON.stringify(this.frames.slice(-5))}`),
          ),
        timeoutMs,
      );
      this.#waiters.push({
        pred,
        resolve: (f) => {
          clearTimeout(timer);
          resolve(f);
        },
      });
    });
  }

  closed(): Promise<number> {
    return this.#closed;
  }

  close(): Promise<number> {
    this.ws.close();
    return this.#closed;
  }
}

/** Polls `check` until it holds; rejects naming `what` after `timeoutMs` (for states with no event to await). */
export function until(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const poll = setInterval(() => {
      if (check()) {
        clearInterval(poll);
        resolve();
      } else if (Date.now() - started > timeoutMs) {
        clearInterval(poll);
        reject(new Error(`timed out waiting for ${what}`));
      }
    }, 20);
  });
}

/**
 * A channel of `size` members (`${prefix}-0` … `${prefix}-${size - 1}`), created by the first,
 * each with a socket open on `sys` (pushed to `sockets`, which the caller closes).
 */
export async function openChannel(
  sys: TestSystem,
  prefix: string,
  size: number,
  sockets: TestSocket[],
): Promise<{ chatId: string; owner: string }> {
  const owner = await sys.token(`${prefix}-0`);
  const members = Array.from({ length: size - 1 }, (_, i) => `${prefix}-${i + 1}`);
  const { status, json } = await sys.api<{ id: string }>(owner, "POST", "/v1/conversations", {
    kind: "channel",
    title: prefix,
    members,
  });
  assert.equal(status, 201);
  for (const u of [`${prefix}-0`, ...members])
    sockets.push(await TestSocket.open(sys.running.url, await sys.token(u)));
  return { chatId: json.id, owner };
}

/** How many of `sockets` receive the message `messageId` live within `withinMs`. */
export async function receivedBy(
  sockets: readonly TestSocket[],
  messageId: string,
  withinMs: number,
): Promise<number> {
  const got = await Promise.all(
    sockets.map((s) =>
      Promise.race([
        s.next((f) => f.action === "message" && (f.message as { id: string }).id === messageId),
        sleep(withinMs).then(() => undefined),
      ]),
    ),
  );
  return got.filter(Boolean).length;
}
