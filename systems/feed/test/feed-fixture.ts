/**
 * The service as main() starts it — embedded PGlite in a temporary CASEBOOK_DATA, the
 * in-process timeline twin (or Redis when `REDIS_URL` is passed) — with the fan-out worker's
 * loop off, so a test decides when the queue drains (`drain()`), plus small API helpers.
 * Every call carries the API key of the user in its path (issued on first use, straight into
 * the key table) unless `options.as` says whose key to send (null: none).
 * Small thresholds by default: 3 list writes/s × 1 s target → push up to 3 followers,
 * push-active up to 6 (active share 0.5), pull above.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { main, type RunningSystem } from "../src/main.ts";
import { createUserWithKey } from "../src/store/user-keys.ts";

export interface FeedJson {
  posts: { id: string; authorId: string; text: string | null; kind: string; repostOf: string | null }[];
  nextCursor: string | null;
  newerCursor: string | null;
  partial: boolean;
}

export interface FeedFixture {
  readonly running: RunningSystem;
  call(
    method: string,
    path: string,
    body?: unknown,
    options?: CallOptions,
  ): Promise<{ status: number; headers: Headers; json: unknown }>;
  /** User `userId`'s API key (the account made with it when new). */
  keyOf(userId: number): Promise<string>;
  post(userId: number, text: string): Promise<string>;
  follow(userId: number, targetId: number): Promise<void>;
  feed(userId: number, query?: string): Promise<{ status: number; headers: Headers; body: FeedJson }>;
  /** Runs the fan-out worker until the queue is empty; resolves to events handled. */
  drain(): Promise<number>;
  close(): Promise<void>;
}

export interface CallOptions {
  /** Whose key to send; default the user in the path (user 1 when the path names none); null: no credentials. */
  as?: number | null;
  headers?: Record<string, string>;
}

export const SMALL_THRESHOLDS = {
  FEED_FANOUT_WRITES_PER_S: "3",
  FEED_DELAY_TARGET_MS: "1s",
  FEED_ACTIVE_SHARE: "0.5",
  // The celebrity lists are on (written through at post time: a test may read right after a
  // post); their race-free fills are tested in read-cache.contract.test.ts.
} as const;

export async function openFeed(env: Record<string, string> = {}): Promise<FeedFixture> {
  const dir = await mkdtemp(join(tmpdir(), "casebook-feed-"));
  const running = await main(
    { PORT: "0", CASEBOOK_DATA: dir, LOG_LEVEL: "silent", ...SMALL_THRESHOLDS, ...env },
    { startWorker: false },
  );
  const keys = new Map<number, Promise<string>>();
  const keyOf = (userId: number) => {
    let key = keys.get(userId);
    if (key === undefined) {
      key = createUserWithKey(running.db, BigInt(userId), { nowMs: Date.now(), randomBytes }).then(
        (made) => made.apiKey.key,
      );
      keys.set(userId, key);
    }
    return key;
  };
  const call = async (method: string, path: string, body?: unknown, options: CallOptions = {}) => {
    const pathUser = /^\/v1\/users\/([1-9][0-9]{0,8})(?:\/|\?|$)/.exec(path)?.[1];
    const as = options.as === undefined ? Number(pathUser ?? 1) : options.as;
    const auth = as === null ? {} : { authorization: `Bearer ${await keyOf(as)}` };
    const res = await running.service.app.inject({
      method: method as "GET",
      url: path,
      headers: { ...auth, ...options.headers },
      ...(body === undefined ? {} : { payload: body as object }),
    });
    const headers = new Headers(res.headers as Record<string, string>);
    return { status: res.statusCode, headers, json: res.body === "" ? undefined : res.json() };
  };
  return {
    running,
    call,
    keyOf,
    post: async (userId, text) => {
      const res = await call("POST", `/v1/users/${userId}/posts`, { text });
      if (res.status !== 201) throw new Error(`post: ${res.status} ${JSON.stringify(res.json)}`);
      return (res.json as { id: string }).id;
    },
    follow: async (userId, targetId) => {
      const res = await call("PUT", `/v1/users/${userId}/following/${targetId}`);
      if (res.status !== 204) throw new Error(`follow: ${res.status}`);
    },
    feed: async (userId, query = "") => {
      const res = await call("GET", `/v1/users/${userId}/feed${query}`);
      return { status: res.status, headers: res.headers, body: res.json as FeedJson };
    },
    drain: async () => {
      let handled = 0;
      for (let round = 0; round < 1_000; round++) {
        const r = await running.worker!.runOnce();
        handled += r.published;
        if (r.claimed === 0) return handled;
      }
      throw new Error("the fan-out queue did not drain in 1 000 rounds");
    },
    close: async () => {
      await running.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
