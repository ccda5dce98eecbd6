package dshimport

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/mullhq/mull/dshlog"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// testClock is the one clock of a test's importer and store.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *testClock { return &testClock{t: time.UnixMilli(1795977438816).Add(time.Hour)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// clockedImporter reads home with the clock's time, import.settle 10s.
func clockedImporter(s *store.Store, home string, ing Ingester, c *testClock) *Importer {
	s.SetClock(c.Now)
	im := newImporter(s, home, ing)
	im.Now, im.Settle = c.Now, 10*time.Second
	return im
}

func setMtime(t *testing.T, path string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

// frameStarts lists where a zstd log's frames start (DSH's logs hold no
// magic number inside a frame).
func frameStarts(t *testing.T, b []byte) []int {
	t.Helper()
	var at []int
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte{0x28, 0xb5, 0x2f, 0xfd})
		if j < 0 {
			break
		}
		at = append(at, i+j)
		i += j + 4
	}
	if len(at) < 12 {
		t.Fatalf("%d frames; the fixture has one per DSH write batch", len(at))
	}
	return at
}

func sessionImport(t *testing.T, s *store.Store, id string) store.SessionImport {
	t.Helper()
	si, err := s.SessionImport(context.Background(), id)
	if err != nil || si == nil {
		t.Fatalf("session import of %s: %+v, %v", id, si, err)
	}
	return *si
}

const s1ID = "session-618f3e2a-04f1-4c07-ae0d-228954177258"

// The issue's log: one corrupted block header in a zstd log was "waiting
// for DSH to finish" (exit 0, the events before it), and the next run said
// nothing. It is an error naming the file and the frame's offset, the
// frames after it are read, and every later run lists the session's import
// as incomplete.
func TestCorruptBlockHeaderIsNamedAndSkipped(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		c := newClock()
		home := homeWith(t)
		bad := readBytes(t, s1.in(fixtureHome))
		frame := frameStarts(t, bad)[10]
		var h zstd.Header
		if err := h.Decode(bad[frame:]); err != nil {
			t.Fatal(err)
		}
		bh, size := frame+h.HeaderSize, 100_000 // the block claims more than the file holds
		bad[bh] = bad[bh]&7 | byte(size<<3)
		bad[bh+1], bad[bh+2] = byte(size>>5), byte(size>>13)
		writeLog(t, s1.in(home), bad)
		setMtime(t, s1.in(home), c.Now().Add(-time.Hour)) // settled long ago
		ing := newFakeIngest()
		im := clockedImporter(s, home, ing, c)

		sum := scanOK(t, im)
		where := fmt.Sprintf("%s: zstd frame at byte %d: ", s1.in(home), frame)
		if sum.Waiting != 0 || len(sum.Errors) != 1 || !strings.HasPrefix(sum.Errors[0].Error, where) ||
			!strings.Contains(sum.Errors[0].Error, "a block header is wrong") {
			t.Fatalf("summary %+v; want one error at %q", sum, where)
		}
		if len(sum.Incomplete) != 1 || sum.Incomplete[0].SessionID != s1ID || !strings.HasPrefix(sum.Incomplete[0].Reason, where) {
			t.Fatalf("incomplete %+v", sum.Incomplete)
		}
		// The frames after the bad one are imported, up to the session's last event.
		around, _, err := dshlog.ReadFile(s1.in(home))
		whole := allEvents(t, s1)
		if err == nil || len(around) >= len(whole) || around[len(around)-1].ID != whole[len(whole)-1].ID {
			t.Fatalf("read %d of %d events around the bad frame, %v", len(around), len(whole), err)
		}
		ing.requireStored(t, around)
		t.Logf("imported %d of the session's %d events around the bad frame at byte %d", len(around), len(whole), frame)

		// Every later run says so, without sending anything again.
		for range 2 {
			c.Add(time.Hour)
			n := len(ing.batches)
			sum := scanOK(t, im)
			if sum.Unchanged != 1 || len(sum.Errors) != 0 || len(sum.Incomplete) != 1 ||
				!strings.HasPrefix(sum.Incomplete[0].Reason, where) || len(ing.batches) != n {
				t.Fatalf("later run %+v", sum)
			}
		}
		if si := sessionImport(t, s, s1ID); si.State != store.ImportIncomplete || !strings.HasPrefix(si.Reason, where) {
			t.Fatalf("session import %+v", si)
		}
	})
}

