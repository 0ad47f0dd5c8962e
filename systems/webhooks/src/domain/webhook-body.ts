/**
 * The body of a webhook request (WH-13): the Standard Webhooks envelope
 * `{"type", "timestamp", "data"}`. The event's stable id is not in it: it travels as the
 * `webhook-id` header, which the signature covers together with this exact text, so the
 * receiver must verify the raw bytes before parsing them. `timestamp` is when the event was
 * committed (not when this attempt left): the same on every retry, so a receiver can order
 * or age events, and the commit→2xx latency can be read off any request.
 *
 * @example
 * webhookBody({ eventType: "invoice.paid", eventCreatedAtMs: Date.UTC(2025, 0, 1), payload: { id: "in_1" } });
 * // '{"type":"invoice.paid","timestamp":"2025-01-01T00:00:00.000Z","data":{"id":"in_1"}}'
 */

export interface WebhookEnvelope {
  type: string;
  /** ISO 8601, UTC, millisecond precision. */
  timestamp: string;
  data: Record<string, unknown>;
}

/** The JSON text sent (and signed) for one event. */
export function webhookBody(event: {
  eventType: string;
  eventCreatedAtMs: number;
  payload: Record<string, unknown>;
}): string {
  if (!Number.isFinite(event.eventCreatedAtMs)) throw new RangeError("eventCreatedAtMs must be finite");
  const envelope: WebhookEnvelope = {
    type: event.eventType,
    timestamp: new Date(event.eventCreatedAtMs).toISOString(),
    data: event.payload,
  };
  return JSON.stringify(envelope);
}
