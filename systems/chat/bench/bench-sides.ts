/**
 * The two sides of the bench, each as the processes it runs in production, on the same
 * engines: chat as one send service (CHAT_ROLE=api) and N gateways (CHAT_ROLE=gateway) on
 * PostgreSQL and Redis; socket.io as N servers (bench/socketio-server.ts) on one Redis stream.
 * Each side prepares the same population — `users` clients, groups of `groupSize` — through
 * its own means (chat: user tokens and conversations over its HTTP API; socket.io: room
 * names), and reports the resident memory of the processes that hold the sockets.
 *
 * @example
 * const side = await startChatSide(engines, { gateways: 2 });
 * const population = await side.prepare(1_000, 50);
 * const before = await side.residentBytes();
 */
import { randomBytes } from "node:crypto";
import { type ServerProcess, startServerProcess } from "@casebook/lab/server-process";
import type { Side as LoadSide } from "./load-child.ts";

export interface Population {
  clients: { token?: string; rooms: string[] }[];
  groups: { target: string; members: number[] }[];
}

export interface BenchSide {
  readonly name: string;
  readonly loadSide: LoadSide;
  /** Where clients connect: the socket holders, round robin. */
  readonly urls: string[];
  prepare(users: number, groupSize: number): Promise<Population>;
  /** Resident memory of the socket holders, summed. */
  residentBytes(): Promise<number>;
  close(): Promise<void>;
}

export interface SideEngines {
  readonly databaseUrl: string;
  readonly redisUrl: string;
  readonly schema: string;
  readonly prefix: string;
}

const chatEntry = new URL("../src/main.ts", import.meta.url);
const socketIoEntry = new URL("./socketio-server.ts", import.meta.url);
/** HTTP calls in flight while preparing the population (tokens, conversations). */
const SETUP_CONCURRENCY = 16;
const SETUP_TIMEOUT_MS = 30_000;

async function residentOf(url: string): Promise<number> {
  const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(SETUP_TIMEOUT_MS) });
  const text = await res.text();
  const line = text.split("\n").find((l) => l.startsWith("process_resident_memory_bytes "));
  if (line === undefined) throw new Error(`${url}/metrics has no process_resident_memory_bytes`);
  return Number(line.split(" ")[1]);
}

async function sumResident(servers: readonly ServerProcess[]): Promise<number> {
  const values = await Promise.all(servers.map((s) => residentOf(s.url)));
  return values.reduce((a, b) => a + b, 0);
}

/** Runs `fn` over `items` with at most `limit` in flight; results in order. */
async function inPool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

async function postJson(url: string, bearer: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(SETUP_TIMEOUT_MS),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new Error(`POST ${url} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/** Member indexes of group k: users k·size … k·size+size−1 (the last group may be smaller). */
function groupMembers(users: number, groupSize: number): number[][] {
  const groups: number[][] = [];
  for (let first = 0; first + 1 < users; first += groupSize) {
    groups.push(Array.from({ length: Math.min(groupSize, users - first) }, (_, i) => first + i));
  }
  return groups;
}

export async function startChatSide(engines: SideEngines, options: { gateways: number }): Promise<BenchSide> {
  const issuer = randomBytes(24).toString("base64url");
  const env = {
    DATABASE_URL: engines.databaseUrl,
    CHAT_DB_SCHEMA: engines.schema,
    REDIS_URL: engines.redisUrl,
    CHAT_REDIS_PREFIX: engines.prefix,
    CHAT_JWT_SECRET: randomBytes(32).toString("base64url"),
    CHAT_ISSUER_TOKEN: issuer,
  };
  const api = await startServerProcess({
    name: "chat-api",
    entry: chatEntry,
    env: { ...env, CHAT_ROLE: "api" },
  });
  const started = await Promise.allSettled(
    Array.from({ length: options.gateways }, (_, i) =>
      startServerProcess({
        name: `chat-gateway-${i + 1}`,
        entry: chatEntry,
        env: { ...env, CHAT_ROLE: "gateway", CHAT_API_URL: api.url, CHAT_GATEWAY_ID: `bench-gw-${i + 1}` },
      }),
    ),
  );
  const gateways = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  const close = async () => {
    await Promise.all(gateways.map((g) => g.stop()));
    await api.stop();
  };
  const failed = started.find((s) => s.status === "rejected");
  if (failed) {
    await close();
    throw failed.reason;
  }
  return {
    name: "chat",
    loadSide: "chat",
    urls: gateways.map((g) => g.url),
    async prepare(users, groupSize) {
      const ids = Array.from({ length: users }, (_, i) => i);
      const tokens = await inPool(ids, SETUP_CONCURRENCY, async (i) => {
        const answer = await postJson(`${api.url}/v1/tokens`, issuer, { userId: `u${i}`, deviceId: "d" });
        return String(answer.token);
      });
      const members = groupMembers(users, groupSize);
      const chatIds = await inPool(members, SETUP_CONCURRENCY, async (group) => {
        const [owner, ...others] = group;
        const answer = await postJson(`${api.url}/v1/conversations`, tokens[owner!]!, {
          kind: "group",
          members: others.map((i) => `u${i}`),
        });
        return String(answer.id);
      });
      return {
        clients: tokens.map((token) => ({ token, rooms: [] })),
        groups: members.map((m, k) => ({ target: chatIds[k]!, members: m })),
      };
    },
    residentBytes: () => sumResident(gateways),
    close,
  };
}

export async function startSocketIoSide(
  engines: SideEngines,
  options: { servers: number },
): Promise<BenchSide> {
  const started = await Promise.allSettled(
    Array.from({ length: options.servers }, (_, i) =>
      startServerProcess({
        name: `socket.io-${i + 1}`,
        entry: socketIoEntry,
        env: { REDIS_URL: engines.redisUrl, SIO_STREAM: `${engines.prefix}socket.io` },
      }),
    ),
  );
  const servers = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  const close = async () => {
    await Promise.all(servers.map((s) => s.stop()));
  };
  const failed = started.find((s) => s.status === "rejected");
  if (failed) {
    await close();
    throw failed.reason;
  }
  return {
    name: "socket.io",
    loadSide: "socketio",
    urls: servers.map((s) => s.url),
    async prepare(users, groupSize) {
      const members = groupMembers(users, groupSize);
      const rooms = new Array<string[]>(users).fill([]);
      members.forEach((group, k) => {
        for (const i of group) rooms[i] = [`g${k}`];
      });
      return {
        clients: rooms.map((r) => ({ rooms: r })),
        groups: members.map((m, k) => ({ target: `g${k}`, members: m })),
      };
    },
    residentBytes: () => sumResident(servers),
    close,
  };
}
