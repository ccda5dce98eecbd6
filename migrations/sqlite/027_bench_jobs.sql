-- Every job a run's cells were ever attempted in. A run's progress sums the
-- LLM calls of these jobs: workflow_steps holds only each step's current
-- job, and River deletes finished jobs after retention.completed, so an
-- operator's retry (a revived step gets a new job) would otherwise drop the
-- tokens and cost of the jobs before it.
create table bench_jobs (
    run_id text not null references bench_runs (id),
    job_id bigint not null,
    primary key (run_id, job_id)
);
