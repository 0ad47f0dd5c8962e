/**
 * The acquirer simulator as its own PROCESS for the bank workload (bank-workload.test.ts), started
 * through its real entry point (`acquirer-main.ts` `main`) with one difference: its clock runs on
 * real time plus an offset the parent can move, so after the run the simulator's day is over and
 * its D+1 settlement file is published at once (the payments service stamps rows with real time,
 * so both sides agree on "today" while the workload runs).
 *
 * Configuration comes from the environment (PORT, ACQUIRER_SEED, …) as for acquirer-main.ts.
 * stdout, one JSON line each: `{"url"}` once listening; `{"nowMs"}` after each command.
 * stdin commands: `advance <ms>` moves the clock forward; `stop` closes it gracefully.
 *
 * @example
 * // PORT=0 ACQUIRER_SEED=7 node systems/payments/test/bank-workload-acquirer-child.ts
 * // stdout: {"url":"http://127.0.0.1:41234"}   stdin: advance 86400000   stdout: {"nowMs":…}
 */
import { createInterface } from "node:readline";
import type { Clock } from "@casebook/kit/clock";
import { main } from "../src/sim/acquirer-main.ts";

/** Largest single move of the clock: a few days is all a settlement test needs. */
const MAX_ADVANCE_MS = 7 * 86_400_000;

let offsetMs = 0;
const clock: Clock = {
  nowMs: () => Date.now() + offsetMs,
  monotonicMs: () => performance.now(),
};

const running = await main(process.env, { clock });
const say = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);
say({ url: running.url });

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const [command, argument] = line.trim().split(/\s+/);
  if (command === "stop") break;
  const ms = Number(argument);
  if (command === "advance" && Number.isSafeInteger(ms) && ms >= 0 && ms <= MAX_ADVANCE_MS) {
    offsetMs += ms;
    say({ nowMs: clock.nowMs() });
  } else say({ error: `unknown command: ${line}` });
}
lines.close();
await running.close();
