/**
 * The sides of the bench, each as the processes it runs in production, on the same
 * engines: chat as one send service (CHAT_ROLE=api) and N gateways (CHAT_ROLE=gateway) on
 * PostgreSQL and Redis; socket.io as N servers (bench/socketio-server.ts) on one Redis stream;
 * Centrifuge as N servers (bench/centrifuge-server, built by bench/centrifuge-build.ts) on
 * one Redis broker. Each side prepares the same population — `users` clients in groups of
 * `groupSize`, and when asked each user in two 1:1 conversations — through its own means
 * (chat: user tokens and conversations over its HTTP API; socket.io: room names; Centrifuge:
 * channel names), and reports the resident memory of the processes that hold the sockets.
 *
 * @example
 * const side = await startChatSide(engines, { gateways: 2 });
 * const population = await side.prepare({ users: 1_000, groupSize: 50, directs: true });
 * const before = await side.residentBytes();
 */
import { randomBytes } from "node:crypto";
import { type ServerProcess, type ServerSpec, startServerProcess } from "@casebook/lab/server-process";
import { analyzeSchema } from "./bench-engines.ts";
import type { Side as LoadSide } from "./load-child.ts";

/** A conversation messages are sent to: its address on the side, and its members' population indexes. */
export interface Target {
  target: string;
  members: number[];
}

export interface Population {
  clients: { token?: string; rooms: string[] }[];
  groups: Target[];
  /** 1:1 conversations: user i with user i+1 (the last with the first), so each user is in two. */
  directs: Target[];
}

/** The shape of the population: how many users, the group size, whether 1:1 conversations exist. */
export interface PopulationShape {
  users: number;
  groupSize: number;
  directs: boolean;
}

export interface BenchSide {
  readonly name: string;
  readonly loadSide: LoadSide;
  /** Where clients connect: the socket holders, round robin. */
  readonly urls: string[];
  prepare(shape: PopulationShape): Promise<Population>;
  /** Resident memory of the socket holders, summed. */
  residentBytes(): Promise<number>;
  /**
   * Crashes socket holder `k` (SIGKILL: nothing drained) and starts it again on the same port;
   * resolves once the new process is ready. Its clients reconnect to the same URL.
   */
  restart(k: number): Promise<void>;
  close(): Promise<void>;
}

/** Socket holders that can be crashed and started again on their own port, in place. */
function restartable(
  holders: ServerProcess[],
  spec: (k: number) => ServerSpec,
): (k: number) => Promise<void> {
  return async (k) => {
    const old = holders[k]!;
    await old.kill();
    holders[k] = await startServerProcess({ ...spec(k), port: Number(new URL(old.url).port) });
  };
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

/** The pairs of the 1:1 conversations: (i, i+1), and (last, first) when there are more than two users. */
function directPairs(users: number): number[][] {
  const pairs: number[][] = [];
  for (let i = 0; i + 1 < users; i++) pairs.push([i, i + 1]);
  if (users > 2) pairs.push([users - 1, 0]);
  return pairs;
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
  const gatewaySpec = (i: number) => ({
    name: `chat-gateway-${i + 1}`,
    entry: chatEntry,
    env: { ...env, CHAT_ROLE: "gateway", CHAT_API_URL: api.url, CHAT_GATEWAY_ID: `bench-gw-${i + 1}` },
  });
  const started = await Promise.allSettled(
    Array.from({ length: options.gateways }, (_, i) => startServerProcess(gatewaySpec(i))),
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
    async prepare({ users, groupSize, directs }) {
      const ids = Array.from({ length: users }, (_, i) => i);
      const tokens = await inPool(ids, SETUP_CONCURRENCY, async (i) => {
        const answer = await postJson(`${api.url}/v1/tokens`, issuer, { userId: `u${i}`, deviceId: "d" });
        return String(answer.token);
      });
      const create = (kind: "group" | "direct") => async (members: number[]) => {
        const [owner, ...others] = members;
        const answer = await postJson(`${api.url}/v1/conversations`, tokens[owner!]!, {
          kind,
          members: others.map((i) => `u${i}`),
        });
        return { target: String(answer.id), members };
      };
      const population = {
        clients: tokens.map((token) => ({ token, rooms: [] })),
        groups: await inPool(groupMembers(users, groupSize), SETUP_CONCURRENCY, create("group")),
        directs: directs ? await inPool(directPairs(users), SETUP_CONCURRENCY, create("direct")) : [],
      };
      await analyzeSchema(engines.databaseUrl, engines.schema);
      return population;
    },
    residentBytes: () => sumResident(gateways),
    restart: restartable(gateways, gatewaySpec),
    close,
  };
}

/**
 * The population as names a pub/sub server routes by: group k is room `g<k>`, 1:1 pair k is
 * `d<k>`, and each client joins its own (socket.io's rooms, Centrifuge's channels).
 */
function roomPopulation({ users, groupSize, directs }: PopulationShape): Population {
  const rooms = Array.from({ length: users }, (): string[] => []);
  const roomsOf = (prefix: string, all: number[][]): Target[] =>
    all.map((members, k) => {
      for (const i of members) rooms[i]!.push(`${prefix}${k}`);
      return { target: `${prefix}${k}`, members };
    });
  const groups = roomsOf("g", groupMembers(users, groupSize));
  return {
    clients: rooms.map((r) => ({ rooms: r })),
    groups,
    directs: directs ? roomsOf("d", directPairs(users)) : [],
  };
}

/** N interchangeable socket holders of a peer, each one `serverSpec(i)`, all started or none. */
async function startPeerSide(
  identity: { name: string; loadSide: LoadSide },
  count: number,
  serverSpec: (i: number) => ServerSpec,
): Promise<BenchSide> {
  const started = await Promise.allSettled(
    Array.from({ length: count }, (_, i) => startServerProcess(serverSpec(i))),
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
    ...identity,
    urls: servers.map((s) => s.url),
    prepare: async (shape) => roomPopulation(shape),
    residentBytes: () => sumResident(servers),
    restart: restartable(servers, serverSpec),
    close,
  };
}

export function startSocketIoSide(engines: SideEngines, options: { servers: number }): Promise<BenchSide> {
  return startPeerSide({ name: "socket.io", loadSide: "socketio" }, options.servers, (i) => ({
    name: `socket.io-${i + 1}`,
    entry: socketIoEntry,
    env: { REDIS_URL: engines.redisUrl, SIO_STREAM: `${engines.prefix}socket.io` },
  }));
}

/**
 * N centrifuge servers (`program`: bench/centrifuge-build.ts's binary) on one Redis broker, its
 * keys (channel histories and their offset/epoch) under the run's prefix.
 *
 * @example
 * const side = await startCentrifugeSide(engines, { servers: 2, program: build.program });
 */
export function startCentrifugeSide(
  engines: SideEngines,
  options: { servers: number; program: string },
): Promise<BenchSide> {
  return startPeerSide({ name: "centrifuge", loadSide: "centrifuge" }, options.servers, (i) => ({
    name: `centrifuge-${i + 1}`,
    entry: { program: options.program },
    env: { REDIS_URL: engines.redisUrl, CF_PREFIX: `${engines.prefix}centrifuge` },
  }));
}
