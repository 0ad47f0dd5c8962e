/**
 * The settings of chat: environment variables, validated at start — a bad value fails the
 * start with one message naming it (ARCHITECTURE rule 5), and `--help` lists them all.
 * One program, three roles (CHAT_ROLE): `api` the send service (history, HTTP API,
 * routing), `gateway` a socket holder that calls the send service at CHAT_API_URL, `all`
 * both in one process (the default, so `npm start` runs on a bare machine).
 *
 * @example
 * const config = loadSystemConfig({ PORT: "0", LOG_LEVEL: "silent" });
 * config.role; // "all"
 */
import { databaseFields, listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import { ConfigError, type ConfigOf, field, loadConfig } from "@casebook/kit/config";
import packageJson from "../package.json" with { type: "json" };
import { DEFAULT_MAX_MEDIA_BYTES, MAX_MEDIA_BYTES, UPLOAD_URL_TTL_MS } from "./domain/media.ts";
import { MAX_BACKEND_DEADLINE_MS, MAX_BACKEND_IN_FLIGHT } from "./gateway/backend-client.ts";
import { DEFAULT_GATEWAY_LIMITS as limits } from "./gateway/gateway.ts";

export const configSchema = {
  ...listenFields({ port: packageJson.casebook.port, portDescription: "HTTP port (0 = any free port)" }),
  role: field.enum(["all", "api", "gateway"], {
    env: "CHAT_ROLE",
    default: "all",
    description:
      "api: the send service; gateway: sockets only, calling CHAT_API_URL; all: both in one process",
  }),
  ...databaseFields({
    system: "chat",
    envPrefix: "CHAT_DB",
    fields: ["schema", "maxConnections", "statementTimeoutMs"],
  }),
  redisUrl: field.url({
    env: "REDIS_URL",
    protocols: ["redis:", "rediss:"],
    secret: true,
    description:
      "Redis for the session table and the routing between gateways; unset = in-process (one process only)",
  }),
  redisPrefix: field.string({
    env: "CHAT_REDIS_PREFIX",
    default: "chat:",
    pattern: /^[A-Za-z0-9:_-]{1,32}$/,
    description: "Prefix of every Redis key and channel (a test or a bench takes its own)",
  }),
  apiUrl: field.url({
    env: "CHAT_API_URL",
    protocols: ["http:", "https:"],
    description: "The send service a gateway calls (role gateway); unset with role all = this process",
  }),
  natsUrl: field.url({
    env: "NATS_URL",
    protocols: ["nats:", "tls:"],
    description:
      "NATS JetStream for the big-channel fan-out (CH-20); unset = the in-process stream (one process)",
  }),
  streamName: field.string({
    env: "CHAT_STREAM",
    default: "CHAT_CHANNELS",
    pattern: /^[A-Za-z0-9_-]{1,32}$/,
    description: "The JetStream stream of channel events (a test or a bench takes its own)",
  }),
  channelSlices: field.int({
    env: "CHAT_CHANNEL_SLICES",
    default: 3,
    min: 1,
    max: 64,
    description: "Slices of a channel's member index, one consumer and worker each (CH-20: 3 in the text)",
  }),
  pushUrl: field.url({
    env: "CHAT_PUSH_URL",
    protocols: ["http:", "https:"],
    description:
      "The push service (the push simulator, or a gateway to APNs/FCM); unset = no push notifications",
  }),
  jwtSecret: field.string({
    env: "CHAT_JWT_SECRET",
    minLength: 32,
    maxLength: 512,
    secret: true,
    description:
      "Key of the user tokens (HS256), shared by the send service and the gateways; unset = random per start (role all only)",
  }),
  issuerToken: field.string({
    env: "CHAT_ISSUER_TOKEN",
    minLength: 16,
    maxLength: 256,
    secret: true,
    description: "The app backend's token for POST /v1/tokens; unset = random, printed once at start",
  }),
  gatewayId: field.string({
    env: "CHAT_GATEWAY_ID",
    pattern: /^[A-Za-z0-9_.-]{1,64}$/,
    description: "This gateway's name in the session table (unset = host-pid-random)",
  }),
  heartbeatMs: field.durationMs({
    env: "CHAT_HEARTBEAT_MS",
    default: limits.heartbeatMs,
    min: 50,
    max: 300_000,
    description: "WebSocket ping period; no pong by the next one and the socket is cut (CH-12)",
  }),
  idleMs: field.durationMs({
    env: "CHAT_IDLE_MS",
    default: limits.idleMs,
    min: 100,
    max: 3_600_000,
    description: "A socket with no app frame this long is closed with 4002 (CH-13: 10 min)",
  }),
  lifetimeMs: field.durationMs({
    env: "CHAT_LIFETIME_MS",
    default: limits.lifetimeMs,
    min: 100,
    max: 24 * 3_600_000,
    description: "A socket older than this is closed with 4003 (CH-13: 2 h)",
  }),
  connectRatePerS: field.int({
    env: "CHAT_CONNECT_RATE_PER_S",
    default: limits.connectRatePerS,
    min: 1,
    max: 1_000_000,
    description: "New sockets per second a gateway accepts (CH-13: 500); past it the upgrade gets 503",
  }),
  connectMaxWaitMs: field.durationMs({
    env: "CHAT_CONNECT_MAX_WAIT_MS",
    default: limits.connectMaxWaitMs,
    min: 0,
    max: 60_000,
    description:
      "Past the connection rate's burst a new socket waits this long at most for its slot, then gets 503 (0: refused at once)",
  }),
  framesPerS: field.int({
    env: "CHAT_FRAMES_PER_S",
    default: limits.framesPerS,
    min: 1,
    max: 100_000,
    description: "Frames per second one socket may send, sustained (burst twice that)",
  }),
  drainMs: field.durationMs({
    env: "CHAT_DRAIN_MS",
    default: limits.drainMs,
    min: 0,
    max: 600_000,
    description: "On SIGTERM the gateway closes its sockets with 4000 spread over this long (CH-27)",
  }),
  backendDeadlineMs: field.durationMs({
    env: "CHAT_BACKEND_DEADLINE_MS",
    default: MAX_BACKEND_DEADLINE_MS,
    min: 100,
    max: MAX_BACKEND_DEADLINE_MS,
    description: "Bound on a gateway's call to the send service, all phases (CH-13: 29 s)",
  }),
  backendMaxInFlight: field.int({
    env: "CHAT_BACKEND_MAX_IN_FLIGHT",
    default: MAX_BACKEND_IN_FLIGHT,
    min: 1,
    max: 65_536,
    description:
      "Sends a gateway keeps in flight to the send service (in calls or waiting for one); past it a send is refused at once (BACKEND_UNAVAILABLE)",
  }),
  mediaDir: field.string({
    env: "CHAT_MEDIA_DIR",
    maxLength: 4_096,
    description:
      "Directory of the media objects (CH-24: the local stand-in for S3); unset = $CASEBOOK_DATA/chat-media",
  }),
  mediaMaxBytes: field.int({
    env: "CHAT_MEDIA_MAX_BYTES",
    default: DEFAULT_MAX_MEDIA_BYTES,
    min: 1,
    max: MAX_MEDIA_BYTES,
    description: "Largest media upload, in bytes (16 MiB by default)",
  }),
  mediaOrphanAfterMs: field.int({
    env: "CHAT_MEDIA_ORPHAN_AFTER_MS",
    default: 24 * 3_600_000,
    // Above an upload URL's lifetime (15 min), twice: a row is never swept while its upload may come.
    min: 2 * UPLOAD_URL_TTL_MS,
    max: 365 * 24 * 3_600_000,
    description:
      "An upload no message carries is deleted (row, then object) this long after it was authorized (24 h)",
  }),
  mediaSweepEveryMs: field.int({
    env: "CHAT_MEDIA_SWEEP_EVERY_MS",
    default: 10 * 60_000,
    min: 1_000,
    max: 24 * 3_600_000,
    description: "Pause between two rounds of the media orphan sweep (10 min)",
  }),
  mediaUrl: field.url({
    env: "CHAT_MEDIA_URL",
    protocols: ["http:", "https:"],
    description:
      "Origin of the pre-signed media URLs as clients reach the object store; unset = the origin each request came to",
  }),
  ...logLevelField(),
};

export type SystemConfig = ConfigOf<typeof configSchema>;

export function loadSystemConfig(env: NodeJS.ProcessEnv): SystemConfig {
  const config = loadConfig(configSchema, { env });
  const problem = (setting: string, envName: string, expected: string) =>
    new ConfigError([
      {
        setting,
        env: envName,
        source: "missing",
        value: undefined,
        expected,
        message: `${envName} is unset: expected ${expected}`,
      },
    ]);
  if (config.role === "gateway" && config.apiUrl === undefined) {
    throw problem("apiUrl", "CHAT_API_URL", "the send service's URL when CHAT_ROLE=gateway");
  }
  if (config.role !== "all" && config.jwtSecret === undefined) {
    throw problem(
      "jwtSecret",
      "CHAT_JWT_SECRET",
      "a shared secret of 32+ characters when the roles run apart",
    );
  }
  if (config.role !== "all" && config.redisUrl === undefined) {
    throw problem("redisUrl", "REDIS_URL", "Redis for sessions and routing when the roles run apart");
  }
  return config;
}
