/**
 * `casebook feed seed [--users N] [--top-share X] [--alpha A] [--min-followers N] [--active-share X]`:
 * writes the synthetic power-law graph into the configured database (DATABASE_URL, or the
 * embedded PGlite in $CASEBOOK_DATA/feed) and prints how many authors fall in each tier under
 * the configured thresholds. Defaults: issue 20's shape — 200 000 users, the top author
 * followed by 25 %, Zipf, 30 % active.
 *
 * @example
 * // DATABASE_URL=postgres://127.0.0.1:5432/test npx casebook feed seed --users 50000
 */
import { parseArgs } from "node:util";
import { databaseOptionsOf } from "@casebook/infra/http/service-preset";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { loadSystemConfig } from "../config.ts";
import { followersOfRank } from "../domain/power-law-graph.ts";
import { deriveThresholds, tierOf } from "../domain/tiers.ts";
import { migrateFeed } from "../store/migrate.ts";
import { seedGraph } from "../store/seed-graph.ts";

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      users: { type: "string", default: "200000" },
      "top-share": { type: "string", default: "0.25" },
      alpha: { type: "string", default: "1" },
      "min-followers": { type: "string", default: "5" },
      "active-share": { type: "string", default: "0.3" },
    },
  });
  const shape = {
    users: Number(values.users),
    topShare: Number(values["top-share"]),
    alpha: Number(values.alpha),
    minFollowers: Number(values["min-followers"]),
    activeShare: Number(values["active-share"]),
  };
  for (const [flag, value] of Object.entries(shape)) {
    if (
      !Number.isFinite(value) ||
      value <= 0 ||
      (flag === "users" && (!Number.isInteger(value) || value > 10_000_000))
    ) {
      process.stderr.write(`seed: --${flag} must be a positive number (users ≤ 10 000 000)\n`);
      process.exit(2);
    }
  }
  const config = loadSystemConfig(process.env);
  const db = await openDatabase({ system: "feed", ...databaseOptionsOf(config) });
  try {
    await migrateFeed(db);
    const seeded = await seedGraph(db, { ...shape, nowMs: Date.now() });
    const t = deriveThresholds({
      fanoutWritesPerS: config.fanoutWritesPerS,
      delayTargetMs: config.delayTargetMs,
      activeShare: config.activeShare,
    });
    const tiers = { push: 0, "push-active": 0, pull: 0 };
    for (let rank = 1; rank <= seeded.authors; rank++) tiers[tierOf(followersOfRank(rank, shape), t)]++;
    process.stdout.write(
      `${shape.users} users, ${seeded.authors} authors, ${seeded.edges} follows; ` +
        `tiers at ${t.fullPushMax}/${t.activePushMax}: ${JSON.stringify(tiers)}\n`,
    );
  } finally {
    await db.close();
  }
}
