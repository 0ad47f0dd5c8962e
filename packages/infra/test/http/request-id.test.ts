import assert from "node:assert/strict";
import { test } from "node:test";
import { acceptRequestId, maxRequestIdLength, requestIdGenerator } from "../../src/http/request-id.ts";

test("safe incoming ids are kept as sent", () => {
  for (const id of [
    "abc",
    "0f8fad5b-d9cb-469f-a165-70867728950e",
    "svc:checkout.v2_7",
    "x".repeat(maxRequestIdLength),
  ]) {
    assert.equal(acceptRequestId(id), id);
  }
});

test("empty, oversized, repeated or unsafe ids are refused", () => {
  for (const id of [
    "",
    "x".repeat(maxRequestIdLength + 1),
    "a b",
    "a\nb",
    "a\r\nset-cookie: x",
    "<script>",
    "é",
    '"q"',
  ]) {
    assert.equal(acceptRequestId(id), undefined, JSON.stringify(id));
  }
  assert.equal(acceptRequestId(["a", "b"]), undefined);
  assert.equal(acceptRequestId(undefined), undefined);
});

test("the generator prefers the header and falls back to newId()", () => {
  let n = 0;
  const generate = requestIdGenerator(() => `new-${++n}`);
  assert.equal(generate({ headers: { "x-request-id": "from-caller" } }), "from-caller");
  assert.equal(generate({ headers: { "x-request-id": "bad id" } }), "new-1");
  assert.equal(generate({ headers: {} }), "new-2");
  assert.match(requestIdGenerator()({ headers: {} }), /^[0-9a-f-]{36}$/);
});
