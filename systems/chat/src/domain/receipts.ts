/**
 * Receipts (CH-11): small messages in the reverse direction. "delivered" when a device acks
 * that it received everything up to a seq, "read" when its screen showed everything up to
 * a seq (read implies delivered). Each moves the device's pointer forward only — a late or
 * repeated receipt changes nothing — and stamps the status of the messages it newly covers
 * in the history; then a `receipt` frame goes to the senders of those messages along the
 * same delivery path as a message.
 *
 * @example
 * const moved = await history.receipt({ chatId, userId: "bruno", deviceId: "phone", kind: "read", seq: 7n, nowMs });
 * // { kind: "read", fromSeq: 3n, toSeq: 7n, senders: ["ana"] }  (undefined: nothing moved)
 */
export type ReceiptKind = "delivered" | "read";

export interface Receipt {
  readonly chatId: bigint;
  readonly userId: string;
  readonly deviceId: string;
  readonly kind: ReceiptKind;
  readonly seq: bigint;
  readonly nowMs: number;
}

export interface ReceiptMove {
  readonly kind: ReceiptKind;
  /** Exclusive: the pointer before. */
  readonly fromSeq: bigint;
  /** Inclusive: the pointer now. */
  readonly toSeq: bigint;
  /** Senders (other than the reader) of the messages in (fromSeq, toSeq]. */
  readonly senders: readonly string[];
}

export interface Pointer {
  readonly deviceId: string;
  readonly deliveredSeq: bigint;
  readonly readSeq: bigint;
}

/** The receipt frame a sender gets. */
export function receiptFrame(receipt: Receipt, move: ReceiptMove) {
  return {
    action: "receipt",
    chatId: String(receipt.chatId),
    userId: receipt.userId,
    deviceId: receipt.deviceId,
    kind: move.kind,
    upToSeq: String(move.toSeq),
  };
}
