-- Secrets the processes sharing this database must agree on, one row each,
-- made once by whichever process needs it first and never changed. The
-- first is "bench_capability": the HMAC key of the capabilities a
-- benchmark cell's DSH carries (benchcap), minted by the worker that runs
-- the cell and checked by the serve process that answers it, which may be
-- two processes: the database is what they share.
create table server_secrets (
    name       text primary key,
    secret     text not null,
    created_at timestamp not null
);
