/**
 * Address classes for the SSRF guard (architecture rule 8): IPv4 and IPv6 special-purpose
 * ranges, IPv6 forms that carry an IPv4 address (judged by the IPv4 they reach), and
 * strict parsing, so what is checked is what a socket would connect to. Moved from
 * webhooks' domain tests with the code (issue 10).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { classifyIp } from "../src/address-class.ts";
import {
  checkAddress,
  createAddressPolicy,
  isLocalhostName,
  MAX_POLICY_RANGES,
} from "../src/address-policy.ts";
import { formatIp, parseCidr, parseIp } from "../src/ip-address.ts";

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

test("address policy: public only, allow list opens a range, deny list wins, bounded lists", () => {
  const policy = createAddressPolicy({ allow: ["10.1.0.0/16"], deny: ["8.8.4.0/24"] });
  assert.equal(checkAddress("10.1.2.3", policy).allowed, true);
  assert.equal(checkAddress("10.2.0.1", policy).allowed, false);
  assert.equal(
    checkAddress("::ffff:10.1.2.3", policy).allowed,
    true,
    "the mapped form of an allowed address",
  );
  assert.equal(checkAddress("8.8.4.4", policy).allowed, false, "public, but denied");
  assert.equal(checkAddress("1.1.1.1", policy).allowed, true);
  assert.throws(() => createAddressPolicy({ allow: ["10.0.0.0/33"] }), RangeError);
  const tooMany = Array.from({ length: MAX_POLICY_RANGES + 1 }, (_, i) => `10.0.${i >> 8}.${i & 255}/32`);
  assert.throws(() => createAddressPolicy({ deny: tooMany }), RangeError);
  for (const name of ["localhost", "LOCALHOST.", "api.localhost"])
    assert.equal(isLocalhostName(name), true, name);
  for (const name of ["localhost.example.com", "example.com"])
    assert.equal(isLocalhostName(name), false, name);
});
