import assert from "node:assert/strict";
import { test } from "node:test";
import { didYouMean, editDistance } from "../src/did-you-mean.ts";

test("edit distance counts inserts, deletes, substitutions and adjacent swaps", () => {
  assert.equal(editDistance("", ""), 0);
  assert.equal(editDistance("list", "list"), 0);
  assert.equal(editDistance("lsit", "list"), 1);
  assert.equal(editDistance("lst", "list"), 1);
  assert.equal(editDistance("bench", "bunch"), 1);
  assert.equal(editDistance("abc", ""), 3);
});

test("a close word is suggested, a far one is not", () => {
  const commands = ["list", "up", "run", "bench", "help"];
  assert.equal(didYouMean("lsit", commands), "list");
  assert.equal(didYouMean("RUN", commands), "run");
  assert.equal(didYouMean("benhc", commands), "bench");
  assert.equal(didYouMean("deploy", commands), undefined);
  assert.equal(didYouMean("x", []), undefined);
});
