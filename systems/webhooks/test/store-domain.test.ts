/** The store's pure helpers: ids, cursors, API keys, event types and filters, ordering paths. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { apiKeyMatches, apiKeyScheme } from "@casebook/kit/api-key";
import { decodeCursor, encodeCursor } from "../src/domain/store-cursor.ts";
import {
  checkEventFilters,
  checkEventType,
  eventTypeMatches,
  filtersSelect,
  parseOrderingKeyPath,
} from "../src/domain/store-event-type.ts";
import { isId, newId } from "../src/domain/store-ids.ts";
import { storeErrors } from "../src/errors.ts";

const isCode = (code: Parameters<typeof storeErrors.is>[1]) => (err: unknown) => storeErrors.is(err, code);

test("ids are <kind>_<32 hex>, 128 random bits, and checked by shape", () => {
  const id = newId("msg", randomBytes);
  assert.match(id, /^msg_[0-9a-f]{32}$/);
  assert.ok(isId("msg", id));
  assert.ok(!isId("sub", id), "a message id is not a subscription id");
  assert.ok(!isId("msg", `${id}0`) && !isId("msg", 42));
  assert.notEqual(newId("msg", randomBytes), newId("msg", randomBytes));
  assert.throws(() => newId("dlv", () => new Uint8Array(3)), /3 bytes/);
});

test("a cursor round-trips its position and refuses another listing, tampering and junk", () => {
  const cursor = encodeCursor("deliveries", [1_735_689_600_000, "dlv_00"]);
  assert.deepEqual(decodeCursor("deliveries", cursor, ["number", "string"]), [1_735_689_600_000, "dlv_00"]);
  assert.throws(
    () => decodeCursor("attempts", cursor, ["number", "string"]),
    isCode("WEBHOOK_CURSOR_INVALID"),
  );
  assert.throws(() => decodeCursor("deliveries", cursor, ["number"]), isCode("WEBHOOK_CURSOR_INVALID"));
  assert.throws(
    () => decodeCursor("deliveries", "not-base64-json", ["number"]),
    isCode("WEBHOOK_CURSOR_INVALID"),
  );
  const forged = Buffer.from(JSON.stringify([1, "deliveries", 1.5, "x"])).toString("base64url");
  assert.throws(
    () => decodeCursor("deliveries", forged, ["number", "string"]),
    isCode("WEBHOOK_CURSOR_INVALID"),
  );
  assert.throws(
    () => decodeCursor("deliveries", "x".repeat(600), ["number"]),
    isCode("WEBHOOK_CURSOR_INVALID"),
  );
});

test("an API key is shown once; only its sha256 is kept; a wrong or malformed key never matches", () => {
  const tenantKeys = apiKeyScheme("whk");
  const newTenantApiKey = tenantKeys.issue;
  const parseTenantApiKey = tenantKeys.parse;
  const tenantApiKeyMatches = apiKeyMatches;
  const issued = newTenantApiKey(randomBytes);
  assert.match(issued.key, /^whk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
  assert.ok(issued.key.startsWith(issued.prefix));
  assert.ok(!issued.hash.includes(issued.key.slice(21)), "the secret is not in the stored hash");
  const presented = parseTenantApiKey(issued.key)!;
  assert.equal(presented.prefix, issued.prefix);
  assert.ok(tenantApiKeyMatches(presented.hash, issued.hash));
  const other = newTenantApiKey(randomBytes);
  assert.ok(!tenantApiKeyMatches(parseTenantApiKey(other.key)!.hash, issued.hash));
  assert.equal(parseTenantApiKey(`${issued.key}x`), undefined);
  assert.equal(parseTenantApiKey("sk_live_123"), undefined);
  assert.ok(!tenantApiKeyMatches("00", issued.hash), "a short hash is refused without throwing");
});

test("event types are dotted names; filters are exact, prefix.* or *", () => {
  assert.equal(checkEventType("invoice.paid"), "invoice.paid");
  for (const bad of ["", ".x", "x.", "a..b", "a b", "a.*", "x".repeat(101), 7]) {
    assert.throws(() => checkEventType(bad), isCode("WEBHOOK_EVENT_INVALID"), String(bad));
  }
  assert.deepEqual(checkEventFilters(["invoice.*", "user.created", "invoice.*"]), [
    "invoice.*",
    "user.created",
  ]);
  assert.equal(checkEventFilters(undefined), null);
  for (const bad of [[], ["inv*"], ["*.paid"], ["a.**"], "invoice.paid", Array(51).fill("a")]) {
    assert.throws(() => checkEventFilters(bad), isCode("WEBHOOK_SUBSCRIPTION_INVALID"), JSON.stringify(bad));
  }
  assert.ok(eventTypeMatches("*", "anything.at.all"));
  assert.ok(eventTypeMatches("invoice.*", "invoice.paid"));
  assert.ok(eventTypeMatches("invoice.*", "invoice.line.created"), "a prefix filter matches at any depth");
  assert.ok(!eventTypeMatches("invoice.*", "invoice"), "the prefix itself is not under it");
  assert.ok(!eventTypeMatches("invoice.*", "invoices.paid"));
  assert.ok(!eventTypeMatches("invoice.paid", "invoice.paid.late"));
  assert.ok(filtersSelect(null, "x") && !filtersSelect(["a.b"], "a.c"));
});

test("an ordering key path is 1..8 dotted segments", () => {
  assert.deepEqual(parseOrderingKeyPath("data.object.id"), ["data", "object", "id"]);
  assert.equal(parseOrderingKeyPath(undefined), null);
  for (const bad of ["", "a..b", "a.b c", "a.b.c.d.e.f.g.h.i", 3]) {
    assert.throws(() => parseOrderingKeyPath(bad), isCode("WEBHOOK_SUBSCRIPTION_INVALID"), String(bad));
  }
});
