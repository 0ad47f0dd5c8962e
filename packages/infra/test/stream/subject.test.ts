import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { streamErrors } from "../../src/stream/stream-errors.ts";
import { checkFilter, checkSubject, filtersOverlap, subjectMatches } from "../../src/stream/subject.ts";

test("> matches one or more trailing tokens, * exactly one, literals themselves", () => {
  assert.equal(subjectMatches("metrics.>", "metrics.cpu"), true);
  assert.equal(subjectMatches("metrics.>", "metrics.cpu.host-1"), true);
  assert.equal(subjectMatches("metrics.>", "metrics"), false);
  assert.equal(subjectMatches("metrics.*", "metrics.cpu"), true);
  assert.equal(subjectMatches("metrics.*", "metrics.cpu.host-1"), false);
  assert.equal(subjectMatches("*.cpu", "metrics.cpu"), true);
  assert.equal(subjectMatches("metrics.cpu", "metrics.cpu"), true);
  assert.equal(subjectMatches("metrics.cpu", "metrics.cpu2"), false);
  assert.equal(subjectMatches(">", "a.b.c"), true);
});

test("subjects refuse wildcards, empty tokens and spaces; filters allow * anywhere and > last", () => {
  for (const bad of ["", "a..b", ".a", "a.", "a b", "a.*", "a.>", "a*b", "x".repeat(300)]) {
    assert.throws(
      () => checkSubject(bad),
      (e) => streamErrors.is(e, "STREAM_SUBJECT_INVALID"),
      bad,
    );
  }
  assert.equal(checkSubject("chat.room-7.msg_1"), "chat.room-7.msg_1");
  for (const good of ["a.*", "a.>", "*.b.*", ">"]) assert.equal(checkFilter(good), good);
  for (const bad of ["a.>.b", "a.b>", "a..*", ""]) {
    assert.throws(
      () => checkFilter(bad),
      (e) => streamErrors.is(e, "STREAM_SUBJECT_INVALID"),
      bad,
    );
  }
});

const token = fc.constantFrom("a", "b", "c");
const subjectArb = fc.array(token, { minLength: 1, maxLength: 4 }).map((t) => t.join("."));
const filterArb = fc
  .tuple(fc.array(fc.constantFrom("a", "b", "*"), { minLength: 1, maxLength: 4 }), fc.boolean())
  .map(([t, tail]) => (tail ? [...t, ">"] : t).join("."));

test("property: two filters overlap exactly when some subject matches both", () => {
  // Subjects of up to 5 tokens over {a, b, c} witness every overlap of these filters.
  const witnesses: string[] = [];
  const grow = (prefix: string[]) => {
    if (prefix.length > 0) witnesses.push(prefix.join("."));
    if (prefix.length < 5) for (const t of ["a", "b", "c"]) grow([...prefix, t]);
  };
  grow([]);
  fc.assert(
    fc.property(filterArb, filterArb, (x, y) => {
      const witnessed = witnesses.some((s) => subjectMatches(x, s) && subjectMatches(y, s));
      assert.equal(filtersOverlap(x, y), witnessed, `${x} / ${y}`);
      assert.equal(filtersOverlap(y, x), witnessed);
    }),
  );
});

test("property: a subject matches itself and the filters made by widening it", () => {
  fc.assert(
    fc.property(subjectArb, fc.nat(), (subject, at) => {
      const tokens = subject.split(".");
      const i = at % tokens.length;
      assert.equal(subjectMatches(subject, subject), true);
      assert.equal(
        subjectMatches([...tokens.slice(0, i), "*", ...tokens.slice(i + 1)].join("."), subject),
        true,
      );
      assert.equal(subjectMatches([...tokens.slice(0, i), ">"].join("."), subject), true);
    }),
  );
});
