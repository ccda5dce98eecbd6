-- The retro_error rule's state per session, written in the ingest
-- transaction that schedules a retro_error job: how many were scheduled
-- (at most jobs.retro_error's max per session) and when the latest is due
-- (the next one is due at least the minimum gap later).
create table error_retros (
    session_id        text primary key,
    count             integer not null default 0,
    last_scheduled_at timestamp not null
);
