/**
 * The two stream engines a stream contract suite runs on — the in-process twin, and the
 * real NATS JetStream (this machine's at 4222, or `CASEBOOK_TEST_NATS_URL`) — as
 * contract-suite backends. JetStream skips when it is unreachable, or fails when
 * `CASEBOOK_REQUIRE_ENGINES=1` (CI). Suites name their streams with `uniqueName` and
 * delete them, so they share the server with everybody else.
 *
 * @example
 * contractSuite("stream", streamBackends(), (it) => {
 *   it("publishes", async ({ client }) => { await client.publish("t.a", "x"); });
 * });
 */
import { InProcessStreamServer } from "@casebook/infra/stream/in-process-stream";
import { type JetStreamOptions, openJetStream } from "@casebook/infra/stream/jetstream-stream";
import type { StreamClient } from "@casebook/infra/stream/stream";
import type { Backend } from "./contract-suite.ts";
import { assertEngineAllowed, enginesRequired, type SkippableContext, tcpReachable } from "./test-engines.ts";

export const testNatsUrl = process.env.CASEBOOK_TEST_NATS_URL ?? "nats://127.0.0.1:4222";

/** The real NATS URL, or undefined after skipping `t` when it is down (fails in CI). */
export async function requireNats(t: SkippableContext, url = testNatsUrl): Promise<string | undefined> {
  assertEngineAllowed("NATS");
  const parsed = new URL(url);
  if (await tcpReachable(parsed.hostname || "127.0.0.1", Number(parsed.port || 4222))) return url;
  const why = `NATS not reachable at ${url}`;
  if (enginesRequired) throw new Error(`${why} (CASEBOOK_REQUIRE_ENGINES=1 makes this a failure)`);
  t.skip(why);
  return undefined;
}

export interface StreamSubject {
  client: StreamClient;
  /** A second, independent client of the same engine: a new connection, as after a process restart. */
  connect(): Promise<StreamClient>;
}

/** Small bounds, so a stuck engine fails a test in seconds, not minutes. */
export const TEST_JETSTREAM_BOUNDS: Omit<JetStreamOptions, "url"> = {
  connectTimeoutMs: 2_000,
  requestTimeoutMs: 3_000,
  maxReconnectAttempts: 20,
  reconnectWaitMs: 100,
};

/** The twin and JetStream, as contract-suite backends. */
export function streamBackends(): Backend<StreamSubject>[] {
  return [
    {
      name: "in-process",
      embedded: true,
      async open() {
        const server = new InProcessStreamServer();
        const opened: StreamClient[] = [server.connect()];
        const connect = async () => {
          const client = server.connect();
          opened.push(client);
          return client;
        };
        return {
          subject: { client: opened[0] as StreamClient, connect },
          close: async () => {
            await Promise.all(opened.map((c) => c.close()));
          },
        };
      },
    },
    {
      name: "jetstream",
      async open(t) {
        const url = await requireNats(t);
        if (!url) return undefined;
        const opened: StreamClient[] = [];
        const connect = async () => {
          const client = await openJetStream({
            ...TEST_JETSTREAM_BOUNDS,
            url,
            name: "casebook-stream-contract",
          });
          opened.push(client);
          return client;
        };
        const client = await connect();
        return {
          subject: { client, connect },
          close: async () => {
            await Promise.all(opened.map((c) => c.close()));
          },
        };
      },
    },
  ];
}
