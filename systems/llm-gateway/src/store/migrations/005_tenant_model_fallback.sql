-- 005_tenant_model_fallback: whether a tenant accepts an answer from another model when its
-- model's deployments have no capacity (LG-10: a downgrade trades quality for availability,
-- and which clients accept it is a product decision). true keeps the behaviour before this.

ALTER TABLE tenants ADD COLUMN accepts_model_fallback boolean NOT NULL DEFAULT true;
