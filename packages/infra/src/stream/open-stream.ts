/**
 * The composition-root choice of stream engine: NATS JetStream when a URL is configured
 * (`url` or `NATS_URL`), otherwise the in-process twin, so `npm start` runs on a bare
 * machine — the way `openDatabase` picks PostgreSQL or PGlite by `DATABASE_URL`.
 *
 * Every system in one process shares one in-process engine (as they would share one NATS
 * server), so a producer and a consumer started side by side see the same streams.
 *
 * @example
 * const stream = await openStream({ system: "chat" });
 * stream.backend; // "jetstream" when NATS_URL is set, else "in-process"
 */
import { InProcessStreamServer } from "./in-process-stream.ts";
import { type JetStreamOptions, openJetStream } from "./jetstream-stream.ts";
import type { StreamClient } from "./stream.ts";
import { streamErrors } from "./stream-errors.ts";

export interface OpenStreamOptions {
  /** The system's name (`metrics`): names the NATS connection (`casebook-<system>`). */
  system: string;
  /** NATS URL; wins over `NATS_URL`. */
  url?: string;
  /** Bounds of the JetStream client; see `JetStreamOptions` for each default. */
  jetstream?: Omit<JetStreamOptions, "url" | "name">;
  /** The in-process engine when no URL is set; default the process-wide one. */
  server?: InProcessStreamServer;
  /** Where NATS_URL is read; default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
}

const SYSTEM_PATTERN = /^[a-z][a-z0-9-]{0,62}$/;
let processServer: InProcessStreamServer | undefined;

/** The in-process engine every `openStream` without a URL shares in this process. */
export function processStreamServer(): InProcessStreamServer {
  processServer ??= new InProcessStreamServer();
  return processServer;
}

/** Opens a stream client on the configured engine; an unreachable NATS fails here, not at the first publish. */
export async function openStream(options: OpenStreamOptions): Promise<StreamClient> {
  if (!SYSTEM_PATTERN.test(options.system)) {
    throw streamErrors.create("STREAM_CONFIG_INVALID", {
      detail: "system must be lowercase letters, digits and '-' (63 at most)",
      fields: { setting: "system", value: options.system },
    });
  }
  const env = options.env ?? process.env;
  const url = options.url || env.NATS_URL;
  if (url) return openJetStream({ ...options.jetstream, url, name: `casebook-${options.system}` });
  return (options.server ?? processStreamServer()).connect();
}
