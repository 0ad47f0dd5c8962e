/**
 * The text's arithmetic, as functions (CH-02, CH-13): the load of 100M daily users and the
 * connection ceiling a managed gateway implies. Reproduced by `test/domain-estimates.test.ts`.
 *
 * @example
 * messageLoad({ dailyActiveUsers: 100e6, messagesPerUserDay: 40, peakFactor: 3, bytesPerMessage: 200, connectedShare: 0.3 });
 * // { messagesPerDay: 4e9, averagePerS: ≈46_296, peakPerS: ≈138_889, bytesPerDay: 8e11, openSockets: 3e7 }
 */
export const SECONDS_PER_DAY = 86_400;

export interface LoadInputs {
  readonly dailyActiveUsers: number;
  readonly messagesPerUserDay: number;
  /** Peak over average. */
  readonly peakFactor: number;
  readonly bytesPerMessage: number;
  /** Share of the daily users connected at once. */
  readonly connectedShare: number;
}

export interface Load {
  readonly messagesPerDay: number;
  readonly averagePerS: number;
  readonly peakPerS: number;
  readonly bytesPerDay: number;
  readonly openSockets: number;
}

/** CH-02: messages per day and per second, bytes per day, sockets open at once. */
export function messageLoad(inputs: LoadInputs): Load {
  const messagesPerDay = inputs.dailyActiveUsers * inputs.messagesPerUserDay;
  const averagePerS = messagesPerDay / SECONDS_PER_DAY;
  return {
    messagesPerDay,
    averagePerS,
    peakPerS: averagePerS * inputs.peakFactor,
    bytesPerDay: messagesPerDay * inputs.bytesPerMessage,
    openSockets: inputs.dailyActiveUsers * inputs.connectedShare,
  };
}

/**
 * CH-13: with no cap on concurrent connections, the ceiling is the new-connection rate
 * times the longest a connection lives (every connection is replaced by then).
 */
export function connectionCeiling(newConnectionsPerS: number, maxLifetimeS: number): number {
  return newConnectionsPerS * maxLifetimeS;
}

/** CH-13: the frames a message of `bytes` takes at `frameBytesMax` per frame. */
export function framesFor(bytes: number, frameBytesMax: number): number {
  return Math.max(1, Math.ceil(bytes / frameBytesMax));
}
