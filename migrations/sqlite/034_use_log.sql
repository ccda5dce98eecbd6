-- The use log (issue 15: every number links to the rows behind it). Until
-- now mull kept only running totals: a memory's uses, a playbook's uses,
-- successes and fails, a session's error retros scheduled. Each of those
-- totals now gets one row per step, written in the transaction that moves
-- the total, so for rows written from here on a total and its rows agree.
-- Totals counted before this migration have no rows: the panel says so.

-- One row per use of a memory (store.BumpUses). cause is what used it
-- (store.UseSearch, UseWrite, UseMove, UseRetro, UseReflection); workspace
-- the workspace that used it (a search's, which for a global memory is
-- not the memory's library); job_id and session_id the River job and the
-- session when there is one (0, ''); origin the writer's origin for a
-- duplicate write ('' otherwise). A search adds a row per hit, so this is
-- the table that grows: the row is kept narrow (about 100 bytes with its
-- index entries) and holds no text of the memory.
create table memory_uses (
    id         integer primary key,
    memory_id  bigint not null,
    at         timestamp not null,
    cause      text not null,
    workspace  text not null default '',
    job_id     bigint not null default 0,
    session_id text not null default '',
    origin     text not null default ''
);
-- /memories/{id}/uses: a memory's uses newest first, and their count.
create index memory_uses_memory on memory_uses (memory_id, id);
-- A job's bumps (a retro's or a reflection's repeats): searches have no
-- job, so only the few rows that do are indexed.
create index memory_uses_job on memory_uses (job_id, id) where job_id <> 0;

-- One row per reported use of a playbook (store.UsePlaybook): its outcome
-- and who reported it (store.PlaybookBy*: the agent through the API, with
-- its session when it sends one).
create table playbook_uses (
    id          integer primary key,
    workspace   text not null,
    slug        text not null,
    at          timestamp not null,
    success     boolean not null,
    reported_by text not null default '',
    session_id  text not null default ''
);
-- /playbooks/uses?workspace=W[&slug=S][&outcome=…]: newest first.
create index playbook_uses_playbook on playbook_uses (workspace, slug, id);
create index playbook_uses_workspace on playbook_uses (workspace, id);

-- One row per retro_error job scheduled for a session (the count of
-- error_retros): when it was scheduled (at), the job, and when it is due.
-- folded marks the one a session's end folded into its session retro (the
-- job deleted, the count taken back), so the count is the rows not folded.
create table error_retro_schedules (
    id         integer primary key,
    session_id text not null,
    at         timestamp not null,
    job_id     bigint not null,
    due        timestamp not null,
    folded     boolean not null default false
);
create index error_retro_schedules_session on error_retro_schedules (session_id, id);
