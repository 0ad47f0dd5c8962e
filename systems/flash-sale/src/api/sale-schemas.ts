/**
 * JSON schemas of the sale API: bodies refuse unknown fields and wrong types (the strict
 * edge), views are declared in full (Fastify drops undeclared properties).
 */
export const SALE_ID_PATTERN = "^[a-z0-9][a-z0-9-]{0,62}$";
export const HOLD_ID_PATTERN = "^h_[0-9a-f]{32}$";
export const BUYER_PATTERN = "^[A-Za-z0-9._:@-]{1,128}$";
export const MAX_QUANTITY = 100;

export const createSaleBody = {
  type: "object",
  required: ["name", "tickets", "priceMinor", "currency"],
  additionalProperties: false,
  properties: {
    id: { type: "string", pattern: SALE_ID_PATTERN, description: "Default: a random one" },
    name: { type: "string", minLength: 1, maxLength: 200 },
    tickets: { type: "integer", minimum: 1, maximum: 1_000_000 },
    perBuyerMax: { type: "integer", minimum: 1, maximum: MAX_QUANTITY, default: 4 },
    holdTtlMs: {
      type: "integer",
      minimum: 1_000,
      maximum: 86_400_000,
      description: "Default: FLASH_SALE_HOLD_TTL_MS",
    },
    priceMinor: { type: "integer", minimum: 1, maximum: 100_000_000 },
    currency: { type: "string", pattern: "^[A-Z]{3}$" },
    opensAt: { type: "string", format: "date-time", description: "Default: now" },
  },
} as const;

export const saleParams = {
  type: "object",
  required: ["saleId"],
  additionalProperties: false,
  properties: { saleId: { type: "string", minLength: 1, maxLength: 200 } },
} as const;

export const holdParams = {
  type: "object",
  required: ["holdId"],
  additionalProperties: false,
  properties: { holdId: { type: "string", minLength: 1, maxLength: 200 } },
} as const;

export const saleView = {
  type: "object",
  required: [
    "id",
    "name",
    "tickets",
    "available",
    "soldOut",
    "perBuyerMax",
    "holdTtlMs",
    "priceMinor",
    "currency",
    "opensAt",
  ],
  properties: {
    id: { type: "string" },
    name: { type: "string" },
    tickets: { type: "integer" },
    available: { type: "integer", description: "Tickets neither sold nor held, from the hot counter" },
    soldOut: { type: "boolean" },
    perBuyerMax: { type: "integer" },
    holdTtlMs: { type: "integer" },
    priceMinor: { type: "integer" },
    currency: { type: "string" },
    opensAt: { type: "string", format: "date-time" },
  },
} as const;

export const reserveBody = {
  type: "object",
  required: ["quantity"],
  additionalProperties: false,
  properties: { quantity: { type: "integer", minimum: 1, maximum: MAX_QUANTITY } },
} as const;

/** The entrant's secret the admission token (the route's bearer security) is bound to. */
export const admissionHeaders = {
  type: "object",
  properties: { "x-entrant-secret": { type: "string", minLength: 1, maxLength: 200 } },
} as const;

export const holdView = {
  type: "object",
  required: [
    "id",
    "saleId",
    "buyer",
    "quantity",
    "numbers",
    "state",
    "releaseReason",
    "expiresAt",
    "order",
    "message",
  ],
  properties: {
    id: { type: "string" },
    saleId: { type: "string" },
    buyer: { type: "string" },
    quantity: { type: "integer" },
    numbers: { type: "array", items: { type: "integer" } },
    state: { type: "string", enum: ["held", "charging", "paid", "released"] },
    releaseReason: { type: ["string", "null"], enum: ["expired", "declined", "compensated", "lost", null] },
    expiresAt: { type: "string", format: "date-time" },
    order: {
      type: ["object", "null"],
      required: ["paymentId", "amountMinor", "createdAt"],
      properties: {
        paymentId: { type: "string" },
        amountMinor: { type: "integer" },
        createdAt: { type: "string", format: "date-time" },
      },
    },
    message: { type: "string", description: "What the buyer sees: held, payment processing, paid, released" },
  },
} as const;
