-- The lesson model of the dsh-lessons seed (000): structured lessons on the
-- memories table, declared conflicts, tasks with the decision environment
-- frozen at their start, their reflections, a per-session event ordinal and
-- the missed-task nudge counter.

-- A structured lesson's scope ('' for other kinds), the session it names,
-- its fields (JSON of memory.LessonFields, '' none), the task whose
-- reflection wrote it, its lifecycle and the lesson it was promoted from.
alter table memories add column scope text not null default '';
alter table memories add column scope_session text not null default '';
alter table memories add column lesson text not null default '';
alter table memories add column task_id text not null default '';
-- active, superseded, deprecated, deleted. Every state but active sets
-- invalid_at: the two timelines stay the truth for "what was believed at T".
alter table memories add column state text not null default 'active';
alter table memories add column promoted_from_id bigint not null default 0;
update memories set state = case when superseded_by > 0 then 'superseded' else 'deleted' end
    where invalid_at is not null;
create index memories_state_kind on memories (state, kind);
create index memories_task on memories (task_id);

-- Declared conflicts between lessons (memory.ConflictKind: condition, goal,
-- contradiction, apparent). Stored and shown; never resolved by mull.
create table memory_links (
    id          integer primary key,
    from_id     bigint not null references memories (id),
    to_id       bigint not null references memories (id),
    kind        text not null,
    note        text not null default '',
    recorded_at timestamp not null,
    -- the River job and the task that declared it; 0 / '' none
    job_id      bigint not null default 0,
    task_id     text not null default ''
);
create index memory_links_from on memory_links (from_id);
create index memory_links_to on memory_links (to_id);

-- Tasks the agent opened (kind task: 'task-<uuid>') or mull made of a
-- substantive turn no task covered (kind turn: 'turn-<session>-<turn>').
create table tasks (
    id              text primary key,
    kind            text not null,
    session_id      text not null,
    workspace       text not null,
    goal            text not null,
    expected        text not null default '',
    -- open, then succeeded, failed, abandoned or aborted
    status          text not null,
    result          text not null default '',
    opened_at       timestamp not null,
    closed_at       timestamp,
    -- the task's window on its session's events: seq above open_seq, up to
    -- close_seq
    open_seq        bigint not null default 0,
    close_seq       bigint not null default 0,
    -- the decision environment (JSON lesson.Snapshot), written once at
    -- open and never updated
    environment     text not null,
    -- the snapshot's lesson ids (JSON array), recorded at close
    environment_ids text not null default '',
    -- job, agent or both: who reflects on it
    reflect_mode    text not null default '',
    reflected_at    timestamp,
    -- '', job or agent: who did
    reflected_by    text not null default '',
    reflect_job_id  bigint not null default 0
);
create index tasks_session_status on tasks (session_id, status);
create index tasks_status on tasks (status);
-- The environment is written once: the database refuses to change it.
create trigger tasks_environment_written_once before update of environment on tasks
    when new.environment is not old.environment
begin
    select raise(abort, 'tasks.environment is written once, at the task''s open');
end;

-- The snapshot's lessons, one row each: the precedent counts join these
-- with task outcomes (verified: succeeded; counter: failed; exposures: all
-- closed).
create table task_lessons (
    task_id   text not null references tasks (id),
    lesson_id bigint not null,
    -- among the snapshot's detailed entries, not the omitted ones
    detailed  boolean not null,
    primary key (task_id, lesson_id)
);
create index task_lessons_lesson on task_lessons (lesson_id);
-- The snapshot's rows are written once too.
create trigger task_lessons_written_once_update before update on task_lessons
begin
    select raise(abort, 'task_lessons are written once, at the task''s open');
end;
create trigger task_lessons_written_once_delete before delete on task_lessons
begin
    select raise(abort, 'task_lessons are written once, at the task''s open');
end;

-- Each reflection on a task (by the job or the agent), and what became of
-- each lesson it proposed: `mull lessons stats` counts come from here.
create table reflections (
    id               integer primary key,
    task_id          text not null references tasks (id),
    -- job or agent
    reflected_by     text not null,
    job_id           bigint not null default 0,
    assessment       text not null default '',
    -- the adversarial review (JSON, '' none) and its verdict
    critique         text not null default '',
    verdict          text not null default '',
    lessons_recorded integer not null default 0,
    recorded_at      timestamp not null
);
create index reflections_task on reflections (task_id);

create table reflection_items (
    id             integer primary key,
    reflection_id  bigint not null references reflections (id),
    -- the lesson's position in the reflection's output
    idx            integer not null,
    -- new, repeat, revise, none
    relation       text not null,
    -- the lesson a repeat or revise names; the memory written; 0 none
    target_id      bigint not null default 0,
    memory_id      bigint not null default 0,
    -- the check that refused it ('' accepted) and why
    refused_check  text not null default '',
    refused_reason text not null default '',
    -- this lesson's adversarial review (JSON, '' none) and its verdict
    -- (holds, narrowed, withdrawn; '' none): lessons_lookup shows them
    critique       text not null default '',
    verdict        text not null default ''
);
create index reflection_items_reflection on reflection_items (reflection_id, idx);

-- A per-session ordinal, assigned at insert under the session's lock
-- (event_count before the batch + position); events stored before this
-- migration are numbered by (time, id).
alter table events add column seq bigint not null default 0;
update events set seq = r.rn
    from (select id, row_number() over (partition by session_id order by time, id) as rn from events) as r
    where events.id = r.id;
-- Unique: two events of a session never share a place in its order, so
-- task windows cannot overlap. New events are numbered from event_count,
-- so it starts at least at the backfill's last number.
create unique index events_session_seq on events (session_id, seq) where seq > 0;
update sessions set event_count = max(event_count, (select coalesce(max(seq), 0) from events where events.session_id = sessions.id));

-- Missed-task nudges served this session (reflection.nudge_max_per_session).
alter table sessions add column nudges integer not null default 0;
