/**
 * The SSRF policy (architecture rule 8, issue 4): allow/deny lists, and endpoint URL
 * validation, including the URL parser's odd IPv4 spellings. The address classes and the
 * IP parsing under it are kit's (packages/kit/test/address-class.test.ts).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkAddress } from "@casebook/kit/address-policy";
import { createUrlPolicy, validateEndpointUrl } from "../src/domain/url-policy.ts";
import { deliveryErrors } from "../src/errors.ts";

test("checkAddress: public only, unless allow-listed; the deny list wins over both", () => {
  const none = createUrlPolicy();
  assert.deepEqual(checkAddress("127.0.0.1", none), {
    allowed: false,
    addressClass: "loopback",
    reason: "loopback address",
  });
  assert.equal(checkAddress("8.8.8.8", none).allowed, true);
  assert.equal(checkAddress("not-an-ip", none).allowed, false);
  const tests = createUrlPolicy({ allow: ["127.0.0.1/32"], deny: ["8.8.8.0/24"] });
  assert.equal(checkAddress("127.0.0.1", tests).allowed, true);
  assert.equal(
    checkAddress("::ffff:127.0.0.1", tests).allowed,
    true,
    "the mapped form of an allowed address",
  );
  assert.equal(checkAddress("127.0.0.2", tests).allowed, false, "only the allowed /32");
  assert.equal(checkAddress("8.8.8.8", tests).allowed, false);
  assert.equal(checkAddress("::ffff:8.8.8.8", tests).allowed, false, "the mapped form of a denied one");
});

test("endpoint URLs: https required, no credentials, no fragments, IP literals and localhost checked", () => {
  const policy = createUrlPolicy();
  const ok = validateEndpointUrl("https://hooks.example.com:8443/in?x=1", policy);
  assert.deepEqual([ok.hostname, ok.port, ok.ip], ["hooks.example.com", 8443, undefined]);
  assert.equal(validateEndpointUrl("https://8.8.8.8/", policy).ip?.family, 4);
  const code = (c: string, field?: [string, string]) => (e: unknown) =>
    deliveryErrors.is(e, c as never) && (field === undefined || e.fields[field[0]] === field[1]);
  assert.throws(() => validateEndpointUrl("http://hooks.example.com/", policy), code("WEBHOOK_URL_INSECURE"));
  assert.equal(
    validateEndpointUrl("http://hooks.example.com/", createUrlPolicy({ allowHttp: true })).port,
    80,
  );
  assert.throws(() => validateEndpointUrl("ftp://x.example/", policy), code("WEBHOOK_URL_INVALID"));
  assert.throws(() => validateEndpointUrl("not a url", policy), code("WEBHOOK_URL_INVALID"));
  assert.throws(() => validateEndpointUrl("https://u:p@x.example/", policy), code("WEBHOOK_URL_INVALID"));
  assert.throws(() => validateEndpointUrl("https://x.example/#frag", policy), code("WEBHOOK_URL_INVALID"));
  assert.throws(
    () => validateEndpointUrl(`https://x.example/${"a".repeat(2_100)}`, policy),
    code("WEBHOOK_URL_INVALID"),
  );
  const forbidden: [string, string][] = [
    ["https://127.0.0.1/", "loopback"],
    ["https://2130706433/", "loopback"],
    ["https://0x7f.1/", "loopback"],
    ["https://0177.0.0.1/", "loopback"],
    ["https://[::1]/", "loopback"],
    ["https://[::ffff:169.254.169.254]/latest/meta-data", "link-local"],
    ["https://169.254.169.254/", "link-local"],
    ["https://0.0.0.0/", "unspecified"],
    ["https://[::]/", "unspecified"],
    ["https://10.0.0.1/", "private"],
    ["https://[fd00::1]/", "private"],
    ["https://100.64.0.1/", "shared"],
    ["https://localhost/", "loopback"],
    ["https://api.localhost./", "loopback"],
  ];
  for (const [url, addressClass] of forbidden) {
    assert.throws(
      () => validateEndpointUrl(url, policy),
      code("WEBHOOK_URL_FORBIDDEN", ["addressClass", addressClass]),
      url,
    );
  }
  assert.equal(
    validateEndpointUrl("https://127.0.0.1:9/", createUrlPolicy({ allow: ["127.0.0.0/8"] })).port,
    9,
  );
});
