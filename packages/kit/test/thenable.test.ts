import assert from "node:assert/strict";
import { test } from "node:test";
import { isThenable } from "../src/thenable.ts";

/** An object (or function) with a `then` member, as a hand-written thenable has. */
const withThen = <T extends object>(target: T, then: unknown): T => Object.assign(target, { then });

test("isThenable: promises and thenables are, plain values (null, objects, functions without then) are not", () => {
  assert.equal(isThenable(Promise.resolve(1)), true);
  assert.equal(isThenable(withThen({}, () => undefined)), true);
  assert.equal(
    isThenable(
      withThen(
        () => undefined,
        () => undefined,
      ),
    ),
    true,
  );
  const plainValues = [undefined, null, 0, "then", withThen({}, 1), { tenant: "t" }, () => undefined, 12n];
  for (const plain of plainValues) assert.equal(isThenable(plain), false, String(plain));
});
