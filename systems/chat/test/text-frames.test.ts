/**
 * The gateway's pre-built WebSocket frames, read back by ws's own frame parser (a client's
 * Receiver: it refuses a server frame that is masked, a bad length or a bad opcode), across
 * the three length encodings of RFC 6455 §5.2 and their edges, with multi-byte UTF-8.
 */
import assert from "node:assert/strict";
import type { Writable } from "node:stream";
import { test } from "node:test";
import * as ws from "ws";
import { textFrames } from "../src/gateway/text-frames.ts";

/** ws exports its frame parser at runtime; @types/ws does not declare it. */
const { Receiver } = ws as unknown as {
  Receiver: new (options: { isServer: boolean; maxPayload: number }) => Writable;
};

function readBack(frames: Buffer[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const receiver = new Receiver({ isServer: false, maxPayload: 1 << 20 });
    const texts: string[] = [];
    receiver.on("message", (data: Buffer, isBinary: boolean) => {
      assert.equal(isBinary, false);
      texts.push(data.toString("utf8"));
      if (texts.length === frames.length) resolve(texts);
    });
    receiver.on("error", reject);
    // one stream, frame after frame, as a socket carries them; split at odd offsets too
    const all = Buffer.concat(frames);
    for (let at = 0; at < all.length; at += 4_093) receiver.write(all.subarray(at, at + 4_093));
  });
}

test("text frames of every length encoding are read back whole by ws's parser", async () => {
  const lengths = [1, 125, 126, 127, 65_535, 65_536, 70_000];
  const texts = lengths.map((n) => "x".repeat(n));
  texts.push("", "olá — ação ✓ 🚀".repeat(3_000)); // empty; over 64 KiB in UTF-8 bytes
  assert.deepEqual(await readBack(textFrames(texts)), texts);
});

test("a frame's header carries FIN, the text opcode and no mask", () => {
  const [small, medium] = textFrames(["hi", "y".repeat(300)]);
  assert.deepEqual([...(small as Buffer).subarray(0, 2)], [0x81, 2]);
  assert.deepEqual([...(medium as Buffer).subarray(0, 4)], [0x81, 126, 0x01, 0x2c]);
});
