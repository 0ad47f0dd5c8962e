/**
 * Live resharding (what `redis-cli --cluster reshard` does), while clients keep reading
 * and writing: for a batch of slots,
 *
 * 1. target: CLUSTER SETSLOT s IMPORTING <source>   — it will serve ASKING clients for s;
 * 2. source: CLUSTER SETSLOT s MIGRATING <target>   — keys it no longer has get -ASK;
 * 3. source: GETKEYSINSLOT s + MIGRATE … KEYS …     — until the slot is empty there;
 * 4. target, then source, then the other primaries: CLUSTER SETSLOT s NODE <target>
 *    — the target takes a new config epoch, so its claim wins in every view.
 *
 * No key is lost and none is served from two places: a key is on the source until the
 * MIGRATE that moves it (atomic, the source blocks), then only on the target; a client
 * that asks the source for a key already gone is sent to the target with -ASK; a new key
 * in a migrating slot is created on the target. Commands are pipelined per batch.
 *
 * Bounds: `slotBatch` slots per pipelined batch, `keysPerMigrate` keys per MIGRATE,
 * `migrateTimeoutMs` per MIGRATE, and the number of MIGRATE rounds per slot (its key
 * count at the start divided by the batch, plus slack for keys written meanwhile).
 *
 * @example
 * await moveSlots({ source, target, primaries, slots: [0, 1, 2] }); // { slots: 3, keys: 117 }
 */

import { clusterErrors } from "../../errors.ts";
import { type AdminClient, type Reply, ReplyError } from "../clients/cluster-admin-client.ts";

export interface ReshardNode {
  readonly id: string;
  /** The announced client address (MIGRATE names the target by it). */
  readonly host: string;
  readonly port: number;
  readonly admin: AdminClient;
}

export interface MoveSlotsOptions {
  readonly source: ReshardNode;
  readonly target: ReshardNode;
  /** Every primary (source and target included), told the new owner at the end. */
  readonly primaries: readonly ReshardNode[];
  readonly slots: readonly number[];
  readonly slotBatch?: number;
  readonly keysPerMigrate?: number;
  readonly migrateTimeoutMs?: number;
}

export interface MoveReport {
  readonly slots: number;
  readonly keys: number;
}

/** Extra MIGRATE rounds per slot beyond its starting key count, for keys updated meanwhile. */
const SLACK_ROUNDS = 4;

function failed(slot: number, detail: string) {
  return clusterErrors.create("CACHE_CLUSTER_RESHARD_FAILED", {
    detail: `slot ${slot}: ${detail}`,
    fields: { slot },
  });
}

async function all(node: ReshardNode, commands: Array<Array<string | number>>, slots: readonly number[]) {
  const replies = await Promise.all(commands.map((command) => node.admin.raw(...command)));
  replies.forEach((reply, i) => {
    if (reply instanceof ReplyError)
      throw failed(slots[i]!, `${node.host}:${node.port} ${commands[i]!.join(" ")}: ${reply.message}`);
  });
  return replies;
}

async function drainSlot(options: MoveSlotsOptions, slot: number, count: number): Promise<number> {
  const { source, target } = options;
  const batch = options.keysPerMigrate ?? 100;
  const timeoutMs = options.migrateTimeoutMs ?? 5_000;
  let moved = 0;
  for (let round = 0; round < Math.ceil(count / batch) + SLACK_ROUNDS; round++) {
    const keys = (await source.admin.call("CLUSTER", "GETKEYSINSLOT", slot, batch)) as string[];
    if (keys.length === 0) return moved;
    const reply: Reply = await source.admin.raw(
      "MIGRATE",
      target.host,
      target.port,
      "",
      0,
      timeoutMs,
      "REPLACE",
      "KEYS",
      ...keys,
    );
    if (reply instanceof ReplyError)
      throw failed(slot, `MIGRATE to ${target.host}:${target.port}: ${reply.message}`);
    moved += keys.length;
  }
  throw failed(slot, `keys kept arriving after ${Math.ceil(count / batch) + SLACK_ROUNDS} MIGRATE rounds`);
}

/** Moves `slots` from source to target, live. */
export async function moveSlots(options: MoveSlotsOptions): Promise<MoveReport> {
  const { source, target } = options;
  const slotBatch = options.slotBatch ?? 256;
  let keys = 0;
  for (let start = 0; start < options.slots.length; start += slotBatch) {
    const slots = options.slots.slice(start, start + slotBatch);
    await all(
      target,
      slots.map((slot) => ["CLUSTER", "SETSLOT", slot, "IMPORTING", source.id]),
      slots,
    );
    await all(
      source,
      slots.map((slot) => ["CLUSTER", "SETSLOT", slot, "MIGRATING", target.id]),
      slots,
    );
    const counts = await all(
      source,
      slots.map((slot) => ["CLUSTER", "COUNTKEYSINSLOT", slot]),
      slots,
    );
    for (const [i, slot] of slots.entries()) {
      if ((counts[i] as number) > 0) keys += await drainSlot(options, slot, counts[i] as number);
    }
    const node = slots.map((slot) => ["CLUSTER", "SETSLOT", slot, "NODE", target.id]);
    await all(target, node, slots);
    await all(source, node, slots);
    const others = options.primaries.filter(
      (primary) => primary.id !== source.id && primary.id !== target.id,
    );
    await Promise.all(others.map((other) => all(other, node, slots)));
  }
  return { slots: options.slots.length, keys };
}
