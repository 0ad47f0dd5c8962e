/**
 * The send path's redelivery (CH-03): a message is stored first; when its live delivery then
 * fails (the session table or the routing bus away — Redis restarting), the delivery is tried
 * again after a pause, so the recipient's live device gets it once Redis is back instead of at
 * its next sync; the tries are bounded, and a drain drops the waiting ones (the history has
 * them). In-process ports: the session table and routing bus twins, a routing bus that fails
 * while "down".
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { systemClock } from "@casebook/kit/clock";
import type { Message } from "../src/domain/conversation.ts";
import type { AppendResult, HistoryPort, NewMessage } from "../src/domain/history-port.ts";
import type { RoutedEnvelope, RoutingBus } from "../src/domain/routing.ts";
import { REDELIVERY_DELAYS_MS, SendPath } from "../src/domain/send-path.ts";
import { MemoryRouting } from "../src/store/memory-routing.ts";
import { MemorySessions } from "../src/store/memory-sessions.ts";
import { until } from "./system-fixture.ts";

/** A routing bus that throws while `down`, like a publish on a lost Redis link. */
class FlakyRouting implements RoutingBus {
  readonly inner = new MemoryRouting();
  down = true;
  publish(gatewayId: string, envelope: RoutedEnvelope): Promise<number> {
    return this.publishMany(gatewayId, [envelope]);
  }
  publishMany(gatewayId: string, envelopes: readonly RoutedEnvelope[]): Promise<number> {
    if (this.down) return Promise.reject(new Error("Redis is away"));
    return this.inner.publishMany(gatewayId, envelopes);
  }
  subscribe(gatewayId: string, handler: (envelope: RoutedEnvelope) => void): Promise<void> {
    return this.inner.subscribe(gatewayId, handler);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

let nextSeq = 0n;
const history = {
  async append(input: NewMessage): Promise<AppendResult> {
    const message: Message = { ...input, seq: ++nextSeq, createdAtMs: input.nowMs };
    return { message, kind: "group", created: true, recipients: ["ana", "bruno"] };
  },
} as unknown as HistoryPort;

/** Lets the promise chains a tick started run to their end (setImmediate is not mocked). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

async function world() {
  const sessions = new MemorySessions();
  await sessions.put({
    userId: "bruno",
    deviceId: "phone",
    gatewayId: "gw",
    connectionId: "c1",
    expiresAtMs: Date.now() + 60_000,
  });
  const routing = new FlakyRouting();
  const got: string[] = [];
  await routing.subscribe("gw", (envelope) => got.push((envelope.frame.message as { id: string }).id));
  const errors: unknown[] = [];
  const path = new SendPath({
    history,
    offsets: { offsetOf: async () => 0n },
    sessions,
    routing,
    offline: { notify: async () => {} },
    clock: systemClock,
    onDeliveryError: (err) => errors.push(err),
  });
  const send = (id: bigint) =>
    path.send({
      chatId: 1n,
      id,
      clientMsgId: crypto.randomUUID(),
      senderId: "ana",
      senderDevice: "phone",
      body: "hi",
      nowMs: Date.now(),
    });
  return { path, routing, got, errors, send };
}

test("CH-03 a delivery that failed after the write is tried again: the live device gets the message once Redis is back", async () => {
  const { path, routing, got, errors, send } = await world();
  const sent = await send(101n);
  await sent.delivered;
  assert.equal(errors.length, 1, "the first try failed and was counted");
  assert.equal(path.redeliveriesWaiting, 1);
  routing.down = false;
  await until(() => got.includes("101"), "the message reaches bruno's gateway after Redis is back", 5_000);
  assert.equal(path.redeliveriesWaiting, 0);
  await path.drain();
});

test("CH-03 redelivery is bounded: after the last pause the message waits in the history, and a drain drops what still waits", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const { path, errors, send } = await world();
  await (await send(201n)).delivered;
  for (const delayMs of REDELIVERY_DELAYS_MS) {
    assert.equal(path.redeliveriesWaiting, 1);
    t.mock.timers.tick(delayMs);
    await settle();
  }
  assert.equal(errors.length, REDELIVERY_DELAYS_MS.length + 1, "one try, then one per pause");
  assert.equal(path.redeliveriesWaiting, 0, "no try after the last pause");
  await (await send(202n)).delivered;
  assert.equal(path.redeliveriesWaiting, 1);
  await path.drain();
  assert.equal(path.redeliveriesWaiting, 0, "a drain drops the waiting tries");
});
