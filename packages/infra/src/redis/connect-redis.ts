/**
 * The one way Casebook opens a Redis connection: every timeout and retry is set
 * explicitly here, because ioredis's defaults are tuned for "never lose a command"
 * (queue forever, retry 20 times, 10 s connect timeout), and ours must be tuned for
 * "fail fast". A rate limiter that fails open is useless if every request first
 * waits seconds for a dead Redis: with these defaults a DOWN Redis rejects a call
 * at once (`REDIS_UNAVAILABLE`, nothing queued) and a HUNG Redis costs at most
 * `commandTimeoutMs` (`REDIS_TIMEOUT`). `connectRedisCluster` opens a Redis Cluster
 * client with the same bounds, and never re-sends a command that may have run either.
 *
 * @example
 * const redis = await connectRedis({ url: process.env.REDIS_URL, keyPrefix: "rl:" });
 * try {
 *   await redis.set("k", "v");
 * } finally {
 *   await closeRedis(redis);
 * }
 */
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis";
import { installCommandPromises } from "./command-promise.ts";
import { redisErrors } from "./redis-errors.ts";

// Every command of every client opened here without a closure born old (command-promise.ts).
installCommandPromises();

/** Either client: a single Redis (or a Sentinel-managed one) or a Redis Cluster. */
export type RedisClient = Redis | Cluster;

/**
 * True for a Cluster client. Reads ioredis's own flag rather than `instanceof`, which
 * fails when two copies of ioredis are installed.
 *
 * @example
 * const nodes = isClusterClient(redis) ? redis.nodes("master") : [redis];
 */
export function isClusterClient(redis: RedisClient): redis is Cluster {
  return redis.isCluster === true;
}

export interface RedisConnectOptions {
  /** `redis://[user:pass@]host:port[/db]` or `rediss://…`; defaults to `process.env.REDIS_URL`. */
  url?: string;
  /**
   * A Sentinel-managed master instead of `url`: the client asks these sentinels for the
   * master's address, and again after every disconnect, so a failover is followed by the
   * next reconnect (commands in between fail fast, like any lost connection).
   */
  sentinel?: { nodes: readonly { host: string; port: number }[]; masterName: string };
  /** Prepended by the client to every key (scripts' KEYS too), so systems sharing one Redis never collide. */
  keyPrefix?: string;
  /** Bound on TCP connect plus handshake, for the first connect and each reconnect. Default 1 000. */
  connectTimeoutMs?: number;
  /**
   * Bound on each command's reply. Default 250: a script is sub-millisecond; 250 ms only trips on a stall.
   * 0 turns it off, for a caller that bounds its calls itself at the socket (reply-deadline.ts): ioredis's
   * timer is checked before the socket is read, so a busy event loop trips it although the reply is there.
   */
  commandTimeoutMs?: number;
  /**
   * How many reconnects an in-flight command survives before it is rejected. Default 0: a
   * command whose connection dropped may already have run, and re-sending a non-idempotent
   * script (INCR, take-token) would apply it twice. The caller decides, knowing its semantics.
   */
  maxRetriesPerRequest?: number;
  /**
   * Queue commands while disconnected? Default false: a queued command waits for a reconnect
   * that may never come, which is exactly the latency a fail-open caller cannot afford.
   */
  enableOfflineQueue?: boolean;
  /** First reconnect delay; doubles per attempt. Default 50. */
  reconnectBaseDelayMs?: number;
  /** Cap on one reconnect delay, so a recovered Redis is found quickly. Default 2 000. */
  reconnectMaxDelayMs?: number;
  /**
   * Reconnect attempts before the client gives up for good (status "end"; `/readyz` turns
   * red and the supervisor restarts the process). Default 300, about ten minutes at the cap.
   */
  maxReconnectAttempts?: number;
  /**
   * Coalesce commands issued in the same event-loop tick into one pipeline write. Default
   * false; a hot path making one small call per request (a rate limiter) gains throughput.
   */
  autoPipelining?: boolean;
  /**
   * When true, resolve without connecting. Call `await redis.connect()` before the first
   * command: with the offline queue off, a command sent earlier starts the connection but
   * itself fails at once.
   */
  lazyConnect?: boolean;
  /** Shown by CLIENT LIST, to tell services apart on a shared Redis. */
  connectionName?: string;
  /** Receives connection-level errors (each failed reconnect). Commands report their own failures. */
  onError?: (error: Error) => void;
  /** Jitter source in [0, 1), injected for deterministic tests. */
  random?: () => number;
}

