import assert from "node:assert/strict";
import { test } from "node:test";
import { LineSplitter } from "../src/line-splitter.ts";

function collect(maxLineChars: number, chunks: string[], end = true): string[] {
  const lines: string[] = [];
  const splitter = new LineSplitter(maxLineChars, (line) => lines.push(line));
  for (const chunk of chunks) splitter.push(chunk);
  if (end) splitter.end();
  return lines;
}

test("lines split across chunks come out whole, CRLF included", () => {
  assert.deepEqual(collect(100, ["on", "e\ntw", "o\r\n", "\nthree"]), ["one", "two", "", "three"]);
});

test("a partial line waits for its newline until the stream ends", () => {
  assert.deepEqual(collect(100, ["no newline yet"], false), []);
  assert.deepEqual(collect(100, ["no newline yet"]), ["no newline yet"]);
});

test("a line longer than the bound is emitted in pieces instead of buffered forever", () => {
  assert.deepEqual(collect(4, ["abcdefghij", "k\nxy"]), ["abcd", "efgh", "ijk", "xy"]);
  assert.throws(() => new LineSplitter(0, () => {}), RangeError);
});
