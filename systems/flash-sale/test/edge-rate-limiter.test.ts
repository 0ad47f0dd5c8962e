/**
 * FS-14 against the running rate-limiter system: its service started as its own process through
 * its real entry (lab's server process; this system never imports its code — they speak HTTP,
 * as deployed), with a per-IP token bucket in its policy file. The flash sale's edge asks it for
 * every public call: an IP past the bucket gets 429 with the limiter's Retry-After, another IP
 * passes, and with the limiter stopped the edge fails open (best effort; the counter decides).
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { startServerProcess } from "@casebook/lab/server-process";
import { apiWorld } from "./api-fixture.ts";

const rateLimiterEntry = new URL("../../rate-limiter/src/main.ts", import.meta.url);
const BURST = 3;

test("FS-14 with the rate-limiter service running: past the per-IP bucket 429 with its Retry-After, another IP passes; the service stopped, the edge fails open", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-flash-rl-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const policies = join(dir, "policies.json");
  await writeFile(
    policies,
    JSON.stringify({
      domain: "flash",
      policies: [
        {
          name: "per-ip",
          key: "ip:{ip}",
          limit: { algorithm: "token-bucket", capacity: BURST, ratePerS: 0.01 },
          failMode: "open",
        },
      ],
    }),
  );
  const limiter = await startServerProcess({
    name: "rate-limiter",
    entry: rateLimiterEntry,
    env: { RATE_LIMITER_POLICIES: policies, LOG_LEVEL: "warn", REDIS_URL: "" },
  });
  t.after(() => limiter.stop());
  // The 429 below must be the limiter's: at the 200 ms default one stall of a loaded host would
  // time the check out and let the call through (fail open). Stopped, it refuses at once.
  const world = await apiWorld({ RATE_LIMITER_URL: limiter.url, FLASH_SALE_RATE_LIMITER_TIMEOUT_MS: "5000" });
  t.after(() => world.close());
  const saleId = await world.sale();
  const get = (ip: string) =>
    world.running.service.app.inject({ method: "GET", url: `/v1/sales/${saleId}/room`, remoteAddress: ip });

  for (let i = 0; i < BURST; i++)
    assert.equal((await get("10.0.0.7")).statusCode, 200, `call ${i + 1} of the burst`);
  const refused = await get("10.0.0.7");
  assert.equal(refused.statusCode, 429);
  assert.equal(refused.json().code, "EDGE_RATE_LIMITED");
  // One token at 0.01/s: the limiter says ~100 s; the edge rounds up to whole seconds.
  const retryAfter = Number(refused.headers["retry-after"]);
  assert.ok(retryAfter >= 90 && retryAfter <= 100, `Retry-After ${retryAfter}`);
  assert.equal((await get("10.0.0.8")).statusCode, 200, "another address has its own bucket");

  await limiter.stop();
  assert.equal((await get("10.0.0.7")).statusCode, 200, "the limiter is down: best effort lets it through");
});
