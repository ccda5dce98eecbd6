-- Postgres's 026 moves the ledger's two scope-led indexes onto an md5 of the
-- scope, because a btree entry there holds at most 2704 bytes. SQLite's
-- indexes hold any length, so it has nothing to change; this file keeps the
-- two dialects' versions in step (the loader wants 1, 2, 3… in each).
select 1;
