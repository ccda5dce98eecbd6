-- Placeholder for slice P2a's migration 020, so this branch's versions run
-- 1, 2, 3… on their own. The merge drops this file and keeps P2a's (if it
-- has one).
select 1;
