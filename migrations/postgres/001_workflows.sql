-- Workflow runs and their steps. Each step is worked by one River job.
create table workflow_runs (
    id          text primary key,
    name        text not null,
    status      text not null,
    input       text not null default '{}',
    error       text not null default '',
    created_at  timestamptz not null,
    updated_at  timestamptz not null,
    finished_at timestamptz
);
create index workflow_runs_status_created on workflow_runs (status, created_at);

create table workflow_steps (
    run_id      text not null references workflow_runs (id),
    name        text not null,
    kind        text not null,
    args        text not null,
    deps        text not null default '[]',
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
