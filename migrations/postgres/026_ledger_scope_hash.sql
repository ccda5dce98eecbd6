-- The ledger's two indexes that led with the raw scope (a workspace path, up
-- to 4096 bytes) refused any scope longer than a btree entry holds (2704
-- bytes, less once compressed): the fact or observation of such a workspace
-- could not be stored. They lead with the scope's md5 instead, a column the
-- database computes, so no writer can leave it out; a query matches it and
-- then the scope itself (a collision costs a row read, never a wrong row).
-- SQLite has no such limit and keeps its indexes.
alter table ledger_facts add column scope_hash text generated always as (md5(scope)) stored;
drop index ledger_facts_scope_status;
create index ledger_facts_scope_status on ledger_facts (scope_hash, status);

alter table ledger_observations add column scope_hash text generated always as (md5(scope)) stored;
drop index ledger_observations_scope;
create index ledger_observations_scope on ledger_observations (scope_hash, observed_at);
