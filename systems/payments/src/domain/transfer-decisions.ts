/**
 * The fate of every transfer of a group, decided before any write, in arrival order — as if
 * they were applied one by one (issue 14, TigerBeetle's per-transfer result codes). Any error
 * inside a PostgreSQL transaction aborts it whole, so a group commit cannot let the database
 * refuse one transfer of many: each transfer's outcome is computed here, from the locked
 * balances and the keys already stored, and only the `ok` ones are written, together.
 *
 * Serial semantics, exactly:
 * - a transfer sees the effect of every earlier `ok` transfer of the group (a debit before the
 *   credit that would cover it fails, as it would serially);
 * - a refused transfer writes nothing, so a later one with the same key is decided afresh;
 * - a key already stored, or written by an earlier transfer of the group, is `exists` when the
 *   request is the same (the original's result, nothing new), else `exists_with_different_…`
 *   naming what differs;
 * - `linked` (TigerBeetle): a transfer with `linked: true` chains to the next; a chain commits
 *   whole or not at all — the failing one keeps its own code, the others of the chain get
 *   `linked_event_failed`, and their effects are undone before the next transfer is decided.
 *   A chain still open at the end of the group fails with `linked_event_chain_open`.
 *
 * Pure: no I/O, the caller passes the state it read under its locks.
 *
 * @example
 * const decisions = decideTransfers(items, accounts, stored);
 * decisions[0]; // { code: "ok" } | { code: "exceeds_credits", accountIds: [7n] } | …
 */
import { canonicalJson, type Entry, legsByAccount, type Metadata, type Transfer } from "./ledger.ts";

/** TigerBeetle's names where it has one (`exceeds_credits`, `linked_event_failed`, `exists…`). */
export const TRANSFER_RESULT_CODES = [
  "ok",
  "exists",
  "exists_with_different_entries",
  "exists_with_different_metadata",
  "exists_with_different_flags",
  "exists_with_different_timeout",
  "account_not_found",
  "currency_mismatch",
  "exceeds_credits",
  "linked_event_failed",
  "linked_event_chain_open",
] as const;
export type TransferResultCode = (typeof TRANSFER_RESULT_CODES)[number];

export type ExistsDifferentCode =
  | "exists_with_different_entries"
  | "exists_with_different_metadata"
  | "exists_with_different_flags"
  | "exists_with_different_timeout";

/** One transfer of a group, in arrival order. */
export interface GroupItem {
  transfer: Transfer;
  /** Chains this transfer to the next one: all of the chain commit, or none. */
  linked?: boolean;
  /**
   * The caller's own refusal, decided before the group (the ledger API's tenancy: an account that
   * is not the merchant's reads as `account_not_found`). It is this transfer's decision, and fails
   * its chain like any other.
   */
  refuse?: { code: "account_not_found"; accountId: bigint };
}

/** A balance row as locked for the group; balance convention: credits − debits. */
export interface AccountState {
  currency: string;
  noOverdraft: boolean;
  postedDebits: bigint;
  postedCredits: bigint;
  pendingDebits: bigint;
  pendingCredits: bigint;
}

/** What a stored transaction is compared against when its key comes again. */
export interface StoredTransfer {
  fingerprint: string;
  entries: readonly Entry[];
  metadata: Metadata;
  /** A pending transfer's timeout in seconds, or null. */
  timeoutS: number | null;
}

export type Decision =
  | { code: "ok" }
  /** `earlier`: the index of the group's transfer that wrote this key; absent: stored before. */
  | { code: "exists"; earlier?: number }
  | { code: ExistsDifferentCode; earlier?: number }
  | { code: "account_not_found"; accountId: bigint }
  | { code: "currency_mismatch"; accountId: bigint; accountCurrency: string; entryCurrency: string }
  | { code: "exceeds_credits"; accountIds: bigint[] }
  | { code: "linked_event_failed" }
  | { code: "linked_event_chain_open" };

function entriesText(entries: readonly Entry[]): string {
  return canonicalJson(
    [...entries]
      .map((e) => [e.accountId.toString(), e.direction, e.currency, e.amount.toString()])
      .sort((a, b) => (a.join("/") < b.join("/") ? -1 : 1)),
  );
}

/** Which field of a same-key request differs from what the key first wrote. */
export function existsCode(transfer: Transfer, stored: StoredTransfer): "exists" | ExistsDifferentCode {
  if (transfer.fingerprint === stored.fingerprint) return "exists";
  if (entriesText(transfer.entries) !== entriesText(stored.entries)) return "exists_with_different_entries";
  if (canonicalJson(transfer.metadata) !== canonicalJson(stored.metadata))
    return "exists_with_different_metadata";
  if (transfer.timeoutS !== stored.timeoutS) return "exists_with_different_timeout";
  return "exists_with_different_flags";
}

