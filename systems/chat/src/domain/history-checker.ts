/**
 * A history checker over recorded client histories, with Maelstrom's broadcast/kafka
 * anomalies as the definitions (Maelstrom itself cannot run here; its docs are the spec):
 *
 * - lost: a message the service acknowledged to its sender that a member never displayed;
 * - duplicate: one message id displayed twice to one client;
 * - order: a client's displayed seqs of one conversation not strictly increasing;
 * - skipped offset: a client's displayed seqs of one conversation not 1, 2, 3, … (a hole).
 *
 * @example
 * const anomalies = checkHistories({ acknowledged, displays });
 * assert.deepEqual(anomalies, []);
 */
export interface Displayed {
  readonly chatId: string;
  readonly id: string;
  readonly seq: string;
}

export interface ClientHistory {
  readonly client: string;
  /** The conversations this client is a member of. */
  readonly chats: readonly string[];
  /** What it displayed, in display order. */
  readonly displayed: readonly Displayed[];
}

export interface Acknowledged {
  readonly chatId: string;
  readonly id: string;
}

export type Anomaly =
  | { kind: "lost"; client: string; chatId: string; id: string }
  | { kind: "duplicate"; client: string; chatId: string; id: string }
  | { kind: "order"; client: string; chatId: string; seq: string; after: string }
  | { kind: "skipped-offset"; client: string; chatId: string; expected: string; got: string };

export function checkHistories(input: {
  acknowledged: readonly Acknowledged[];
  histories: readonly ClientHistory[];
}): Anomaly[] {
  const anomalies: Anomaly[] = [];
  for (const h of input.histories) {
    const seen = new Set<string>();
    const last = new Map<string, bigint>();
    for (const d of h.displayed) {
      if (seen.has(d.id)) anomalies.push({ kind: "duplicate", client: h.client, chatId: d.chatId, id: d.id });
      seen.add(d.id);
      const seq = BigInt(d.seq);
      const before = last.get(d.chatId) ?? 0n;
      if (seq <= before)
        anomalies.push({
          kind: "order",
          client: h.client,
          chatId: d.chatId,
          seq: d.seq,
          after: String(before),
        });
      else if (seq !== before + 1n) {
        anomalies.push({
          kind: "skipped-offset",
          client: h.client,
          chatId: d.chatId,
          expected: String(before + 1n),
          got: d.seq,
        });
      }
      if (seq > before) last.set(d.chatId, seq);
    }
    const member = new Set(h.chats);
    for (const a of input.acknowledged) {
      if (member.has(a.chatId) && !seen.has(a.id))
        anomalies.push({ kind: "lost", client: h.client, chatId: a.chatId, id: a.id });
    }
  }
  return anomalies;
}
