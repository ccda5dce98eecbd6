package dshimport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/dshlog"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestImportFixtureHome(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		home := copyHome(t)
		ing := newFakeIngest()
		im := newImporter(s, home, ing)
		var last Progress
		calls := 0
		im.Progress = func(p Progress) { last, calls = p, calls+1 }

		sum := scanOK(t, im)
		want := Summary{Files: 4, Read: 4, Events: 73, Stored: 73, Errors: []FileError{}}
		if fmt.Sprint(sum) != fmt.Sprint(want) {
			t.Fatalf("summary %+v\nwant %+v", sum, want)
		}
		ing.requireStored(t, allEvents(t, s1), allEvents(t, s2), allEvents(t, s3), allEvents(t, s4))
		for i, b := range ing.batches {
			if len(b) > DefaultBatchSize || ing.sources[i] != "import" {
				t.Errorf("batch %d: %d events from %q", i, len(b), ing.sources[i])
			}
		}
		var size int64
		for _, ss := range []session{s1, s2, s3, s4} {
			info, _ := os.Stat(ss.in(home))
			size += info.Size()
		}
		if last != (Progress{FilesDone: 4, FilesTotal: 4, Events: 73, BytesDone: size, BytesTotal: size}) || calls < 4 {
			t.Errorf("last progress %+v after %d calls", last, calls)
		}

		// The table knows how far each file was read.
		recs := records(t, s)
		for _, ss := range []session{s1, s2, s3, s4} {
			r := recs[ss.in(home)]
			info, _ := os.Stat(ss.in(home))
			if r.Offset != info.Size() || r.FrameSkip != 0 || r.LastSeq != ss.lastSeq || r.Events != int64(ss.events) ||
				r.Error != "" || r.PendingCalls != "{}" || r.Size != info.Size() || !r.ModTime.Equal(info.ModTime()) {
				t.Errorf("%s: record %+v", ss.rel, r)
			}
		}

		// Running it again sends nothing.
		n := len(ing.batches)
		sum = scanOK(t, im)
		if sum.Unchanged != 4 || sum.Read != 0 || sum.Events != 0 || len(ing.batches) != n {
			t.Fatalf("second scan %+v sent %d batches", sum, len(ing.batches)-n)
		}
	})
}

// A file cut mid-line, as DSH leaves it between two writes, imports up to
// the cut; once the file is complete, the rest, with no gap and nothing
// sent twice.
func TestTruncatedPlainLogResumes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		home := homeWith(t)
		full := readBytes(t, s4.in(fixtureHome))
		cut := bytes.Index(full, []byte(`{"type":"tool/result","seq":110`)) + 25
		writeLog(t, s4.in(home), full[:cut])
		ing := newFakeIngest()
		im := newImporter(s, home, ing)

		sum := scanOK(t, im)
		if sum.Waiting != 1 || len(sum.Errors) != 0 || sum.Events != 13 {
			t.Fatalf("truncated scan %+v", sum)
		}
		rec := records(t, s)[s4.in(home)]
		lineStart := int64(bytes.LastIndexByte(full[:cut], '\n') + 1)
		if rec.Offset != lineStart || rec.LastSeq != 109 || rec.PendingCalls == "{}" {
			t.Fatalf("record %+v; want offset %d, seq 109 and the edit call waiting", rec, lineStart)
		}
		if sum := scanOK(t, im); sum.Unchanged != 1 || sum.Events != 0 {
			t.Fatalf("unchanged truncated file read again: %+v", sum)
		}

		writeLog(t, s4.in(home), full)
		sum = scanOK(t, im)
		if sum.Waiting != 0 || sum.Events != 10 || sum.Duplicates != 0 {
			t.Fatalf("completed scan %+v", sum)
		}
		ing.requireStored(t, allEvents(t, s4))
		requireSentOnce(t, ing)
		edit := ing.stored[events.DSHID("session-293a9768-7a49-469f-a49b-03ee04ee1add", 110, "")]
		if !strings.Contains(string(edit.Payload), `"tool":"edit"`) {
			t.Errorf("the result after the cut lost its call: %s", edit.Payload)
		}
	})
}

