/**
 * The SSRF policy (architecture rule 8, issue 4): address classes, IPv4-mapped and other
 * IPv6 forms that carry an IPv4 address, allow/deny lists, and endpoint URL validation,
 * including the URL parser's odd IPv4 spellings.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { classifyIp } from "../src/domain/address-class.ts";
import { deliveryErrors } from "../src/domain/delivery-errors.ts";
import { formatIp, parseCidr, parseIp } from "../src/domain/ip-address.ts";
import { checkAddress, createUrlPolicy, validateEndpointUrl } from "../src/domain/url-policy.ts";

const classOf = (text: string) => {
  const ip = parseIp(text);
  assert.ok(ip, `parses ${text}`);
  return classifyIp(ip);
};

test("IPv4 classes: loopback, private, CGNAT, link-local, unspecified, multicast, reserved, public", () => {
  const expected: [string, string][] = [
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["172.32.0.1", "public"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "shared"],
    ["100.127.255.255", "shared"],
    ["169.254.169.254", "link-local"],
    ["0.0.0.0", "unspecified"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["240.0.0.1", "reserved"],
    ["192.0.2.10", "documentation"],
    ["198.18.0.1", "benchmarking"],
    ["8.8.8.8", "public"],
    ["1.1.1.1", "public"],
  ];
  for (const [ip, addressClass] of expected) assert.equal(classOf(ip), addressClass, ip);
});

test("IPv6 classes, and IPv6 forms carrying IPv4 judged by the IPv4 they reach", () => {
  const expected: [string, string][] = [
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::ffff:169.254.169.254", "link-local"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:8.8.8.8", "public"],
    ["64:ff9b::127.0.0.1", "loopback"],
    ["2002:7f00:1::", "loopback"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["fe80::1", "link-local"],
    ["febf:ffff::1", "link-local"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "documentation"],
    ["::127.0.0.1", "reserved"],
    ["4000::1", "reserved"],
    ["2606:4700:4700::1111", "public"],
    ["2001:4860:4860::8888", "public"],
  ];
  for (const [ip, addressClass] of expected) assert.equal(classOf(ip), addressClass, ip);
});

test("parsing is strict: what is checked is what a socket would connect to", () => {
  for (const bad of [
    "127.1",
    "0x7f.0.0.1",
    "0177.0.0.1",
    "256.0.0.1",
    "1.2.3",
    "1:2:3:4:5:6:7:8:9",
    "1::2::3",
    "fe80::1%eth0",
    ":::1",
    "",
  ]) {
    assert.equal(parseIp(bad), undefined, bad);
  }
  assert.equal(formatIp(parseIp("[::ffff:127.0.0.1]")!), "0:0:0:0:0:ffff:7f00:1");
  fc.assert(
    fc.property(fc.ipV4(), (ip) => formatIp(parseIp(ip)!) === ip),
    { numRuns: 300 },
  );
  fc.assert(
    fc.property(fc.ipV6(), (ip) => parseIp(ip) !== undefined),
    { numRuns: 300 },
  );
  assert.throws(() => parseCidr("10.0.0.0/33"), RangeError);
  assert.throws(() => parseCidr("nope/8"), RangeError);
});

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
