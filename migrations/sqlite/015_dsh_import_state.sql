-- Honest import: what of a DSH session log could not be imported, kept on
-- its row so that every later run (and sessions show) still says so.
-- the corrupt zstd frames skipped, each named with its byte offset (a JSON
-- list of messages), until the file is read again from its start
alter table dsh_import_files add column damage text not null default '[]';
-- what the data past read_offset is when it does not parse (a line without
-- its newline, a frame the file ends inside); '' when the file ends cleanly
alter table dsh_import_files add column tail text not null default '';
-- the file had changed within import.settle when that tail was seen: DSH is
-- still writing it (waiting), not a log cut short (incomplete)
alter table dsh_import_files add column tail_waiting boolean not null default false;