export const redisConnectDefaults = {
  connectTimeoutMs: 1_000,
  commandTimeoutMs: 250,
  maxRetriesPerRequest: 0,
  enableOfflineQueue: false,
  reconnectBaseDelayMs: 50,
  reconnectMaxDelayMs: 2_000,
  maxReconnectAttempts: 300,
  lazyConnect: false,
} as const;

/** Bound on QUIT before `closeRedis` gives up on a graceful close and drops the socket. */
export const defaultQuitTimeoutMs = 1_000;

/**
 * Delay before reconnect `attempt` (1-based): capped exponential with "equal jitter"
 * (half fixed, half random), so replicas that lost Redis together do not reconnect in lockstep
 * yet never retry with zero delay.
 *
 * @example
 * reconnectDelayMs(3, 50, 2_000, () => 0.5); // 150: base 200, half fixed + half of half
 */
export function reconnectDelayMs(
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number,
): number {
  const exponent = Math.min(attempt - 1, 30); // 2^30 * base already exceeds any sane cap
  const ceilingMs = Math.min(maxMs, baseMs * 2 ** exponent);
  return Math.floor(ceilingMs / 2 + (random() * ceilingMs) / 2);
}

/** Validates a Redis URL; the returned text is safe to log (password replaced). */
export function redactRedisUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (cause) {
    throw redisErrors.create("REDIS_URL_INVALID", { fields: { url: "(unparseable)" }, cause });
  }
  if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") {
    throw redisErrors.create("REDIS_URL_INVALID", { fields: { protocol: parsed.protocol } });
  }
  if (parsed.password !== "") parsed.password = "***";
  return parsed.toString();
}

/** The explicit ioredis options for `options`: every behaviour spelled out, none left to defaults. */
export function redisClientOptions(options: RedisConnectOptions = {}): RedisOptions {
  const d = withDefaults(options);
  const random = options.random ?? Math.random;
  return {
    keyPrefix: options.keyPrefix ?? "",
    connectTimeout: d.connectTimeoutMs,
    // ioredis arms a timer for any number, 0 included: off means undefined.
    commandTimeout: d.commandTimeoutMs > 0 ? d.commandTimeoutMs : undefined,
    maxRetriesPerRequest: d.maxRetriesPerRequest,
    enableOfflineQueue: d.enableOfflineQueue,
    // Same reason as maxRetriesPerRequest: never re-send a command the server may have run.
    autoResendUnfulfilledCommands: false,
    retryStrategy: (attempt) =>
      attempt > d.maxReconnectAttempts
        ? null
        : reconnectDelayMs(attempt, d.reconnectBaseDelayMs, d.reconnectMaxDelayMs, random),
    // Always lazy at construction: connectRedis connects itself so it can bound and report it.
    lazyConnect: true,
    // Wait for Redis to finish loading its dataset; a script run against a half-loaded one lies.
    enableReadyCheck: true,
    // RESP2: script replies are identical, it works on every Redis-compatible server, no HELLO.
    protocol: 2,
    // Detects a peer that vanished without a FIN (cable pulled, VM frozen) within seconds.
    keepAlive: 10_000,
    noDelay: true,
    connectionName: options.connectionName,
    // Off unless asked: explicit batches (ScriptRegistry.runBatch) are the default way to pipeline.
    enableAutoPipelining: options.autoPipelining ?? false,
    reconnectOnError: null,
    // On disconnect ioredis half-closes and waits this long for the server's FIN before
    // destroying the socket; a stalled server never sends it.
    disconnectTimeout: defaultQuitTimeoutMs,
    // A Redis still loading its dataset counts as not ready within the same connect bound.
    maxLoadingRetryTime: d.connectTimeoutMs,
  };
}

/**
 * Opens a connection and resolves once Redis is READY, or rejects with
 * `REDIS_UNAVAILABLE` within `connectTimeoutMs` (no retry loop left behind). With
 * `lazyConnect` it resolves at once with an unconnected client.
 *
 * @example
 * const redis = await connectRedis({ url: "redis://127.0.0.1:6379", commandTimeoutMs: 50 });
 */
