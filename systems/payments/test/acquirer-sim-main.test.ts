import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { spawnChild } from "@casebook/lab/spawn-child";
import { main } from "../src/sim/acquirer-main.ts";

const entry = fileURLToPath(new URL("../src/sim/acquirer-main.ts", import.meta.url));

test("main(env) starts the simulator from its environment; a bad value fails the start naming it", async () => {
  await assert.rejects(main({ PORT: "0", ACQUIRER_DECLINE_RATE: "2" }), /ACQUIRER_DECLINE_RATE/);
  const running = await main({
    PORT: "0",
    ACQUIRER_SEED: "main-test",
    ACQUIRER_DECLINE_RATE: "1",
    LOG_LEVEL: "silent",
  });
  try {
    const res = await fetch(`${running.url}/v1/authorizations`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        idempotencyKey: "m-1",
        merchantId: "m",
        amountMinor: 1,
        currency: "BRL",
        cardToken: "tok",
      }),
    });
    assert.equal(((await res.json()) as { outcome: string }).outcome, "declined");
  } finally {
    await running.close();
  }
});

test("beyond loopback without ACQUIRER_ADMIN_TOKEN the simulator refuses to start, naming the setting", async () => {
  await assert.rejects(
    main({ HOST: "0.0.0.0", PORT: "0", LOG_LEVEL: "silent" }),
    /HOST=0\.0\.0\.0 listens beyond loopback without credentials: set ACQUIRER_ADMIN_TOKEN/,
  );
});

test("acquirer-main.ts runs as its own process and exits 0 on SIGTERM", { timeout: 20_000 }, async (t) => {
  // Ready is the log line that carries its URL (every line is pino JSON).
  const listening = (line: string) => (JSON.parse(line) as { msg?: string }).msg === "acquirer-sim listening";
  const child = await spawnChild(entry, {
    env: { ...process.env, PORT: "0", LOG_LEVEL: "info", ACQUIRER_SEED: "1" },
    ready: listening,
    readyTimeoutMs: 15_000,
    test: t,
  });
  const url = (JSON.parse(child.readyLine) as { url?: string }).url;
  assert.ok(url, "the process logged its URL");
  assert.equal((await fetch(`${url}/healthz`)).status, 200);
  child.process.kill("SIGTERM");
  const { code } = await child.exited;
  assert.equal(code, 0);
});
