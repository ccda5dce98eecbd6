-- What retro_session leaves besides memories: the workspace's latest
-- handoff (3-5 lines for the next session; a newer retro replaces it), and
-- one row per applied retro job, written in the transaction that completes
-- the job, so a job run again after its commit changes nothing.
create table handoffs (
    workspace   text primary key,
    text        text not null,
    session_id  text not null,
    job_id      bigint not null,
    recorded_at timestamptz not null
);

create table retro_runs (
    job_id      bigint primary key,
    session_id  text not null,
    workspace   text not null,
    applied_at  timestamptz not null,
    -- what it did (JSON: added, bumped, invalidated, rejected, handoff, truncated)
    counts      text not null default '{}'
);
create index retro_runs_session on retro_runs (session_id);

-- Reusable procedures a retro found (the seed's PLAYBOOK:<slug>), upserted
-- by slug: a newer retro replaces the steps, the counters stay.
create table playbooks (
    workspace   text not null,
    slug        text not null,
    -- JSON array of step lines
    steps       text not null,
    uses        integer not null default 0,
    successes   integer not null default 0,
    fails       integer not null default 0,
    verified_at timestamptz,
    session_id  text not null,
    job_id      bigint not null,
    updated_at  timestamptz not null,
    primary key (workspace, slug)
);

-- Improvements to the agent's setup a retro proposed, for the user to
-- accept or reject; at most one pending per workspace.
create table proposals (
    -- 'retro-<job id>'
    id          text primary key,
    workspace   text not null,
    summary     text not null,
    detail      text not null default '',
    -- pending, accepted or rejected
    status      text not null,
    session_id  text not null,
    job_id      bigint not null,
    created_at  timestamptz not null,
    decided_at  timestamptz,
    note        text not null default ''
);
create index proposals_workspace_status on proposals (workspace, status);