export async function connectRedis(options: RedisConnectOptions = {}): Promise<Redis> {
  if (options.sentinel !== undefined) return connectSentinelRedis(options, options.sentinel);
  const url = options.url ?? process.env.REDIS_URL;
  if (url === undefined || url === "") {
    throw redisErrors.create("REDIS_URL_INVALID", { detail: "Set REDIS_URL (or pass `url`) to use Redis." });
  }
  const safeUrl = redactRedisUrl(url);
  const redis = new Redis(url, redisClientOptions(options));
  // Without a listener ioredis prints every failed reconnect to stderr; errors still reach
  // callers as rejected commands, and `redis.status` tells health checks the state.
  redis.on("error", options.onError ?? (() => {}));
  if (options.lazyConnect === true) return redis;
  const timeoutMs = options.connectTimeoutMs ?? redisConnectDefaults.connectTimeoutMs;
  try {
    await withDeadline(redis.connect(), timeoutMs, "connect");
    return redis;
  } catch (cause) {
    redis.disconnect(false);
    throw redisErrors.create("REDIS_UNAVAILABLE", {
      detail: `Could not connect to Redis at ${safeUrl} within ${timeoutMs} ms.`,
      fields: { url: safeUrl, phase: "connect", timeoutMs },
      cause,
    });
  }
}

/** `connectRedis` for a master found through sentinels, with the same bounds. */
async function connectSentinelRedis(
  options: RedisConnectOptions,
  sentinel: NonNullable<RedisConnectOptions["sentinel"]>,
): Promise<Redis> {
  if (sentinel.nodes.length === 0 || sentinel.masterName === "") {
    throw redisErrors.create("REDIS_URL_INVALID", {
      detail: "A Sentinel-managed Redis needs at least one sentinel and the master's name.",
    });
  }
  const clientOptions = redisClientOptions(options);
  const sentinelOptions: RedisOptions = {
    ...clientOptions,
    sentinels: sentinel.nodes.map((n) => ({ host: n.host, port: n.port })),
    name: sentinel.masterName,
  };
  // Asking a sentinel is bounded like a reconnect: the same capped, jittered delays.
  const retry = clientOptions.retryStrategy;
  if (typeof retry === "function") sentinelOptions.sentinelRetryStrategy = retry;
  const redis = new Redis(sentinelOptions);
  redis.on("error", options.onError ?? (() => {}));
  if (options.lazyConnect === true) return redis;
  const timeoutMs = options.connectTimeoutMs ?? redisConnectDefaults.connectTimeoutMs;
  const where = `master ${sentinel.masterName} via ${sentinel.nodes.map((n) => `${n.host}:${n.port}`).join(",")}`;
  try {
    await withDeadline(redis.connect(), timeoutMs, "connect");
    return redis;
  } catch (cause) {
    redis.disconnect(false);
    throw redisErrors.create("REDIS_UNAVAILABLE", {
      detail: `Could not connect to Redis ${where} within ${timeoutMs} ms.`,
      fields: { url: where, phase: "connect", timeoutMs },
      cause,
    });
  }
}

/** Seed nodes of a cluster, as `redis://[user:pass@]host:port` URLs (the rest are discovered). */
export interface RedisClusterConnectOptions extends Omit<RedisConnectOptions, "url"> {
  /**
   * One or more nodes of the cluster (any role); the client learns the others from
   * CLUSTER SLOTS. Credentials and `rediss:` come from the first URL and apply to every node.
   */
  nodes: readonly string[];
  /**
   * MOVED/ASK/TRYAGAIN redirections one command may follow before it is rejected. Default 5:
   * a redirection means the command did not run, so following it is safe, but a slot map that
   * keeps moving is an incident, not something to wait out on the request path.
   */
  maxRedirections?: number;
  /** Pause before re-sending after TRYAGAIN (a slot mid-migration). Default 25. */
  tryAgainDelayMs?: number;
  /** Bound on one CLUSTER SLOTS refresh. Default `connectTimeoutMs`. */
  slotsRefreshTimeoutMs?: number;
  /** Period of the background CLUSTER SLOTS refresh. Default 5 000. */
  slotsRefreshIntervalMs?: number;
}

export const redisClusterConnectDefaults = {
  maxRedirections: 5,
  tryAgainDelayMs: 25,
  slotsRefreshIntervalMs: 5_000,
} as const;

