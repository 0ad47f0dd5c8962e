/**
 * The data every read scenario of `casebook bench feed` shares, written once into a fresh
 * PostgreSQL schema: the power-law graph (store/seed-graph.ts), a few posts by every author
 * (Snowflake ids spread over the last hour, oldest first), and an API key for each sampled
 * reader (the home feed needs one). Set-based inserts: a graph of 20 000 users and ~400 000
 * edges is written in seconds.
 *
 * @example
 * const seed = await seedReadBench(db, { users: 20_000, alpha: 0.7, postsPerAuthor: 3, readers: 2_000 });
 * seed.readers[0]; // { userId: 17n, key: "fdk_…" }
 */
import { randomBytes } from "node:crypto";
import type { Database } from "@casebook/infra/sql/sql";
import { snowflakeFloor } from "@casebook/kit/snowflake";
import { authorsAbove, followersOfRank, type PowerLawShape } from "../src/domain/power-law-graph.ts";
import { seedGraph } from "../src/store/seed-graph.ts";
import { userKeys } from "../src/store/user-keys.ts";

/** The graph's shape: a fifth of the users follow the top author; authors need this many followers. */
const TOP_SHARE = 0.2;
const MIN_FOLLOWERS = 20;
/** The posts' ids are spread over this past window. */
const POSTS_WINDOW_MS = 3_600_000;
/** Keys issued per transaction. */
const KEYS_PER_TX = 500;

export interface ReadSeedOptions {
  readonly users: number;
  /** The power law's exponent: below 1, followings spread over more authors (a fuller feed). */
  readonly alpha: number;
  readonly postsPerAuthor: number;
  readonly readers: number;
}

export interface Reader {
  readonly userId: bigint;
  readonly key: string;
}

export interface ReadSeed {
  readonly authors: number;
  readonly edges: number;
  readonly posts: number;
  readonly readers: readonly Reader[];
  readonly shape: PowerLawShape;
  /** Followers of the author at `rank` (1 = the most followed). */
  followersOf(rank: number): number;
}

export async function seedReadBench(db: Database, o: ReadSeedOptions): Promise<ReadSeed> {
  const nowMs = Date.now();
  const shape = { users: o.users, topShare: TOP_SHARE, alpha: o.alpha };
  const { authors, edges } = await seedGraph(db, {
    ...shape,
    minFollowers: MIN_FOLLOWERS,
    // Everyone active: the push-active tier then pushes to every follower, so the three read
    // designs compare on the same lists (the tier's saving is the fan-out bench's subject).
    activeShare: 1,
    nowMs,
  });
  const posts = authors * o.postsPerAuthor;
  const step = POSTS_WINDOW_MS / posts;
  const base = snowflakeFloor(nowMs - POSTS_WINDOW_MS);
  // Post i (oldest first) by author (i mod authors) + 1, at base + i·step ms, sequence i mod 4096.
  await db.query(
    `INSERT INTO posts (author_id, id, kind, body, created_at)
     SELECT (g % $1::int8) + 1, $2::int8 + ((floor(g * $3::float8)::int8) << 22) + (g % 4096), 'post',
            'bench post ' || g, to_timestamp(($4::float8 + g * $3::float8) / 1000.0)
       FROM generate_series(0::int8, $5::int8 - 1) g`,
    [authors, base, step, nowMs - POSTS_WINDOW_MS, posts],
  );
  const readers: Reader[] = [];
  const picked = new Set<number>();
  while (picked.size < Math.min(o.readers, o.users)) picked.add(1 + Math.floor(Math.random() * o.users));
  const ids = [...picked];
  for (let from = 0; from < ids.length; from += KEYS_PER_TX) {
    await db.transaction(async (tx) => {
      for (const id of ids.slice(from, from + KEYS_PER_TX)) {
        const issued = await userKeys.issue(tx, String(id), { nowMs, randomBytes });
        readers.push({ userId: BigInt(id), key: issued.key });
      }
    });
  }
  return {
    authors: Math.min(authors, authorsAbove(MIN_FOLLOWERS, shape)),
    edges,
    posts,
    readers,
    shape,
    followersOf: (rank) => followersOfRank(rank, shape),
  };
}
