/**
 * Loaded into every test process by `npm test` (`node --import ./packages/lab/src/blocking-stdout.ts
 * --test …`, which the runner passes on to each test file's process): it makes stdout blocking.
 *
 * Why: under process isolation each test file's process streams its results to the runner over
 * its stdout, a pipe, and `--test-force-exit` ends that process with `process.exit()` while
 * results may still sit in the pipe's buffer. The runner then counts fewer tests than ran and
 * still exits 0 (nodejs/node#64833, open): one CI run here counted 3,537 tests of 3,547 — the tail
 * of a rate-limiter file missing — and a probe of 20 files of 200 empty tests 3,329–3,590 of
 * 4,000. A blocking stdout finishes each write before the next statement runs, so nothing is
 * left to lose at the exit (`test/blocking-stdout.test.ts`).
 */
const stdout = process.stdout as unknown as { _handle?: { setBlocking?: (blocking: boolean) => void } };
stdout._handle?.setBlocking?.(true);
