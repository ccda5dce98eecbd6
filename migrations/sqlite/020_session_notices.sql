-- Notices mull has for one session rather than for a workspace's library:
-- the missed-task nudge (kind 'nudge'). GET /v1/notices serves each once,
-- to its session, and stamps served_at.
create table session_notices (
    id          integer primary key,
    session_id  text not null references sessions (id),
    kind        text not null,
    text        text not null,
    -- the turn it is about (0: none); one notice of a kind per turn
    turn        integer not null default 0,
    recorded_at timestamp not null,
    served_at   timestamp
);
create unique index session_notices_turn on session_notices (session_id, kind, turn);
create index session_notices_unserved on session_notices (session_id) where served_at is null;