/** Host and port of each seed URL (validated), plus the credentials every node shares. */
function parseClusterNodes(urls: readonly string[]): {
  startupNodes: { host: string; port: number }[];
  auth: Pick<RedisOptions, "username" | "password" | "tls">;
} {
  if (urls.length === 0) {
    throw redisErrors.create("REDIS_URL_INVALID", {
      detail: "A Redis Cluster needs at least one seed node URL in `nodes`.",
    });
  }
  const parsed = urls.map((url) => {
    redactRedisUrl(url); // throws REDIS_URL_INVALID naming no password
    return new URL(url);
  });
  const first = parsed[0]!;
  const auth: Pick<RedisOptions, "username" | "password" | "tls"> = {};
  if (first.username !== "") auth.username = decodeURIComponent(first.username);
  if (first.password !== "") auth.password = decodeURIComponent(first.password);
  if (first.protocol === "rediss:") auth.tls = {};
  const startupNodes = parsed.map((url) => ({
    host: url.hostname.replace(/^\[|\]$/g, ""),
    port: Number(url.port || 6379),
  }));
  return { startupNodes, auth };
}

/**
 * The explicit ioredis Cluster options: the per-node connection is `redisClientOptions`
 * (same timeouts, no resend), and every cluster-level retry is either safe or off.
 */
export function redisClusterOptions(options: Omit<RedisClusterConnectOptions, "nodes">): ClusterOptions {
  const d = withDefaults(options);
  const c = redisClusterConnectDefaults;
  const random = options.random ?? Math.random;
  const {
    keyPrefix,
    enableOfflineQueue: _queue,
    retryStrategy: _retry,
    lazyConnect: _lazy,
    enableAutoPipelining: _auto,
    ...node
  } = redisClientOptions(options);
  return {
    keyPrefix,
    enableOfflineQueue: d.enableOfflineQueue,
    // Ready only once CLUSTER INFO says the cluster serves every slot.
    enableReadyCheck: true,
    // A limiter's reads decide: never from a replica that may lag its primary.
    scaleReads: "master",
    maxRedirections: options.maxRedirections ?? c.maxRedirections,
    retryDelayOnMoved: 0,
    retryDelayOnTryAgain: options.tryAgainDelayMs ?? c.tryAgainDelayMs,
    // "Connection is closed" with a command in flight: it may have run, so it is never
    // re-sent (0 turns ioredis's failover resend off), as maxRetriesPerRequest 0 does above.
    retryDelayOnFailover: 0,
    // CLUSTERDOWN: fail at once (REDIS_UNAVAILABLE) and let the caller's fallback decide.
    retryDelayOnClusterDown: 0,
    slotsRefreshTimeout: options.slotsRefreshTimeoutMs ?? d.connectTimeoutMs,
    slotsRefreshInterval: options.slotsRefreshIntervalMs ?? c.slotsRefreshIntervalMs,
    clusterRetryStrategy: (attempt) =>
      attempt > d.maxReconnectAttempts
        ? null
        : reconnectDelayMs(attempt, d.reconnectBaseDelayMs, d.reconnectMaxDelayMs, random),
    // Off: a node restarted on its old address is found again through MOVED and the refresh.
    clusterNodeRetryStrategy: null,
    lazyConnect: true,
    // Per node: a command's keys pick the node; coalescing per node keeps one write per tick.
    enableAutoPipelining: options.autoPipelining ?? false,
    shardedSubscribers: false,
    redisOptions: node,
  };
}

/**
 * Opens a Redis Cluster client and resolves once the cluster is READY (slots known,
 * CLUSTER INFO ok), or rejects with `REDIS_UNAVAILABLE` within `connectTimeoutMs`.
 * Close it with `closeRedis`. Scripts run on it through ScriptRegistry like on `Redis`;
 * every call's keys must share one slot (give them one `{hash tag}`).
 *
 * @example
 * const cluster = await connectRedisCluster({ nodes: ["redis://10.0.0.1:6379", "redis://10.0.0.2:6379"] });
 */
export async function connectRedisCluster(options: RedisClusterConnectOptions): Promise<Cluster> {
  const { startupNodes, auth } = parseClusterNodes(options.nodes);
  const clusterOptions = redisClusterOptions(options);
  clusterOptions.redisOptions = { ...clusterOptions.redisOptions, ...auth };
  const cluster = new Cluster(startupNodes, clusterOptions);
  const onError = options.onError ?? (() => {});
  cluster.on("error", onError);
  cluster.on("node error", onError);
  if (options.lazyConnect === true) return cluster;
  const timeoutMs = options.connectTimeoutMs ?? redisConnectDefaults.connectTimeoutMs;
  try {
    await withDeadline(cluster.connect(), timeoutMs, "connect");
    return cluster;
  } catch (cause) {
    cluster.disconnect(false);
    const seeds = options.nodes.map(redactRedisUrl);
    throw redisErrors.create("REDIS_UNAVAILABLE", {
      detail: `Could not connect to the Redis Cluster at ${seeds.join(", ")} within ${timeoutMs} ms.`,
      fields: { nodes: seeds, phase: "connect", timeoutMs },
      cause,
    });
  }
}

