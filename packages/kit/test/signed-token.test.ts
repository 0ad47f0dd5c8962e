import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { ManualClock } from "../src/clock.ts";
import { kitErrors } from "../src/kit-errors.ts";
import { SignedTokens } from "../src/signed-token.ts";

const NEW = { kid: "k2", secret: "n".repeat(32) };
const OLD = { kid: "k1", secret: "o".repeat(32) };

function tokens(keys = [NEW, OLD]) {
  const clock = new ManualClock(1_000_000);
  return { clock, t: new SignedTokens<{ userId: string }>({ clock, keys }) };
}

const code = (c: Parameters<typeof kitErrors.is>[1]) => (e: unknown) => kitErrors.is(e, c);

test("sign then verify gives back the data, the kid that signed it and its times", () => {
  const { t } = tokens();
  const token = t.sign({ userId: "u_1" }, 60_000);
  assert.match(token, /^k2\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
  assert.deepEqual(t.verify(token), {
    data: { userId: "u_1" },
    kid: "k2",
    issuedAtMs: 1_000_000,
    expiresAtMs: 1_060_000,
  });
});

test("it expires at issue time + ttl, by the injected clock", () => {
  const { clock, t } = tokens();
  const token = t.sign({ userId: "u_1" }, 1_000);
  clock.advance(999);
  assert.equal(t.verify(token).data.userId, "u_1");
  clock.advance(1);
  assert.throws(
    () => t.verify(token),
    (e: unknown) =>
      kitErrors.is(e, "TOKEN_EXPIRED") && e.fields.expiresAtMs === 1_001_000 && e.status === 401,
  );
});

test("rotation: the first key signs, every key verifies; a dropped key's tokens are an unknown kid", () => {
  const before = tokens([OLD]);
  const oldToken = before.t.sign({ userId: "u_1" }, 60_000);
  const during = new SignedTokens<{ userId: string }>({ clock: before.clock, keys: [NEW, OLD] });
  assert.equal(during.verify(oldToken).kid, "k1", "old tokens still verify during the overlap");
  const newToken = during.sign({ userId: "u_2" }, 60_000);
  assert.ok(newToken.startsWith("k2."));
  const after = new SignedTokens<{ userId: string }>({ clock: before.clock, keys: [NEW] });
  assert.equal(after.verify(newToken).data.userId, "u_2");
  assert.throws(() => after.verify(oldToken), code("TOKEN_UNKNOWN_KID"));
});

test("tampering: a changed payload, a swapped kid or another key's signature fail as TOKEN_BAD_SIGNATURE", () => {
  const { t } = tokens();
  const token = t.sign({ userId: "u_1" }, 60_000);
  const [kid, payload, signature] = token.split(".") as [string, string, string];
  const forged = Buffer.from(JSON.stringify({ iat: 0, exp: 9e15, data: { userId: "admin" } })).toString(
    "base64url",
  );
  assert.throws(() => t.verify(`${kid}.${forged}.${signature}`), code("TOKEN_BAD_SIGNATURE"));
  assert.throws(() => t.verify(`k1.${payload}.${signature}`), code("TOKEN_BAD_SIGNATURE"));
  const flipped = signature.slice(0, -1) + (signature.endsWith("A") ? "B" : "A");
  assert.throws(() => t.verify(`${kid}.${payload}.${flipped}`), code("TOKEN_BAD_SIGNATURE"));
  assert.throws(() => t.verify(`${kid}.${payload}.${signature}A`), code("TOKEN_BAD_SIGNATURE"));
});

test("property: any single-character change of a token is refused", () => {
  const { t } = tokens();
  const token = t.sign({ userId: "u_1" }, 60_000);
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.";
  fc.assert(
    fc.property(fc.nat({ max: token.length - 1 }), fc.nat({ max: alphabet.length - 1 }), (at, pick) => {
      const changed = token.slice(0, at) + alphabet[pick] + token.slice(at + 1);
      if (changed === token) return;
      assert.throws(
        () => t.verify(changed),
        (e: unknown) => kitErrors.is(e),
      );
    }),
  );
});

test("malformed: wrong shape, foreign characters, too long, or a non-string", () => {
  const { t } = tokens();
  for (const bad of ["", "a.b", "a.b.c.d", "k2..sig", "k2.pay load.sig", "k 2.p.s", "x".repeat(5_000)]) {
    assert.throws(() => t.verify(bad), code("TOKEN_MALFORMED"), bad.slice(0, 20));
  }
  assert.throws(() => t.verify(42 as unknown as string), code("TOKEN_MALFORMED"));
});

test("bad keys and ttls are refused up front", () => {
  const clock = new ManualClock(0);
  assert.throws(() => new SignedTokens({ clock, keys: [] }), RangeError);
  assert.throws(() => new SignedTokens({ clock, keys: [{ kid: "k", secret: "short" }] }), RangeError);
  assert.throws(
    () => new SignedTokens({ clock, keys: [{ kid: "bad kid", secret: "s".repeat(32) }] }),
    RangeError,
  );
  assert.throws(() => new SignedTokens({ clock, keys: [NEW, NEW] }), RangeError);
  const { t } = tokens();
  assert.throws(() => t.sign({ userId: "u" }, 0), RangeError);
  assert.throws(() => t.sign({ userId: "u" }, 31 * 24 * 3_600_000), RangeError);
});