// A zstd log cut inside a frame (DSH crashed mid-write, or is writing)
// imports the complete frames, then the rest once the frame is whole.
func TestTruncatedZstdLogResumes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		home := homeWith(t)
		full := readBytes(t, s1.in(fixtureHome))
		writeLog(t, s1.in(home), full[:len(full)/2])
		ing := newFakeIngest()
		im := newImporter(s, home, ing)
		im.BatchSize = 4 // and batches end mid-frame

		sum := scanOK(t, im)
		if sum.Waiting != 1 || len(sum.Errors) != 0 || sum.Events == 0 || sum.Events >= s1.events {
			t.Fatalf("truncated scan %+v", sum)
		}
		if rec := records(t, s)[s1.in(home)]; rec.Offset >= int64(len(full)/2) || rec.Offset == 0 {
			t.Fatalf("record %+v: want the start of the cut frame", rec)
		}

		writeLog(t, s1.in(home), full)
		sum = scanOK(t, im)
		if sum.Waiting != 0 || sum.Duplicates != 0 {
			t.Fatalf("completed scan %+v", sum)
		}
		ing.requireStored(t, allEvents(t, s1))
		requireSentOnce(t, ing)
	})
}

// A crash between a batch's commit and the saved position re-sends that
// one batch, as duplicates; a batch that failed is sent again whole.
func TestRestartSendsAtMostOneBatchAgain(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		home := homeWith(t, s1, s4)
		ing := newFakeIngest()
		ing.fail = func(n int) (error, bool) {
			switch n {
			case 3:
				return errDown, false // refused: nothing stored
			case 7:
				return errDown, true // stored, then the process "died"
			}
			return nil, false
		}
		im := newImporter(s, home, ing)
		im.BatchSize = 5

		for _, wantBatches := range []int{3, 7} {
			_, err := im.Scan(context.Background())
			if !errors.Is(err, errDown) || len(ing.batches) != wantBatches {
				t.Fatalf("scan: %v after %d batches; want the ingest failure at batch %d", err, len(ing.batches), wantBatches)
			}
		}
		sum := scanOK(t, im)
		if sum.Duplicates != len(ing.batches[6]) || len(sum.Errors) != 0 {
			t.Fatalf("after the crash: %+v; want batch 7's %d events as duplicates", sum, len(ing.batches[6]))
		}
		ing.requireStored(t, allEvents(t, s1), allEvents(t, s4))
		for id, n := range ing.sent() {
			again := n > 1
			in3, in7 := contains(ing.batches[2], id), contains(ing.batches[6], id)
			if again && !in3 && !in7 || n > 2 {
				t.Errorf("%s sent %d times", id, n)
			}
		}
	})
}

// A batch ingest refuses stops its file with an error, without losing its
// place: the next scan sends it again, and a crash after that scan's first
// batch still leaves the rest of the file to read.
func TestRefusedBatchIsSentAgain(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		home := homeWith(t, s1)
		ing := newFakeIngest()
		ing.fail = func(n int) (error, bool) {
			switch n {
			case 2:
				return &events.FieldError{Index: 0, Field: "time", Problem: "more than a day in the future"}, false
			case 4:
				return errDown, false
			}
			return nil, false
		}
		im := newImporter(s, home, ing)
		im.BatchSize = 4

		sum := scanOK(t, im)
		if len(sum.Errors) != 1 || !strings.Contains(sum.Errors[0].String(), s1.in(home)+": ingest refused the events: event 0: time:") {
			t.Fatalf("summary %+v", sum)
		}
		if _, err := im.Scan(context.Background()); !errors.Is(err, errDown) || len(ing.batches) != 4 {
			t.Fatalf("second scan: %v after %d batches", err, len(ing.batches))
		}
		if sum := scanOK(t, im); len(sum.Errors) != 0 || sum.Duplicates != 0 {
			t.Fatalf("third scan %+v", sum)
		}
		ing.requireStored(t, allEvents(t, s1))
	})
}

