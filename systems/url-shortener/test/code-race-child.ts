/**
 * A link writer PROCESS for code-race.test.ts, on the real PostgreSQL: its own pool on the
 * test schema, its own BlockAllocator (blocks of 1,000 from the shared counter) and the
 * permutation under the test's key. Prints "ready", waits for "go" on stdin, then:
 *
 * - `write <n>`: makes n codes and writes them, one a line, to `<out>`; prints
 *   "done <codes> <counter calls>".
 * - `hold`: reserves one block, prints "holding <block end>", and hangs until SIGKILLed —
 *   a writer dying with an unused block (US-11).
 *
 * argv: <database url> <schema> <key hex> <out file> <write|hold> [n]
 */
import { writeFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { CODE_SPACE } from "../src/domain/base62.ts";
import { BlockAllocator } from "../src/domain/counter-blocks.ts";
import { CounterCodes } from "../src/domain/counter-codes.ts";
import { FeistelPermutation } from "../src/domain/feistel-permutation.ts";
import { SqlCounter } from "../src/store/sql-counter.ts";

const [url, schema, keyHex, out, mode, countText] = process.argv.slice(2);
if (!url || !schema || !keyHex || !out || (mode !== "write" && mode !== "hold")) {
  throw new Error("usage: <url> <schema> <key hex> <out> <write|hold> [n]");
}
const db = await openDatabase({ system: "url-shortener", url, schema, pool: { maxConnections: 1 } });
const blocks = new BlockAllocator({ counter: new SqlCounter(db), blockSize: 1_000, limit: CODE_SPACE });
const codes = new CounterCodes(blocks, new FeistelPermutation(Buffer.from(keyHex, "hex")));

const lines = createInterface({ input: process.stdin });
process.stdout.write("ready\n");
for await (const line of lines) if (line === "go") break;

if (mode === "hold") {
  await blocks.next();
  process.stdout.write(`holding ${blocks.stats.reservations}\n`);
  // Hangs with its block until the parent SIGKILLs it.
  await new Promise(() => {});
}
const count = Number(countText);
const made: string[] = new Array(count);
for (let i = 0; i < count; i++) made[i] = await codes.next();
await writeFile(out, `${made.join("\n")}\n`);
await db.close();
process.stdout.write(`done ${count} ${codes.stats.reservations}\n`);
