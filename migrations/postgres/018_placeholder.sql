-- Placeholder for slice A's migration 018 (consolidation LastRunID), so this
-- branch's versions run 1, 2, 3… on their own. The merge drops this file
-- and keeps A's.
select 1;