export interface CloseRedisOptions {
  /** Bound on the graceful QUIT (pending replies are awaited) before the socket is dropped. */
  quitTimeoutMs?: number;
}

/**
 * Closes gracefully: QUIT lets in-flight replies arrive; if Redis does not answer within
 * `quitTimeoutMs` (or is already unreachable) the socket is dropped instead. Resolves once
 * the client has ended, so no timer or socket keeps the process alive. Safe to call twice.
 *
 * @example
 * process.once("SIGTERM", () => void closeRedis(redis, { quitTimeoutMs: 500 }));
 */
export async function closeRedis(redis: RedisClient, options: CloseRedisOptions = {}): Promise<void> {
  const quitTimeoutMs = options.quitTimeoutMs ?? defaultQuitTimeoutMs;
  if (isClusterClient(redis)) return closeCluster(redis, quitTimeoutMs);
  if (hasEnded(redis)) return;
  const ended = new Promise<void>((resolve) => redis.once("end", () => resolve()));
  if (redis.status === "ready") {
    try {
      await withDeadline(redis.quit(), quitTimeoutMs, "quit");
    } catch {
      // A stalled or dropped server: the graceful path failed, the forced one follows.
    }
  }
  if (hasEnded(redis)) return;
  // Between reconnect attempts there is no socket: disconnect() only cancels the pending
  // attempt, and no "end" event will follow.
  const hasSocket = ["connecting", "connect", "ready"].includes(redis.status);
  redis.disconnect(false);
  if (!hasSocket) return;
  try {
    await withDeadline(ended, quitTimeoutMs, "close");
  } catch {
    // disconnect() half-closed and waits for a FIN a stalled server never sends: drop it now.
    redis.stream?.destroy();
    await withDeadline(ended, quitTimeoutMs, "close").catch(() => {});
  }
}

/** Read through a function: the status changes across awaits, which TypeScript's narrowing cannot see. */
function hasEnded(redis: RedisClient): boolean {
  return redis.status === "end";
}

/** closeRedis for a cluster: QUIT every node, then drop whatever did not close in time. */
async function closeCluster(cluster: Cluster, quitTimeoutMs: number): Promise<void> {
  if (hasEnded(cluster)) return;
  const ended = new Promise<void>((resolve) => cluster.once("end", () => resolve()));
  const nodes = cluster.nodes("all");
  if (cluster.status === "ready") {
    try {
      await withDeadline(cluster.quit(), quitTimeoutMs, "quit");
    } catch {
      // A stalled or dropped node: the graceful path failed, the forced one follows.
    }
  }
  if (hasEnded(cluster)) return;
  cluster.disconnect(false);
  // Between reconnect attempts no node is connected: disconnect() only cancels the attempt.
  if (nodes.length === 0) return;
  try {
    await withDeadline(ended, quitTimeoutMs, "close");
  } catch {
    // A node that never sends its FIN keeps the cluster from ending: drop the sockets now.
    for (const node of nodes) node.stream?.destroy();
    await withDeadline(ended, quitTimeoutMs, "close").catch(() => {});
  }
}

function withDeadline<T>(promise: Promise<T>, timeoutMs: number, phase: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${phase} timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

function withDefaults(options: RedisConnectOptions) {
  const d = redisConnectDefaults;
  return {
    connectTimeoutMs: options.connectTimeoutMs ?? d.connectTimeoutMs,
    commandTimeoutMs: options.commandTimeoutMs ?? d.commandTimeoutMs,
    maxRetriesPerRequest: options.maxRetriesPerRequest ?? d.maxRetriesPerRequest,
    enableOfflineQueue: options.enableOfflineQueue ?? d.enableOfflineQueue,
    reconnectBaseDelayMs: options.reconnectBaseDelayMs ?? d.reconnectBaseDelayMs,
    reconnectMaxDelayMs: options.reconnectMaxDelayMs ?? d.reconnectMaxDelayMs,
    maxReconnectAttempts: options.maxReconnectAttempts ?? d.maxReconnectAttempts,
  };
}
