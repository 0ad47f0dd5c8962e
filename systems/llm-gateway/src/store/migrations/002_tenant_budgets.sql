-- 002_tenant_budgets: each tenant's quota beside its keys (LG-14: the key and quota table).
-- Requests and tokens per budget window (a minute by default: RPM and TPM, LG-05).

ALTER TABLE tenants
  ADD COLUMN rpm int4 NOT NULL DEFAULT 600 CHECK (rpm BETWEEN 1 AND 100000000),
  ADD COLUMN tpm int8 NOT NULL DEFAULT 200000 CHECK (tpm BETWEEN 1 AND 1000000000000);