function copyState(accounts: ReadonlyMap<bigint, AccountState>): Map<bigint, AccountState> {
  return new Map([...accounts].map(([id, state]) => [id, { ...state }]));
}

/** Applies `transfer` to `state` when every account exists, matches and stays covered; else its failure. */
function tryApply(transfer: Transfer, state: Map<bigint, AccountState>): Decision {
  for (const entry of transfer.entries) {
    const account = state.get(entry.accountId);
    if (account === undefined) return { code: "account_not_found", accountId: entry.accountId };
    if (account.currency !== entry.currency) {
      return {
        code: "currency_mismatch",
        accountId: entry.accountId,
        accountCurrency: account.currency,
        entryCurrency: entry.currency,
      };
    }
  }
  // Net per account, as the balance row absorbs it (ledger_write checks the same way).
  const legs = legsByAccount(transfer.entries);
  const short: bigint[] = [];
  for (const leg of legs) {
    const a = state.get(leg.accountId)!;
    if (!a.noOverdraft) continue;
    const postedDebits = a.postedDebits + (transfer.pending ? 0n : leg.debits);
    const postedCredits = a.postedCredits + (transfer.pending ? 0n : leg.credits);
    const pendingDebits = a.pendingDebits + (transfer.pending ? leg.debits : 0n);
    if (postedCredits - postedDebits - pendingDebits < 0n) short.push(leg.accountId);
  }
  if (short.length > 0) return { code: "exceeds_credits", accountIds: short };
  for (const leg of legs) {
    const a = state.get(leg.accountId)!;
    if (transfer.pending) {
      a.pendingDebits += leg.debits;
      a.pendingCredits += leg.credits;
    } else {
      a.postedDebits += leg.debits;
      a.postedCredits += leg.credits;
    }
  }
  return { code: "ok" };
}

/**
 * Decides every item of a group in arrival order (see the module comment). `accounts` holds
 * every account the group names that exists; `stored` every key of the group already stored.
 */
export function decideTransfers(
  items: readonly GroupItem[],
  accounts: ReadonlyMap<bigint, AccountState>,
  stored: ReadonlyMap<string, StoredTransfer>,
): Decision[] {
  let state = copyState(accounts);
  const decisions: Decision[] = [];
  /** Keys written by `ok` transfers of the group so far: key → index. */
  let written = new Map<string, number>();
  let chainStart: number | undefined;
  let chainSnapshot: { state: Map<bigint, AccountState>; written: Map<string, number> } | undefined;
  let chainFailed = false;
  for (let i = 0; i < items.length; i++) {
    const { transfer, linked = false, refuse } = items[i]!;
    if (chainStart === undefined && linked) {
      chainStart = i;
      chainSnapshot = { state: copyState(state), written: new Map(written) };
      chainFailed = false;
    }
    let decision: Decision;
    if (chainFailed) decision = { code: "linked_event_failed" };
    else if (refuse !== undefined) decision = { ...refuse };
    else {
      const earlier = written.get(transfer.idemKey);
      const before = stored.get(transfer.idemKey);
      if (earlier !== undefined) {
        decision = { code: existsCode(transfer, items[earlier]!.transfer), earlier };
      } else if (before !== undefined) {
        decision = { code: existsCode(transfer, before) };
      } else {
        decision = tryApply(transfer, state);
        if (decision.code === "ok") written.set(transfer.idemKey, i);
      }
    }
    decisions.push(decision);
    const inChain = chainStart !== undefined;
    // `exists` does not fail a chain: a retried chain that committed answers `exists` throughout.
    if (inChain && decision.code !== "ok" && decision.code !== "exists" && !chainFailed) {
      // The chain fails: undo its effects, mark its earlier members, refuse the rest of it.
      chainFailed = true;
      state = chainSnapshot!.state;
      written = chainSnapshot!.written;
      for (let j = chainStart!; j < i; j++) decisions[j] = { code: "linked_event_failed" };
    }
    if (inChain && !linked) {
      chainStart = undefined;
      chainSnapshot = undefined;
      chainFailed = false;
    }
  }
  if (chainStart !== undefined) {
    // The last transfer asked to chain to one that never came: the chain is refused whole.
    state = chainSnapshot!.state;
    for (let j = chainStart; j < items.length - 1; j++) decisions[j] = { code: "linked_event_failed" };
    decisions[items.length - 1] = { code: "linked_event_chain_open" };
  }
  return decisions;
}
