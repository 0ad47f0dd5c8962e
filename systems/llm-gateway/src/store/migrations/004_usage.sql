-- 004_usage: what each request used and cost, per tenant and model (the usage API), and
-- each tenant's spend limit per spend window (money budgets, as LiteLLM's max_budget).
-- Costs in nano-dollars (int8: 9.2 billion dollars at most), from the price table at the
-- time of the request. A cache hit is a row with no provider tokens and cost 0.

CREATE TABLE llm_usage (
  id                   bigserial   PRIMARY KEY,
  tenant_id            text        NOT NULL,
  model                text        NOT NULL,
  -- The deployment that answered (model@destination); NULL for a cache hit or no answer.
  served_by            text,
  outcome              text        NOT NULL,
  fallback             text        NOT NULL DEFAULT 'none',
  prompt_tokens        int8        NOT NULL CHECK (prompt_tokens >= 0),
  cached_prompt_tokens int8        NOT NULL CHECK (cached_prompt_tokens >= 0),
  completion_tokens    int8        NOT NULL CHECK (completion_tokens >= 0),
  cost_nano_usd        int8        NOT NULL CHECK (cost_nano_usd >= 0),
  created_at           timestamptz NOT NULL
);
CREATE INDEX llm_usage_tenant_time ON llm_usage (tenant_id, created_at);

-- NULL: no money budget.
ALTER TABLE tenants ADD COLUMN spend_limit_nano_usd int8 CHECK (spend_limit_nano_usd > 0);
