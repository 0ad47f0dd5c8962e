/**
 * The demo receiver the README's quick start uses (the tenant's side of WH-13 / WH-14): a
 * webhook signed with its secret is accepted once (204) and recognised as a duplicate after
 * (200, as a receiver that already did the work should answer); a wrong secret, a stale
 * timestamp, a GET and an oversized body are refused — and only accepted ones are recorded.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { signedHeaders } from "../src/domain/signature.ts";
import { type DemoReceiver, startDemoReceiver } from "../src/tools/demo-receiver.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OTHER = "whsec_AUl0kdCTK43/J9eLhGESC2kNaQQTibir";
const lines: Record<string, unknown>[] = [];
let receiver: DemoReceiver;

before(async () => {
  receiver = await startDemoReceiver({
    secrets: [SECRET],
    port: 0,
    maxBodyBytes: 1_024,
    log: (l) => lines.push(l),
  });
});
after(() => receiver.close());

function post(id: string, options: { secret?: string; ageS?: number; body?: string } = {}) {
  const body = options.body ?? JSON.stringify({ type: "invoice.paid", timestamp: "t", data: { n: 1 } });
  const timestampS = Math.floor(Date.now() / 1_000) - (options.ageS ?? 0);
  const headers = signedHeaders({ id, timestampS, body, secrets: [options.secret ?? SECRET] });
  return fetch(`${receiver.url}/hooks`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body,
  });
}

test("WH-13 WH-14 a verified webhook is accepted once, then answered as a duplicate; forgeries and stale ones are refused", async () => {
  assert.equal((await post("msg_1")).status, 204);
  const again = await post("msg_1");
  assert.equal(again.status, 200);
  assert.deepEqual(await again.json(), { duplicate: true });
  const forged = await post("msg_2", { secret: OTHER });
  assert.equal(forged.status, 401);
  assert.deepEqual(await forged.json(), { error: "signature invalid", reason: "no-matching-signature" });
  assert.equal((await post("msg_3", { ageS: 3_600 })).status, 401, "outside the 5-minute tolerance");
  assert.equal((await post("msg_4", { body: "x".repeat(2_048) })).status, 413);
  assert.equal((await fetch(`${receiver.url}/hooks`)).status, 405);
  assert.deepEqual(
    receiver.received.map((w) => [w.id, w.type, w.duplicate]),
    [
      ["msg_1", "invoice.paid", false],
      ["msg_1", "invoice.paid", true],
    ],
  );
  assert.equal(receiver.rejected, 4);
  assert.deepEqual(
    lines.filter((l) => l.msg === "webhook received").map((l) => l.data),
    ['{"n":1}', '{"n":1}'],
  );
  const waited = await receiver.waitFor((w) => w.id === "msg_1", 10);
  assert.equal(waited.id, "msg_1");
  await assert.rejects(
    receiver.waitFor((w) => w.id === "never", 20),
    /no matching webhook within 20 ms/,
  );
});