// A corrupt log is reported with its path and place; the lines before the
// corruption (and, for a zstd frame, the frames after it) and every other
// file are imported; a fixed file resumes. Both stay listed as incomplete
// on every scan until they are not.
func TestCorruptLogDoesNotStopTheOthers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		home := copyHome(t)
		plain := readBytes(t, s4.in(home))
		lines := bytes.SplitAfter(plain, []byte("\n"))
		lines[39] = []byte("{\"type\":\"tool/re\x00\n")
		writeLog(t, s4.in(home), bytes.Join(lines, nil))
		z := readBytes(t, s1.in(home))
		bad := bytes.Clone(z)
		bad[len(z)*2/3] ^= 0x5a
		writeLog(t, s1.in(home), bad)
		ing := newFakeIngest()
		im := newImporter(s, home, ing)

		sum := scanOK(t, im)
		if len(sum.Errors) != 2 || sum.Read != 4 || len(sum.Incomplete) != 2 {
			t.Fatalf("summary %+v", sum)
		}
		if e := sum.Errors[0]; e.Path != s1.in(home) || !strings.Contains(e.Error, s1.in(home)+": zstd frame at byte ") ||
			!strings.Contains(e.Error, "reading resumes at the frame at byte") {
			t.Errorf("zstd error %+v", e)
		}
		if e := sum.Errors[1]; e.Path != s4.in(home) || !strings.Contains(e.Error, s4.in(home)+": line 40 (byte ") ||
			!strings.Contains(e.Error, "bad JSON") || e.String() != e.Error {
			t.Errorf("plain error %+v", e)
		}
		s1evs, _, err := dshlog.ReadFile(s1.in(home)) // every event outside the bad frame
		if err == nil || len(s1evs) >= s1.events || s1evs[len(s1evs)-1].ID != allEvents(t, s1)[s1.events-1].ID {
			t.Fatalf("the bad frame's file reads as %d events, %v", len(s1evs), err)
		}
		s4evs := allEvents(t, s4)
		ing.requireStored(t, allEvents(t, s2), allEvents(t, s3), s4evs[:8], s1evs)
		if rec := records(t, s)[s4.in(home)]; rec.Error != sum.Errors[1].Error || rec.Lines != 39 {
			t.Errorf("record %+v", rec)
		}
		if rec := records(t, s)[s1.in(home)]; len(rec.Damage) != 1 || rec.Damage[0] != sum.Errors[0].Error || rec.Error != "" {
			t.Errorf("record %+v", rec)
		}

		// Still corrupt: the line is reported again, the skipped frame is
		// listed as incomplete, nothing is sent again.
		n := len(ing.batches)
		sum = scanOK(t, im)
		if len(sum.Errors) != 1 || len(sum.Incomplete) != 2 || sum.Events != 0 || len(ing.batches) != n {
			t.Fatalf("rescan %+v", sum)
		}
		if i := sum.Incomplete[0]; i.Path != s1.in(home) || i.Reason != records(t, s)[s1.in(home)].Damage[0] {
			t.Errorf("incomplete %+v", i)
		}

		// Repaired: the rest comes, the error clears; the lost frame stays.
		writeLog(t, s4.in(home), plain)
		if sum := scanOK(t, im); len(sum.Errors) != 0 || len(sum.Incomplete) != 1 || sum.Events != len(s4evs)-8 {
			t.Fatalf("after the repair %+v", sum)
		}
		if rec := records(t, s)[s4.in(home)]; rec.Error != "" || rec.LastSeq != s4.lastSeq {
			t.Errorf("record %+v", rec)
		}
	})
}

// Events the bridge plugin pushed live and the same rows imported later
// carry the same ids, so they are stored once.
func TestPushedAndImportedMeet(t *testing.T) {
	s := storetest.New(t, store.SQLite)
	home := homeWith(t, s1)
	ing := newFakeIngest()
	sid := "session-618f3e2a-04f1-4c07-ae0d-228954177258"
	for _, id := range []string{"dsh:" + sid + ":session_start", events.DSHID(sid, 7, ""), events.DSHID(sid, 45, ""), events.DSHID(sid, 200, "")} {
		ing.stored[id] = events.Event{ID: id} // as pushed by integrations/dsh
	}
	sum := scanOK(t, newImporter(s, home, ing))
	if sum.Events != 20 || sum.Stored != 16 || sum.Duplicates != 4 {
		t.Fatalf("summary %+v", sum)
	}
}

func TestDryRunStoresNothing(t *testing.T) {
	s := storetest.New(t, store.SQLite)
	im := &Importer{Home: copyHome(t), Store: s, DryRun: true, Now: func() time.Time { return time.UnixMilli(1795977438816).Add(time.Hour) }}
	sum := scanOK(t, im)
	if sum.Events != 73 || sum.Stored != 0 || len(records(t, s)) != 0 {
		t.Fatalf("dry run %+v left %d records", sum, len(records(t, s)))
	}
}

