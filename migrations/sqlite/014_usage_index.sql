-- The overhead report (mull report overhead) reads the agent's usage events
-- by type and time, across workspaces: without this index that is a scan of
-- every event ever stored.
create index events_type_time on events (type, time);
