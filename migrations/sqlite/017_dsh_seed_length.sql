-- How many leading rows of a forked session's log are its parent's history
-- (the header's seedLength). The mapper skips them; a run that resumes the
-- log past its header needs the number to keep skipping them.
alter table dsh_import_files add column seed_length bigint not null default 0;
