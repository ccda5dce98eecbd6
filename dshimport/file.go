package dshimport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mullhq/mull/dshlog"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/store"
)

// from is the record reading starts from: the saved one, or a fresh one for
// a new file, or for a file now shorter than its saved position (it was
// replaced: read it again from the start).
func (f *file) from() store.DSHImportFile {
	if f.known && f.info.Size() >= f.rec.Offset {
		r := f.rec
		r.Damage = slices.Clone(r.Damage)
		return r
	}
	return store.DSHImportFile{Path: f.path, LastSeq: -1}
}

// reading is one file being read.
type reading struct {
	*scan
	f     *file
	rec   store.DSHImportFile // the last position committed, and its state
	r     *dshlog.Reader
	m     *dshlog.Mapper
	batch []events.Event
}

// errStop ends the reading of a file whose error is recorded.
var errStop = errors.New("stop this file")

func (s *scan) importFile(ctx context.Context, f *file) error {
	if f.unchanged() {
		s.sum.Unchanged++
		return s.settle(ctx, f)
	}
	s.sum.Read++
	rd := &reading{scan: s, f: f, rec: f.from()}
	// Until it is read to its end, the file's record must not look up to
	// date: a crash after a batch would otherwise leave the rest unread.
	rd.rec.ModTime = time.Time{}
	if f.known && rd.rec.Offset != f.rec.Offset {
		s.Logger.Warn("DSH session log got shorter than what was read: reading it again from the start",
			"path", f.path, "size", f.info.Size(), "read_offset", f.rec.Offset)
	}
	if err := rd.read(ctx); err != nil && !errors.Is(err, errStop) {
		return err
	}
	s.account(rd.rec)
	return nil
}

// settle re-judges an unchanged file that ended in a tail DSH was writing:
// once it has not changed for Settle, its import is incomplete.
func (s *scan) settle(ctx context.Context, f *file) error {
	if f.rec.Tail != "" && f.rec.Waiting && !s.recent(f) {
		f.rec.Waiting = false
		s.Logger.Warn("DSH session log is cut short and no longer written to: its import is incomplete",
			"path", f.path, "session_id", f.rec.SessionID, "tail", f.rec.Tail)
		if !s.DryRun {
			if err := s.Store.SaveDSHImportFile(ctx, f.rec); err != nil {
				return err
			}
		}
	}
	s.account(f.rec)
	return nil
}

// read opens the file at its saved position and reads what is new.
func (rd *reading) read(ctx context.Context) error {
	var calls map[string]dshlog.Call
	if err := json.Unmarshal([]byte(orDefault(rd.rec.PendingCalls, "{}")), &calls); err != nil {
		return fmt.Errorf("dshimport: %s: saved pending calls: %w", rd.f.path, err)
	}
	rd.m = dshlog.NewMapper(dshlog.State{
		SessionID: rd.rec.SessionID, Workspace: rd.rec.Workspace, Turn: rd.rec.Turn, LastSeq: rd.rec.LastSeq, Calls: calls,
		SeedLength: rd.rec.SeedLength,
	})
	var err error
	if rd.r, err = dshlog.Open(rd.f.path, dshlog.Pos{Offset: rd.rec.Offset, Skip: rd.rec.FrameSkip, Line: rd.rec.Lines}); err != nil {
		return rd.stop(ctx, err)
	}
	defer rd.r.Close()
	return rd.run(ctx)
}

// run reads to the end of the complete data, committing a batch whenever
// the next row could overflow it. A corrupt frame is recorded and skipped;
// a corrupt line stops the file.
func (rd *reading) run(ctx context.Context) error {
	for {
		before := rd.r.Pos()
		line, err := rd.r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if ce := (*dshlog.CorruptError)(nil); errors.As(err, &ce) && ce.Line == 0 {
			rd.damaged(ce)
			if ce.ResumeAt > 0 {
				continue
			}
			break // nothing after it decodes (yet): the next change of the file tries again
		}
		if err != nil {
			return rd.commit(ctx, before, err)
		}
		// encoding/json would read invalid UTF-8 as U+FFFD without a word:
		// the row is still mapped, so the mapper's state stays whole, but
		// none of its events is stored.
		badBytes := !utf8.Valid(line)
		evs, err := rd.m.Map(line)
		if err != nil {
			return rd.commit(ctx, before, rd.r.Corrupt(err))
		}
		rd.add(evs, badBytes)
		if len(rd.batch)+dshlog.MaxEventsPerRow > rd.BatchSize {
			if err := rd.commit(ctx, rd.r.Pos(), nil); err != nil {
				return err
			}
		}
	}
	rd.rec.Tail, rd.rec.Waiting = "", false
	if rd.r.Incomplete() {
		rd.rec.Tail, rd.rec.Waiting = rd.f.path+": "+rd.r.Tail(), rd.recent(rd.f)
	}
	rd.rec.Size, rd.rec.ModTime = rd.f.info.Size(), rd.f.info.ModTime()
	return rd.commit(ctx, rd.r.Pos(), nil)
}

