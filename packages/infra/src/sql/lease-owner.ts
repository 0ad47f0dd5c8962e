/**
 * The lease owner id of a worker: `host:pid:random[:role]`. Host and pid say where to look
 * when a lease is stuck (which machine, which process); the random part makes a restarted
 * process with a recycled pid a different owner, so it never mistakes its predecessor's
 * leases for its own (releaseOrphaned, reclaimOwn). The role tells two loops of one
 * process apart (a saga orchestrator and a refund retrier each hold their own leases).
 *
 * @example
 * const owner = leaseOwnerId();              // "db-7:4242:1f3a9c0e"
 * const retrier = leaseOwnerId("refunds");   // "db-7:4242:b81d22aa:refunds"
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";

const ROLE_PATTERN = /^[a-z0-9_-]{1,32}$/;
/** Hostnames are at most 253 characters; an owner id must stay short in every leased row. */
const MAX_HOST_CHARS = 64;

export interface LeaseOwnerParts {
  host?: string;
  pid?: number;
  /** 8 hex characters, fresh per call by default. */
  random?: string;
}

/** A fresh owner id for this process (or from `parts`, in tests); `role` as a last segment. */
export function leaseOwnerId(role?: string, parts: LeaseOwnerParts = {}): string {
  if (role !== undefined && !ROLE_PATTERN.test(role))
    throw new RangeError(`lease owner role must match ${ROLE_PATTERN}, got ${JSON.stringify(role)}`);
  const host = (parts.host ?? hostname()).slice(0, MAX_HOST_CHARS);
  const id = `${host}:${parts.pid ?? process.pid}:${parts.random ?? randomUUID().slice(0, 8)}`;
  return role === undefined ? id : `${id}:${role}`;
}
