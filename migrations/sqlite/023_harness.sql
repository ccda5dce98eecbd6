-- Harness refinement (seed 004): the agent's versioned harness entries
-- (prompt notes, memories, skills, subagent specs), every refinement that
-- changed them, the review job's verdicts and gate, and injection counts.
-- A scope is "global" or "session:<id>" (harness.Scope.Key). Ids are at
-- most 128 characters (the service refuses longer ones), so the keys
-- below index; contents are never indexed.

-- The lock row of a scope: every apply takes it first (Postgres: select
-- ... for update, inserted when missing), so applies of one scope are
-- serialized across processes; revision goes up by one per apply.
create table harness_scopes (
    scope_key text primary key,
    revision  bigint not null default 0
);

-- The current version of every entry; a deleted entry stays as a
-- tombstone (deleted true) so a re-created one continues its versions.
create table harness_entries (
    scope_key      text not null,
    -- prompt, memory, skill, subagent
    kind           text not null,
    id             text not null,
    version        bigint not null,
    content        text not null,
    title          text not null default '',
    description    text not null default '',
    -- '', bundled, pinned, user-owned
    protection     text not null default '',
    source_session text not null default '',
    -- active or archived
    lifecycle      text not null default 'active',
    pinned         boolean not null default false,
    deleted        boolean not null default false,
    -- the refinement that wrote this version
    refinement_id  text not null default '',
    updated_at     timestamp not null,
    primary key (scope_key, kind, id)
);

-- Every version of every entry, kept: what an entry said at T is the
-- latest version recorded at or before T.
create table harness_entry_versions (
    scope_key      text not null,
    kind           text not null,
    id             text not null,
    version        bigint not null,
    content        text not null,
    title          text not null default '',
    description    text not null default '',
    protection     text not null default '',
    source_session text not null default '',
    lifecycle      text not null default 'active',
    pinned         boolean not null default false,
    deleted        boolean not null default false,
    refinement_id  text not null default '',
    updated_at     timestamp not null,
    -- the commit time of the refinement that wrote it
    recorded_at    timestamp not null,
    primary key (scope_key, kind, id, version)
);

-- The refinement history. The primary key is the refinement's id, so a
-- job retried after a crash ("refine_<job id>") cannot apply twice.
create table harness_refinements (
    id             text primary key,
    scope_key      text not null,
    session_id     text not null default '',
    summary        text not null default '',
    rollback_of    text not null default '',
    -- JSON array of harness.AppliedEdit
    applied_edits  text not null,
    committed_at   timestamp not null,
    -- job, agent or admin
    source         text not null,
    job_id         bigint not null default 0,
    automatic      boolean not null default false,
    -- the rollback that reversed it ('' while none did)
    rolled_back_by text not null default ''
);
create index harness_refinements_scope on harness_refinements (scope_key, committed_at);

-- Every review verdict (the seed's reviews.jsonl).
create table harness_reviews (
    id            integer primary key,
    at            timestamp not null,
    session_id    text not null default '',
    workspace     text not null default '',
    scope_key     text not null,
    -- turn-interval, compact, manual, session-end
    trigger       text not null,
    turns         bigint not null default 0,
    outcome       text not null check (outcome in ('declined', 'assessed', 'approved', 'failed')),
    rationale     text not null default '',
    -- the applied refinement, or the pending proposal's id
    refinement_id text not null default '',
    -- JSON array of harness.Rejected
    rejected      text not null,
    job_id        bigint not null default 0,
    -- verbatim or summary ('' when no trajectory was read)
    route         text not null default ''
);
create index harness_reviews_session on harness_reviews (session_id, at);
create index harness_reviews_job on harness_reviews (job_id);

-- The review gate of a session (the seed's SessionGateState), in the
-- store so that counters and the cooldown survive restarts.
create table harness_gates (
    session_id      text primary key,
    workspace       text not null default '',
    turns           bigint not null default 0,
    pending         boolean not null default false,
    pending_reason  text not null default '',
    enqueued        boolean not null default false,
    -- when the job "enqueued" stands for was enqueued (null: not known)
    enqueued_at     timestamp,
    last_attempt_at timestamp,
    closed          boolean not null default false,
    updated_at      timestamp not null
);

-- How often each entry reached a session's context (the wrap-up reads it).
create table harness_injections (
    scope_key        text not null,
    kind             text not null,
    id               text not null,
    session_id       text not null,
    count            bigint not null default 0,
    last_injected_at timestamp not null,
    primary key (scope_key, kind, id, session_id)
);
create index harness_injections_session on harness_injections (session_id);

-- A global refinement held by harness.require_global_approval waits as a
-- proposal of kind 'harness', its payload the refinement to apply
-- ({scope, proposal, baseline versions}). The one-pending-per-workspace
-- rule is the retro's only.
alter table proposals add column kind text not null default 'retro';
alter table proposals add column payload text;
drop index proposals_one_pending;
create unique index proposals_one_pending on proposals (workspace) where status = 'pending' and kind = 'retro';
