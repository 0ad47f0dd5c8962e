/**
 * The address guard in the outbound client (architecture rule 8): loopback, private,
 * link-local and IPv4-mapped IPv6 targets refused unless the policy allows them, as IP
 * literals and as what a host name resolves to; every address of a name checked; the
 * connection made to the address that was checked (one resolution: a DNS rebinding on the
 * next lookup is refused there); DNS failures typed. The resolver is injected to play a
 * hostile DNS; the server is a real local one.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createAddressPolicy } from "@casebook/kit/address-policy";
import type { CasebookError } from "@casebook/kit/errors";
import { hostileDns } from "@casebook/lab/hostile-dns";
import { type MisbehavingServer, startMisbehavingServer } from "@casebook/lab/misbehaving-http-server";
import { checkUrlHost, type Resolver, resolveChecked } from "../../src/http/address-guard.ts";
import { OutboundClient } from "../../src/http/outbound.ts";
import { outboundErrors } from "../../src/http/outbound-errors.ts";

const timeouts = { connectMs: 1_000, headersMs: 1_000, bodyMs: 1_000 };
let server: MisbehavingServer;

before(async () => {
  server = await startMisbehavingServer();
});

after(() => server.close());

/** One GET through a fresh guarded client; what it resolved or rejected with. */
async function attempt(url: string, allow: string[] = [], resolver?: Resolver): Promise<unknown> {
  const client = new OutboundClient({
    addressGuard: { policy: createAddressPolicy({ allow }), ...(resolver === undefined ? {} : { resolver }) },
    timeouts,
  });
  try {
    return await client.request({ method: "GET", url });
  } catch (error) {
    return error;
  } finally {
    client.close();
  }
}

const refusedAs = (error: unknown, addressClass: string) =>
  outboundErrors.is(error, "OUTBOUND_ADDRESS_REFUSED") &&
  error.fields.addressClass === addressClass &&
  error.fields.phase === "policy";

test("IP literals: loopback, IPv4-mapped IPv6, private and link-local refused, nothing reaches the server", async () => {
  const before = server.received.length;
  const cases: [string, string][] = [
    [server.url("/ok"), "loopback"],
    [`http://[::1]:${server.port}/ok`, "loopback"],
    [`http://[::ffff:127.0.0.1]:${server.port}/ok`, "loopback"],
    [`http://[::ffff:7f00:1]:${server.port}/ok`, "loopback"],
    [`http://10.0.0.1:${server.port}/`, "private"],
    [`http://[fd00::1]:${server.port}/`, "private"],
    ["http://169.254.169.254/latest/meta-data", "link-local"],
    [`http://0.0.0.0:${server.port}/`, "unspecified"],
    [`http://localhost:${server.port}/ok`, "loopback"],
    [`http://api.localhost:${server.port}/ok`, "loopback"],
  ];
  for (const [url, addressClass] of cases) {
    const error = await attempt(url);
    assert.ok(refusedAs(error, addressClass), `${url}: ${String(error)}`);
  }
  assert.equal(server.received.length, before);
});

test("a host name resolving to loopback, private, link-local or mapped-private is refused before any connection", async () => {
  const before = server.received.length;
  const cases: [string, string][] = [
    ["127.0.0.1", "loopback"],
    ["10.0.0.5", "private"],
    ["169.254.169.254", "link-local"],
    ["::ffff:10.0.0.1", "private"],
    ["::1", "loopback"],
  ];
  for (const [address, addressClass] of cases) {
    const error = await attempt(
      `http://hooks.test:${server.port}/ok`,
      [],
      hostileDns(() => [address]),
    );
    assert.ok(refusedAs(error, addressClass), `${address}: ${String(error)}`);
    assert.equal((error as CasebookError).fields.address, address);
  }
  assert.equal(server.received.length, before);
});

test("one forbidden address refuses the whole name (no race between a public and a private answer)", async () => {
  const error = await attempt(
    "http://metadata.test/",
    [],
    hostileDns(() => ["8.8.8.8", "169.254.169.254"]),
  );
  assert.ok(refusedAs(error, "link-local"), String(error));
});

test("allowed by config: reached with one resolution, connected to the checked address, Host kept; a rebinding to a private address is refused", async () => {
  const dns = hostileDns((call) => (call === 1 ? ["127.0.0.1"] : ["10.0.0.1"]));
  const allow = ["127.0.0.1/32"];
  const response = await attempt(`http://hooks.test:${server.port}/ok`, allow, dns);
  assert.equal((response as { status: number }).status, 200, String(response));
  assert.equal((response as { remoteAddress: string }).remoteAddress, "127.0.0.1");
  assert.equal(dns.calls, 1, "resolved once: the socket connects to what was checked");
  assert.equal(server.received.at(-1)!.headers.host, `hooks.test:${server.port}`);
  const rebound = await attempt(`http://hooks.test:${server.port}/ok`, allow, dns);
  assert.ok(refusedAs(rebound, "private"), String(rebound));
  const literal = await attempt(server.url("/ok"), allow);
  assert.equal((literal as { status: number }).status, 200, "an allowed literal");
});

test("DNS failures are OUTBOUND_DNS_FAILED in the dns phase; a resolver that never answers is a connect timeout", async () => {
  const nxdomain: Resolver = async () => {
    throw Object.assign(new Error("queryA ENOTFOUND"), { code: "ENOTFOUND" });
  };
  const failed = await attempt("http://nope.test/", [], nxdomain);
  assert.ok(outboundErrors.is(failed, "OUTBOUND_DNS_FAILED"), String(failed));
  assert.deepEqual(
    [failed.fields.phase, failed.fields.code, failed.fields.hostname],
    ["dns", "ENOTFOUND", "nope.test"],
  );
  assert.ok(failed.cause instanceof Error);
  const empty = await attempt("http://empty.test/", [], async () => []);
  assert.ok(
    outboundErrors.is(empty, "OUTBOUND_DNS_FAILED") && empty.fields.code === "ENODATA",
    String(empty),
  );
  const client = new OutboundClient({
    addressGuard: { policy: createAddressPolicy(), resolver: () => new Promise(() => {}) },
    timeouts: { ...timeouts, connectMs: 200 },
  });
  try {
    const stalled = await client
      .request({ method: "GET", url: "http://stalled.test/" })
      .catch((e: unknown) => e);
    assert.ok(outboundErrors.is(stalled, "OUTBOUND_CONNECT_TIMEOUT"), String(stalled));
  } finally {
    client.close();
  }
});

test("the guard off (a configured internal URL): loopback is reached", async () => {
  const client = new OutboundClient({ addressGuard: "off", timeouts });
  try {
    assert.equal((await client.request({ method: "GET", url: server.url("/ok") })).status, 200);
  } finally {
    client.close();
  }
});

test("resolveChecked and checkUrlHost on their own: bounded answers, public names pass", async () => {
  const policy = createAddressPolicy();
  const many = Array.from({ length: 40 }, (_, i) => `8.8.${i}.8`);
  const kept = await resolveChecked("many.test", { policy, resolver: hostileDns(() => many) });
  assert.equal(kept.length, 16, "at most MAX_RESOLVED_ADDRESSES addresses");
  assert.doesNotThrow(() => checkUrlHost(new URL("https://hooks.example.com/"), policy));
  assert.doesNotThrow(() => checkUrlHost(new URL("https://8.8.8.8/"), policy));
  assert.throws(
    () => checkUrlHost(new URL("https://[::ffff:169.254.169.254]/"), policy),
    (e) => refusedAs(e, "link-local"),
  );
});
