/**
 * The service's settings: defaults (port 8113, 24 h retention, https only, no private
 * networks), the SSRF policy they build, and a bad start refused with ONE message that
 * names every variable at fault — per field, and across fields (the lease must outlast the
 * HTTP deadline; payloads must outlive the retry window; CIDRs must parse).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkAddress } from "@casebook/kit/address-policy";
import { ConfigError } from "@casebook/kit/config";
import { loadWebhooksConfig, PRIVATE_NETWORK_CIDRS } from "../src/config.ts";
import { main } from "../src/main.ts";

test("defaults: port 8113, a 24 h window, https only, public addresses only", () => {
  const config = loadWebhooksConfig({});
  assert.equal(config.port, 8113);
  assert.equal(config.retentionHours, 24);
  assert.equal(config.payloadRetentionHoursResolved, 24);
  assert.equal(config.workers, true);
  assert.ok(config.leaseMs >= config.httpDeadlineMs + 1_000);
  assert.equal(config.urlPolicy.allowHttp, false);
  for (const ip of ["127.0.0.1", "10.0.0.1", "169.254.169.254", "::1"]) {
    assert.equal(checkAddress(ip, config.urlPolicy).allowed, false, ip);
  }
  assert.equal(checkAddress("93.184.216.34", config.urlPolicy).allowed, true);
});

test("WEBHOOKS_ALLOW_PRIVATE_NETWORKS opens loopback and private space, never link-local; the allow and deny lists apply", () => {
  const config = loadWebhooksConfig({
    WEBHOOKS_ALLOW_PRIVATE_NETWORKS: "true",
    WEBHOOKS_ALLOW_CIDRS: " 203.0.113.0/24 ,",
    WEBHOOKS_DENY_CIDRS: "10.9.0.0/16",
  });
  assert.equal(config.urlPolicy.allow.length, PRIVATE_NETWORK_CIDRS.length + 1);
  for (const ip of ["127.0.0.1", "10.0.0.1", "192.168.1.1", "fd00::1", "203.0.113.9"]) {
    assert.equal(checkAddress(ip, config.urlPolicy).allowed, true, ip);
  }
  for (const ip of ["169.254.169.254", "fe80::1", "10.9.1.1"]) {
    assert.equal(checkAddress(ip, config.urlPolicy).allowed, false, ip);
  }
});

test("one ConfigError names every bad variable: per field and across fields", () => {
  assert.throws(
    () =>
      loadWebhooksConfig({
        PORT: "http",
        WEBHOOKS_RETENTION_HOURS: "48",
        WEBHOOKS_ALLOW_CIDRS: "127.0.0.1/33,not-a-range",
      }),
    (err: unknown) =>
      err instanceof ConfigError && /PORT/.test(err.message) && /WEBHOOKS_RETENTION_HOURS/.test(err.message),
  );
  assert.throws(
    () =>
      loadWebhooksConfig({
        WEBHOOKS_HTTP_DEADLINE_MS: "30s",
        WEBHOOKS_LEASE_MS: "30s",
        WEBHOOKS_RETENTION_HOURS: "24",
        WEBHOOKS_PAYLOAD_RETENTION_HOURS: "12",
        WEBHOOKS_ALLOW_CIDRS: "127.0.0.1/33,not-a-range",
      }),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      const envs = err.problems.map((p) => p.env);
      assert.deepEqual(envs.sort(), [
        "WEBHOOKS_ALLOW_CIDRS",
        "WEBHOOKS_ALLOW_CIDRS",
        "WEBHOOKS_LEASE_MS",
        "WEBHOOKS_PAYLOAD_RETENTION_HOURS",
      ]);
      assert.match(err.message, /second worker/);
      return true;
    },
  );
});

test("a bad setting fails main() before anything starts, and a secret is never quoted", async () => {
  await assert.rejects(
    main({ LOG_LEVEL: "silent", PORT: "0", WEBHOOKS_ADMIN_TOKEN: "short-token" }),
    (err: unknown) =>
      err instanceof ConfigError &&
      /WEBHOOKS_ADMIN_TOKEN/.test(err.message) &&
      !/short-token/.test(err.message),
  );
  await assert.rejects(
    main({ LOG_LEVEL: "silent", PORT: "0", WEBHOOKS_LEASE_MS: "1s" }),
    (err: unknown) => err instanceof ConfigError && /WEBHOOKS_LEASE_MS=1000 must be >= /.test(err.message),
  );
});
