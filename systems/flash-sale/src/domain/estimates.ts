/**
 * FS-17's arithmetic, reproduced: the numbers of §8.5 from the assumptions of FS-02, so the
 * README's figures come from a function a test pins, not from a calculator.
 *
 * - rejection rate if nothing stands before checkout: 1 − tickets / attempts;
 * - the waiting room's size after the first second: attempts − checkoutPerS;
 * - minutes to serve every entrant through checkout at checkoutPerS (each gets an answer:
 *   a ticket, or "sold out");
 * - seconds to sell out if every admitted buyer buys (tickets / checkoutPerS).
 *
 * @example
 * flashSaleEstimates({ attempts: 100_000, tickets: 5_000, checkoutPerS: 300 });
 * // { rejectionRate: 0.95, queuedAfterFirstS: 99_700, serveAllS: 333.3…, serveAllMinutes: 5.6, sellOutS: 16.7 }
 */
export interface EstimateInput {
  /** Attempts arriving in the first second. */
  readonly attempts: number;
  readonly tickets: number;
  /** Checkout capacity, orders per second. */
  readonly checkoutPerS: number;
}

export interface Estimates {
  readonly rejectionRate: number;
  readonly queuedAfterFirstS: number;
  readonly serveAllS: number;
  /** serveAllS in minutes, rounded to one decimal. */
  readonly serveAllMinutes: number;
  /** Seconds until the last ticket is held, rounded to one decimal. */
  readonly sellOutS: number;
}

export function flashSaleEstimates(input: EstimateInput): Estimates {
  const { attempts, tickets, checkoutPerS } = input;
  if (!(attempts >= 1 && tickets >= 1 && checkoutPerS > 0))
    throw new RangeError("attempts, tickets >= 1, checkoutPerS > 0");
  const serveAllS = attempts / checkoutPerS;
  return {
    rejectionRate: Math.max(0, 1 - tickets / attempts),
    queuedAfterFirstS: Math.max(0, attempts - checkoutPerS),
    serveAllS,
    serveAllMinutes: Math.round((serveAllS / 60) * 10) / 10,
    sellOutS: Math.round((Math.min(tickets, attempts) / checkoutPerS) * 10) / 10,
  };
}