func TestScanNeedsASessionsDirectory(t *testing.T) {
	s := storetest.New(t, store.SQLite)
	_, err := newImporter(s, t.TempDir(), newFakeIngest()).Scan(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no DSH sessions directory at") {
		t.Fatalf("err %v", err)
	}
}

// Watch scans at start and on every tick, reading only what grew.
func TestWatchImportsWhatGrows(t *testing.T) {
	s := storetest.New(t, store.SQLite)
	home := homeWith(t, s2)
	full := readBytes(t, s4.in(fixtureHome))
	writeLog(t, s4.in(home), full[:len(full)/3])
	writeLog(t, filepath.Join(home, "sessions", "--x--", "session-bad", "session.jsonl.zstd"), []byte("not zstd, and longer than a frame header"))
	ing := newFakeIngest()
	im := newImporter(s, home, ing)
	var logs bytes.Buffer
	im.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- im.watch(ctx, ticks) }()

	ticks <- time.Now() // received once the first scan is over
	if got := len(ing.sent()); got < s2.events+1 || got >= s2.events+s4.events {
		t.Fatalf("after the first scan: %d events", got)
	}
	appendLog(t, s4.in(home), full[len(full)/3:]) // as DSH writes: the scan running now may see part of it
	ticks <- time.Now()                           // the second scan is over; the third starts
	ticks <- time.Now()                           // the third is over
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ing.requireStored(t, allEvents(t, s2), allEvents(t, s4))
	requireSentOnce(t, ing)
	if n := strings.Count(logs.String(), "cannot be read past a point"); n != 1 || !strings.Contains(logs.String(), "not a zstd frame") {
		t.Errorf("the corrupt file was logged %d times over three scans, want once:\n%s", n, logs.String())
	}
}

func requireSentOnce(t *testing.T, ing *fakeIngest) {
	t.Helper()
	for id, n := range ing.sent() {
		if n != 1 {
			t.Errorf("%s sent %d times", id, n)
		}
	}
}

func contains(batch []events.Event, id string) bool {
	for _, e := range batch {
		if e.ID == id {
			return true
		}
	}
	return false
}

// prefixStored is the leading events of evs the fake stored: those before
// a corruption point.
func prefixStored(ing *fakeIngest, evs []events.Event) []events.Event {
	for i, e := range evs {
		if _, ok := ing.stored[e.ID]; !ok {
			return evs[:i]
		}
	}
	return evs
}

// A scan that stored AnalyzeAfter events or more refreshes the statistics
// of the tables an import fills (Postgres); a smaller one, or a dry run,
// leaves them to autovacuum.
func TestScanAnalyzesAfterLargeImport(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		analyzed := func() bool {
			if s.Dialect != store.Postgres {
				return false
			}
			for _, table := range store.ImportTables {
				if !storetest.Analyzed(t, s, table) {
					return false
				}
			}
			return true
		}
		// A negative threshold is a mistake, refused before anything is
		// read, naming it.
		fake := newFakeIngest()
		bad := newImporter(s, homeWith(t, s4), fake)
		bad.AnalyzeAfter = -1
		if sum, err := bad.Scan(context.Background()); err == nil || !strings.Contains(err.Error(), "AnalyzeAfter is -1") || sum.Stored != 0 {
			t.Fatalf("AnalyzeAfter -1: %+v, %v", sum, err)
		}
		if len(fake.batches) != 0 {
			t.Fatalf("a refused scan ingested %d batches", len(fake.batches))
		}
		dry := newImporter(s, homeWith(t, s4), nil)
		dry.DryRun, dry.AnalyzeAfter = true, 1
		if sum := scanOK(t, dry); sum.Events != s4.events || analyzed() {
			t.Fatalf("dry run: %+v, analyzed %v", sum, analyzed())
		}
		small := newImporter(s, homeWith(t, s3), newFakeIngest())
		small.AnalyzeAfter = s3.events + 1
		if sum := scanOK(t, small); sum.Stored != s3.events || analyzed() {
			t.Fatalf("scan below the threshold: %+v, analyzed %v", sum, analyzed())
		}
		large := newImporter(s, homeWith(t, s4), newFakeIngest())
		large.AnalyzeAfter = s4.events
		if sum := scanOK(t, large); sum.Stored != s4.events || analyzed() != (s.Dialect == store.Postgres) {
			t.Fatalf("scan at the threshold: %+v, analyzed %v", sum, analyzed())
		}
	})
}
