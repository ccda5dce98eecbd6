-- Workflow runs and their steps. Each step is worked by one River job; every
-- write to a run's steps happens in a transaction that holds the run's row.
create table workflow_runs (
    id          text primary key,
    name        text not null,
    -- running, succeeded, failed or cancelled
    status      text not null,
    input       text not null default '{}',
    error       text not null default '',
    created_at  timestamptz not null,
    updated_at  timestamptz not null,
    finished_at timestamptz
);
create index workflow_runs_status_created on workflow_runs (status, created_at);
create index workflow_runs_created on workflow_runs (created_at);

create table workflow_steps (
    run_id      text not null references workflow_runs (id),
    name        text not null,
    -- order in the definition, for display
    position    integer not null,
    kind        text not null,
    -- the step job's full args as River stores them (JSON)
    args        text not null,
    -- names of the steps this one waits for (JSON array)
    deps        text not null default '[]',
    -- pending, enqueued, running, succeeded, failed or cancelled
    status      text not null,
    job_id      bigint,
    output      text,
    error       text not null default '',
    attempts    integer not null default 0,
    started_at  timestamptz,
    finished_at timestamptz,
    primary key (run_id, name)
);
create index workflow_steps_job on workflow_steps (job_id);
create index workflow_steps_status on workflow_steps (status);
