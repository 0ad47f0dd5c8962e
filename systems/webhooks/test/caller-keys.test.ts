/**
 * The keys `casebook up` grants to the systems that publish to webhooks (WEBHOOKS_CALLER_API_KEYS,
 * payments and metrics): webhooks registers each at start for a tenant named after its caller, so
 * the caller's first event is accepted through the client it uses; a restart with the same keys
 * finds them in place, and a key already registered for another tenant fails the start.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { apiKeyScheme } from "@casebook/kit/api-key";
import { ConfigError } from "@casebook/kit/config";
import { WebhooksClient } from "../src/client/index.ts";
import { main } from "../src/main.ts";

function envFor(dir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PORT: "0", CASEBOOK_DATA: dir, LOG_LEVEL: "silent", WEBHOOKS_WORKERS: "off", ...extra };
}

test("a granted caller key publishes at once, and again after a restart with the same key", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-webhooks-callers-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const payments = apiKeyScheme("whk").issue(randomBytes).key;
  const granted = { WEBHOOKS_CALLER_API_KEYS: `payments=${payments}` };

  const first = await main(envFor(dir, granted));
  try {
    const client = new WebhooksClient({ url: first.url, apiKey: payments });
    const event = await client.publishEvent({
      type: "payment.captured",
      payload: { n: 1 },
      idempotencyKey: "e-1",
    });
    assert.equal(event.duplicate, false);
    const stranger = new WebhooksClient({
      url: first.url,
      apiKey: apiKeyScheme("whk").issue(randomBytes).key,
    });
    await assert.rejects(stranger.publishEvent({ type: "payment.captured", payload: {} }), "an unknown key");
  } finally {
    await first.close();
  }

  const second = await main(envFor(dir, granted));
  try {
    const client = new WebhooksClient({ url: second.url, apiKey: payments });
    const again = await client.publishEvent({
      type: "payment.captured",
      payload: { n: 1 },
      idempotencyKey: "e-1",
    });
    assert.equal(again.duplicate, true, "the same tenant after the restart: its event is known");
    const { rows } = await second.db.query<{ id: string; keys: string }>(
      `SELECT t.id, count(k.prefix)::text AS keys FROM tenants t JOIN tenant_api_keys k ON k.tenant_id = t.id
        WHERE t.id = 'payments' GROUP BY t.id`,
    );
    assert.deepEqual(rows, [{ id: "payments", keys: "1" }], "one tenant and one key, not one more per start");
  } finally {
    await second.close();
  }

  await assert.rejects(
    main(envFor(dir, { WEBHOOKS_CALLER_API_KEYS: `intruder=${payments}` })),
    /already registered/,
  );
});

test("a malformed WEBHOOKS_CALLER_API_KEYS fails the start naming it", async () => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-webhooks-callers-bad-"));
  try {
    const sk = `payments=${apiKeyScheme("sk").issue(randomBytes).key}`;
    for (const value of ["payments", sk]) {
      await assert.rejects(
        main(envFor(dir, { WEBHOOKS_CALLER_API_KEYS: value })),
        (err: unknown) => err instanceof ConfigError && /WEBHOOKS_CALLER_API_KEYS/.test(err.message),
      );
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
