/**
 * The parser's command-name cache returns exactly the bytes it was given, whatever else
 * has been through its slots: names of every byte value and length up to the bound, at any
 * offset, interleaved so that slots are shared and replaced (fast-check, fixed seed).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { internedName, MAX_INTERNED_NAME_BYTES } from "../src/api/interned-names.ts";

const nameBytes = fc.uint8Array({ maxLength: MAX_INTERNED_NAME_BYTES });

describe("internedName", () => {
  test("any name, at any offset, decodes to its own bytes however the slots are shared", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(nameBytes, fc.nat({ max: 8 })), { minLength: 1, maxLength: 600 }),
        (names) => {
          for (const [bytes, offset] of names) {
            const buf = Buffer.concat([Buffer.alloc(offset, 0x2a), bytes, Buffer.from("\r\n")]);
            assert.equal(internedName(buf, offset, bytes.length), Buffer.from(bytes).toString("latin1"));
          }
        },
      ),
      { numRuns: 200, seed: 4_242 },
    );
  });

  test("a name seen again, in another case or after a colliding one, is still decoded right", () => {
    const spellings = [
      "GET",
      "get",
      "Get",
      "SET",
      "set",
      "PING",
      "ping",
      "",
      "x".repeat(MAX_INTERNED_NAME_BYTES),
    ];
    // Far more distinct names than slots: every slot is replaced many times between two GETs.
    const churn = Array.from({ length: 5_000 }, (_, i) => `cmd${i}`);
    for (let round = 0; round < 3; round++) {
      for (const name of [...spellings, ...churn, ...spellings]) {
        assert.equal(internedName(Buffer.from(name, "latin1"), 0, name.length), name);
      }
    }
  });
});
