-- flash-sale's durable truth (FS-10): the sale, its numbered tickets, every hold, the orders.
-- Redis holds the hot counter; these rows are what it is recomputed from (FS-11).

CREATE TABLE sales (
  id            text PRIMARY KEY,
  name          text NOT NULL,
  tickets       int4 NOT NULL CHECK (tickets BETWEEN 1 AND 1000000),
  per_buyer_max int4 NOT NULL CHECK (per_buyer_max BETWEEN 1 AND 100),
  hold_ttl_ms   int8 NOT NULL CHECK (hold_ttl_ms BETWEEN 1000 AND 86400000),
  price_minor   int8 NOT NULL CHECK (price_minor > 0),
  currency      text NOT NULL,
  opens_at      timestamptz NOT NULL,
  -- The stock's generation: a recompute after Redis lost its data starts a new one, and a
  -- reservation Redis admitted under an older one is refused here (FS-11).
  stock_epoch   int8 NOT NULL DEFAULT 1,
  created_at    timestamptz NOT NULL
);

-- One row per ticket, numbered 1..tickets. hold_id binds a number to a hold when the hold is
-- made; rows are claimed with FOR UPDATE SKIP LOCKED, and expiry sets hold_id back to NULL,
-- so an expired hold's number can never collide with a live one.
CREATE TABLE tickets (
  sale_id text NOT NULL REFERENCES sales (id),
  number  int4 NOT NULL,
  hold_id text,
  PRIMARY KEY (sale_id, number)
);
CREATE INDEX tickets_free ON tickets (sale_id, number) WHERE hold_id IS NULL;
CREATE INDEX tickets_by_hold ON tickets (hold_id) WHERE hold_id IS NOT NULL;

CREATE TABLE holds (
  id             text PRIMARY KEY,
  sale_id        text NOT NULL REFERENCES sales (id),
  buyer          text NOT NULL,
  quantity       int4 NOT NULL CHECK (quantity >= 1),
  numbers        int4[] NOT NULL,
  state          text NOT NULL CHECK (state IN ('held', 'charging', 'paid', 'released')),
  release_reason text CHECK (release_reason IN ('expired', 'declined', 'compensated', 'lost')),
  epoch          int8 NOT NULL,
  expires_at     timestamptz NOT NULL,
  created_at     timestamptz NOT NULL,
  updated_at     timestamptz NOT NULL,
  CHECK ((state = 'released') = (release_reason IS NOT NULL))
);
-- One live hold per buyer and sale: two tabs of one buyer cannot hold twice at once.
CREATE UNIQUE INDEX holds_one_live_per_buyer ON holds (sale_id, buyer) WHERE state IN ('held', 'charging');
CREATE INDEX holds_by_buyer ON holds (sale_id, buyer);

CREATE TABLE orders (
  hold_id      text PRIMARY KEY REFERENCES holds (id),
  sale_id      text NOT NULL REFERENCES sales (id),
  buyer        text NOT NULL,
  payment_id   text NOT NULL,
  amount_minor int8 NOT NULL,
  created_at   timestamptz NOT NULL
);

-- FS-10, the last line of defence: a ticket number is in at most one order, whatever Redis
-- said and however many times a charge's outcome is processed.
CREATE TABLE order_tickets (
  sale_id text NOT NULL,
  number  int4 NOT NULL,
  hold_id text NOT NULL REFERENCES orders (hold_id),
  CONSTRAINT order_tickets_one_order_per_ticket PRIMARY KEY (sale_id, number)
);

-- FS-06: one stock row per sale for the three PostgreSQL strategies compared with the script.
CREATE TABLE stock_rows (
  sale_id   text PRIMARY KEY,
  available int8 NOT NULL,
  version   int8 NOT NULL DEFAULT 0
);