// maxDamage bounds the corrupt frames kept on a file's record.
const maxDamage = 20

// damaged reports a corrupt frame and keeps it on the record, which the
// next commit saves with the position past it. The same frame met again
// (the file grew after a frame nothing decoded after) replaces its entry.
func (rd *reading) damaged(ce *dshlog.CorruptError) {
	rd.fileError(rd.f, ce)
	rd.Logger.Error("DSH session log has a corrupt zstd frame: its lines are lost", "path", rd.f.path,
		"offset", ce.Offset, "resume_at", ce.ResumeAt, "error", ce.Err)
	key := fmt.Sprintf(": zstd frame at byte %d: ", ce.Offset)
	msg := ce.Error()
	for i, d := range rd.rec.Damage {
		if strings.Contains(d, key) {
			rd.rec.Damage[i] = msg
			return
		}
	}
	switch n := len(rd.rec.Damage); {
	case n < maxDamage-1:
		rd.rec.Damage = append(rd.rec.Damage, msg)
	case n == maxDamage-1:
		rd.rec.Damage = append(rd.rec.Damage, rd.f.path+": more corrupt zstd frames after these (see the log)")
	}
}

// add queues a line's events, leaving out (and reporting with its place)
// any that mull would refuse, so that one odd row does not hold up the rest
// of a session. badBytes: the row is not valid UTF-8, so all its events are
// left out.
func (rd *reading) add(evs []events.Event, badBytes bool) {
	now := rd.Now()
	for i := range evs {
		var why error
		if badBytes {
			why = errors.New("the row is not valid UTF-8")
		} else if err := events.Validate(&evs[i], now); err != nil {
			why = err
		}
		if why != nil {
			rd.leaveOut(evs[i], why)
			continue
		}
		rd.batch = append(rd.batch, evs[i])
		rd.progress.Events++
	}
}

func (rd *reading) leaveOut(e events.Event, why error) {
	at := rd.r.Corrupt(why) // the place of the row just read
	l := LeftOut{Path: rd.f.path, Line: at.Line, Offset: at.Offset, ID: e.ID, Type: string(e.Type), Error: why.Error()}
	rd.sum.Skipped++
	if len(rd.sum.LeftOut) < MaxLeftOut {
		rd.sum.LeftOut = append(rd.sum.LeftOut, l)
	}
	rd.Logger.Warn("DSH event left out: mull would refuse it", "path", l.Path, "line", l.Line, "offset", l.Offset,
		"id", l.ID, "type", l.Type, "error", l.Error)
}

// commit ingests the batch, then records the position after it, with the
// mapper's state and readErr (the reason reading stops here), if any. It
// returns errStop when the file stops with a recorded error.
func (rd *reading) commit(ctx context.Context, pos dshlog.Pos, readErr error) error {
	if len(rd.batch) > 0 {
		refused, err := rd.ingest(ctx, rd.batch)
		if err != nil {
			return err
		}
		if refused != nil {
			return rd.stop(ctx, refused) // nothing stored: keep the last position
		}
		rd.sum.Events += len(rd.batch)
	}
	rd.progress.BytesDone += pos.Offset - rd.rec.Offset
	st := rd.m.State
	calls, err := json.Marshal(st.Calls)
	if err != nil {
		return fmt.Errorf("dshimport: %w", err)
	}
	rd.rec.SessionID, rd.rec.Workspace, rd.rec.Turn, rd.rec.LastSeq = st.SessionID, st.Workspace, st.Turn, st.LastSeq
	rd.rec.SeedLength = st.SeedLength
	rd.rec.Offset, rd.rec.FrameSkip, rd.rec.Lines = pos.Offset, pos.Skip, pos.Line
	rd.rec.PendingCalls = orDefault(string(calls), "{}")
	rd.rec.Events += int64(len(rd.batch))
	rd.batch = rd.batch[:0]
	if readErr != nil {
		return rd.stop(ctx, readErr)
	}
	rd.rec.Error = ""
	return rd.save(ctx)
}

// stop records why the file cannot be read further, and ends its reading.
func (rd *reading) stop(ctx context.Context, why error) error {
	rd.fileError(rd.f, why)
	rd.rec.Error, rd.rec.Tail, rd.rec.Waiting = why.Error(), "", false
	rd.rec.Size, rd.rec.ModTime = rd.f.info.Size(), rd.f.info.ModTime()
	if err := rd.save(ctx); err != nil {
		return err
	}
	return errStop
}

func (rd *reading) save(ctx context.Context) error {
	defer rd.report()
	if rd.DryRun {
		return nil
	}
	return rd.Store.SaveDSHImportFile(ctx, rd.rec)
}

func orDefault(s, def string) string {
	if s == "" || s == "null" {
		return def
	}
	return s
}
