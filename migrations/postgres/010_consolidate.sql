-- Sleep-time consolidation's state per workspace, written in the
-- transactions of the consolidate jobs and of the session-end hook: what
-- the last finished run covered (memories up to watermark), how many
-- sessions ended since the last run started (the "N sessions" trigger),
-- when runs started and finished (the cooldown), and the workflow run in
-- flight ('' when none), so a workspace has at most one run at a time.
create table consolidate_state (
    workspace        text primary key,
    watermark        bigint not null default 0,
    sessions_since   integer not null default 0,
    run_id           text not null default '',
    last_started_at  timestamptz,
    last_finished_at timestamptz,
    -- what the last finished run did (JSON)
    last_counts      text not null default '{}',
    -- the last consolidate job that looked at the workspace, and what it
    -- decided ("started run …", "skipped: cooldown until …"), for the CLI
    -- that follows it and for operators
    last_job_id      bigint not null default 0,
    last_note        text not null default ''
);