// A zstd log cut inside a frame is waiting while it changed within
// import.settle, then incomplete on every run, until DSH (or anyone)
// completes it.
func TestCutZstdLogWaitsThenIsIncomplete(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		c := newClock()
		home := homeWith(t)
		full := readBytes(t, s1.in(fixtureHome))
		cut := len(full) / 2
		writeLog(t, s1.in(home), full[:cut])
		setMtime(t, s1.in(home), c.Now().Add(-2*time.Second)) // DSH wrote it 2s ago
		ing := newFakeIngest()
		im := clockedImporter(s, home, ing, c)

		sum := scanOK(t, im)
		if sum.Waiting != 1 || len(sum.Incomplete) != 0 || len(sum.Errors) != 0 || sum.Events == 0 {
			t.Fatalf("fresh cut: %+v", sum)
		}
		if si := sessionImport(t, s, s1ID); si.State != store.ImportWaiting || !strings.Contains(si.Reason, "DSH is still writing it") {
			t.Fatalf("session import %+v", si)
		}

		c.Add(9 * time.Second) // 11s after the last write: settled
		for range 2 {
			sum = scanOK(t, im)
			if sum.Waiting != 0 || len(sum.Incomplete) != 1 || sum.Events != 0 {
				t.Fatalf("settled cut: %+v", sum)
			}
			c.Add(time.Minute)
		}
		why := sum.Incomplete[0].Reason
		if !strings.Contains(why, s1.in(home)+": the zstd frame at byte ") || !strings.Contains(why, fmt.Sprintf("is cut short: the file ends at byte %d", cut)) {
			t.Fatalf("reason %q", why)
		}
		if si := sessionImport(t, s, s1ID); si.State != store.ImportIncomplete || si.Reason != why {
			t.Fatalf("session import %+v", si)
		}

		appendLog(t, s1.in(home), full[cut:])
		sum = scanOK(t, im)
		if sum.Waiting != 0 || len(sum.Incomplete) != 0 || len(sum.Errors) != 0 {
			t.Fatalf("completed: %+v", sum)
		}
		ing.requireStored(t, allEvents(t, s1))
		requireSentOnce(t, ing)
		if si := sessionImport(t, s, s1ID); si.State != store.ImportComplete || si.Reason != "" {
			t.Fatalf("session import %+v", si)
		}
	})
}

// A size change seen within import.settle is DSH writing too, even with an
// old modification time (a copy that kept it); an old cut file seen for the
// first time is incomplete at once.
func TestCutPlainLogSettlesBySizeAndTime(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		c := newClock()
		home := homeWith(t)
		full := readBytes(t, s4.in(fixtureHome))
		cut := bytes.Index(full, []byte(`{"type":"tool/result","seq":110`)) + 25
		old := c.Now().Add(-time.Hour)
		writeLog(t, s4.in(home), full[:cut])
		setMtime(t, s4.in(home), old)
		im := clockedImporter(s, home, newFakeIngest(), c)

		sum := scanOK(t, im)
		lineStart := bytes.LastIndexByte(full[:cut], '\n') + 1
		want := fmt.Sprintf("%s: line %d (byte %d) has no newline: the file ends at byte %d", s4.in(home),
			bytes.Count(full[:lineStart], []byte("\n"))+1, lineStart, cut)
		if sum.Waiting != 0 || len(sum.Incomplete) != 1 || !strings.Contains(sum.Incomplete[0].Reason, want) {
			t.Fatalf("old cut file: %+v; want incomplete with %q", sum, want)
		}

		c.Add(3 * time.Second)
		appendLog(t, s4.in(home), full[cut:cut+10]) // still no newline
		setMtime(t, s4.in(home), old)
		if sum := scanOK(t, im); sum.Waiting != 1 || len(sum.Incomplete) != 0 {
			t.Fatalf("grown 3s after the last look: %+v", sum)
		}
		c.Add(20 * time.Second)
		if sum := scanOK(t, im); sum.Unchanged != 1 || sum.Waiting != 0 || len(sum.Incomplete) != 1 {
			t.Fatalf("settled again: %+v", sum)
		}
	})
}
