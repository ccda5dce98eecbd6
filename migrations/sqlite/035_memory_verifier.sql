-- Who made a memory's last verification (issue 15: a memory's page shows
-- who verified it). Memories keep only the last verification
-- (verified_at), so its verifier is one column beside it: "admin (panel)",
-- "admin (api)", "admin (cli)" or "agent" (store.Actor*, the deciders of
-- proposals), or "consolidation (a source's record time)" on a merge whose
-- verified_at is its newest source's record time, no one's verification.
-- Memories verified before this migration say nobody: '' (shown as
-- "someone (not recorded)"); so does one never verified.
alter table memories add column verified_by text not null default '';
