/**
 * CH-20's event through the outbox, on real engines (PostgreSQL, a private nats-server): a
 * channel message's ONE stream event is written with the message (`channel_events`), the send
 * service publishes it and marks it, and a send service that stops with its publish undone —
 * the stream down, its in-memory retries gone with it — leaves the event to another send
 * service's relay, which publishes it once the stream is back: every member connected there
 * gets the message live, without a sync. Two send services share one database (PostgreSQL: a
 * PGlite directory has one opener).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { openStream } from "@casebook/infra/stream/open-stream";
import type { StreamClient } from "@casebook/infra/stream/stream";
import { type SpawnedNats, spawnNats } from "@casebook/lab/spawn-nats";
import { enginesRequired } from "@casebook/lab/test-engines";
import { CHANNEL_EVENT_GRACE_MS } from "../src/store/channel-event-outbox.ts";
import {
  engineEnv,
  openChannel,
  receivedBy,
  startSystem,
  type TestSocket,
  type TestSystem,
} from "./system-fixture.ts";

const MEMBERS = 6;
const MAX_DELIVERY_MS = 30_000;

async function relayed(sys: TestSystem): Promise<number> {
  const text = await (await fetch(`${sys.running.url}/metrics`)).text();
  return Number(/^chat_channel_events_relayed_total (\d+)$/m.exec(text)?.[1] ?? "0");
}

test("CH-20 a channel event is published at least once: the send path's own publish is marked (no second one); a send service stopped with the stream down leaves it to another's outbox relay, and every member gets the message live once the stream is back", async (t) => {
  const engine = await engineEnv();
  if (engine.env.DATABASE_URL === undefined) {
    await engine.drop();
    if (enginesRequired) throw new Error("PostgreSQL is required: two send services share one database");
    return t.skip("no PostgreSQL here: two send services cannot share a PGlite directory");
  }
  let nats: SpawnedNats;
  try {
    nats = await spawnNats({ install: false, maxFileStoreBytes: 2 * 1_024 ** 3 });
  } catch (err) {
    await engine.drop();
    if (enginesRequired) throw err;
    return t.skip(`no nats-server with JetStream here: ${(err as Error).message}`);
  }
  const env = {
    ...engine.env,
    NATS_URL: nats.url,
    CHAT_STREAM: `CHAT_T_${randomUUID().slice(0, 8)}`,
    CHAT_CHANNEL_SLICES: "2",
  };
  const systems: TestSystem[] = [];
  const sockets: TestSocket[] = [];
  let probe: StreamClient | undefined;
  t.after(async () => {
    await Promise.allSettled(sockets.map((s) => s.close()));
    await Promise.allSettled([probe?.close()]);
    await Promise.allSettled(systems.map((s) => s.close()));
    await nats.stop();
    await engine.drop();
  });
  // The survivor: every member's socket is on it.
  const survivor = await startSystem(env);
  systems.push(survivor);
  probe = await openStream({ system: "chat-test", url: nats.url, env: {} });
  const { chatId, owner } = await openChannel(survivor, "ch", MEMBERS, sockets);
  const everyoneGot = (id: string) => receivedBy(sockets, id, MAX_DELIVERY_MS);
  const events = async () => (await probe!.streamState(env.CHAT_STREAM)).messages;

  // The common case: published by the send path and marked — past the grace, no relay publishes it again.
  const before = await events();
  const sent = await survivor.api<{ message: { id: string } }>(
    owner,
    "POST",
    `/v1/conversations/${chatId}/messages`,
    {
      clientMsgId: randomUUID(),
      body: "no caminho normal",
    },
  );
  assert.equal(sent.status, 201);
  assert.equal(await everyoneGot(sent.json.message.id), MEMBERS);
  await sleep(CHANNEL_EVENT_GRACE_MS + 1_500);
  assert.equal((await events()) - before, 1, "one stream event: the relay left the marked row alone");
  assert.equal(await relayed(survivor), 0);

  // A second send service takes a message while the stream is down, then stops: its publish
  // failed and its retries die with it. The event waits in the outbox.
  const doomed = await startSystem(env);
  systems.push(doomed);
  await nats.kill();
  const during = await doomed.api<{ message: { id: string } }>(
    await doomed.token("ch-0"),
    "POST",
    `/v1/conversations/${chatId}/messages`,
    { clientMsgId: randomUUID(), body: "enviada antes da parada" },
  );
  assert.equal(during.status, 201, "stored while the stream is down");
  await doomed.running.close();
  systems.pop();
  await nats.restart();
  assert.equal(
    await everyoneGot(during.json.message.id),
    MEMBERS,
    "every member got it live, from the survivor's relay",
  );
  assert.equal(await relayed(survivor), 1, "published by the outbox relay");
});
