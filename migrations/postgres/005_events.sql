-- DSH sessions as mull knows them from their events. A session is created by
-- its first event and updated, under its row's lock, by every batch that
-- brings it new events.
create table sessions (
    -- DSH's session id ("session-<uuid>")
    id             text primary key,
    -- the DSH cwd of the session's first event
    workspace      text not null,
    -- open; ended (a session_end arrived); idle (silent past ingest.idle_timeout,
    -- reopened by a later event)
    status         text not null,
    -- false for subagent sessions (session_start payload.primary)
    is_primary     boolean not null default true,
    title          text not null default '',
    first_event_at timestamptz not null,
    last_event_at  timestamptz not null,
    ended_at       timestamptz,
    end_reason     text not null default '',
    -- events stored, by type (JSON object {"tool_result": 12, …}), and in all
    counts         text not null default '{}',
    event_count    bigint not null default 0,
    created_at     timestamptz not null,
    updated_at     timestamptz not null
);
create index sessions_workspace_last on sessions (workspace, last_event_at);
create index sessions_status_last on sessions (status, last_event_at);
create index sessions_last on sessions (last_event_at);

-- Every event stored once: the client's id is the key, so a replay is a no-op.
create table events (
    -- the client's id (pushed) or events.DSHID (imported)
    id          text primary key,
    session_id  text not null references sessions (id),
    workspace   text not null,
    type        text not null,
    time        timestamptz not null,
    -- the type's payload, as validated (JSON)
    payload     text not null default '{}',
    -- push (POST /v1/events) or import (DSH session logs)
    source      text not null,
    recorded_at timestamptz not null
);
create index events_session_time on events (session_id, time);
create index events_workspace_time on events (workspace, time);
