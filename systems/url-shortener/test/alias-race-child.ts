/**
 * A client PROCESS for alias-race.test.ts: its own pool on the test schema, it inserts the
 * same aliases as its rival, in the same order, each by the conditional insert the API uses,
 * and prints the aliases it won as one JSON line. Prints "ready", waits for "go" on stdin.
 *
 * argv: <database url> <schema> <client name> <alias count>
 */
import { createInterface } from "node:readline";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { LinkRepository } from "../src/store/link-repository.ts";

const [url, schema, name, countText] = process.argv.slice(2);
if (!url || !schema || !name || !countText) throw new Error("usage: <url> <schema> <name> <count>");
const db = await openDatabase({ system: "url-shortener", url, schema, pool: { maxConnections: 4 } });
const links = new LinkRepository(db);
const lines = createInterface({ input: process.stdin });
process.stdout.write("ready\n");
for await (const line of lines) if (line === "go") break;

const won: string[] = [];
// Four inserts in flight at once, so the rivals' statements overlap on the server.
const aliases = Array.from({ length: Number(countText) }, (_, i) => `race-${i}`);
for (let i = 0; i < aliases.length; i += 4) {
  await Promise.all(
    aliases.slice(i, i + 4).map(async (alias) => {
      const link = await links.insertAlias({
        domain: "race.test",
        code: alias,
        workspaceId: "race",
        target: `https://${name}.example/${alias}`,
        status: 302,
        cacheMaxAgeS: 300,
        forwardQuery: true,
        isAlias: true,
        tags: [],
        expiresAt: null,
        nowMs: Date.now(),
      });
      if (link) won.push(alias);
    }),
  );
}
await db.close();
process.stdout.write(`${JSON.stringify(won)}\n`);
