package negledger

import (
	"context"
	"testing"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A read's file_missing fact is staled by an fs observation of the file
// present under any spelling DSH reports it: the model path scoped by the
// cwd only, the display path only, or a Windows display path (backslashes,
// another drive-letter case) for a pwsh session's relative read. An
// observation of the same relative path under another cwd, or another
// file, stales nothing.
func TestFSObservationKeysStaleReadFact(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cwd      string // the session's cwd and workspace
		readPath string
		miss     []FSObservation // observed present, must stale nothing
		hit      FSObservation   // observed present, stales the fact
	}{
		{name: "model path only", cwd: "/w", readPath: "src/a.go",
			miss: []FSObservation{{Path: "src/b.go"}, {Path: "a.go"}},
			hit:  FSObservation{Path: "src/a.go"}},
		{name: "model path, relative spelled absolute", cwd: "/w", readPath: "src/a.go",
			hit: FSObservation{Path: "/w/src/a.go"}},
		{name: "display path only", cwd: "/w", readPath: "src/a.go",
			miss: []FSObservation{{DisplayPath: "/w/src/b.go"}, {DisplayPath: "/v/src/a.go"}},
			hit:  FSObservation{DisplayPath: "/w/src/a.go"}},
		{name: "display path, unclean", cwd: "/w", readPath: "./src/a.go",
			hit: FSObservation{DisplayPath: "/w/src//a.go"}},
		{name: "windows display path", cwd: `C:\p`, readPath: "a.txt",
			miss: []FSObservation{{DisplayPath: `D:\p\a.txt`}, {DisplayPath: `C:\p\b.txt`}},
			hit:  FSObservation{DisplayPath: `C:\p\a.txt`}},
		{name: "windows display path, slashes and drive case", cwd: `c:\p`, readPath: `sub\a.txt`,
			hit: FSObservation{DisplayPath: "C:/p/sub/a.txt"}},
		{name: "windows model path only", cwd: `C:\p`, readPath: "a.txt",
			hit: FSObservation{Path: "a.txt"}},
		{name: "windows absolute read, display path", cwd: `C:\p`, readPath: `C:\p\a.txt`,
			hit: FSObservation{DisplayPath: `c:\p\a.txt`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, s *store.Store) {
				h := newHarness(t, s, block())
				ctx := context.Background()
				c := h.call("read", read(tc.readPath))
				c.Cwd, c.Workspace = tc.cwd, tc.cwd
				_, o := h.run(c, Outcome{Status: Failed, ErrorCode: ledger.CodeFSNotFound})
				if o.Effect != EffectRecorded {
					t.Fatalf("missing %s = %+v", tc.readPath, o)
				}
				present := func(ob FSObservation) FSResponse {
					t.Helper()
					ob.Observed, ob.Version = ledger.Present, "1"
					r, err := h.svc.ObserveFS(ctx, FSRequest{Session: "s1", Workspace: tc.cwd, Cwd: tc.cwd, Observations: []FSObservation{ob}})
					if err != nil {
						t.Fatalf("fs %+v: %v", ob, err)
					}
					return r
				}
				for _, m := range tc.miss {
					if r := present(m); len(r.Staled) != 0 {
						t.Fatalf("fs %+v staled %v, want nothing", m, r.Staled)
					}
				}
				if f := h.fact(o.FactID); f.Status != ledger.Active {
					t.Fatalf("after the misses = %+v", f)
				}
				if r := present(tc.hit); len(r.Staled) != 1 || r.Staled[0] != o.FactID {
					t.Fatalf("fs %+v staled %v, want fact %d", tc.hit, r.Staled, o.FactID)
				}
				again := h.call("read", read(tc.readPath))
				again.Cwd, again.Workspace = tc.cwd, tc.cwd
				if vr := h.check(again); vr.Verdict != ledger.AnswerVerifyRetry {
					t.Fatalf("after the fs observation = %+v, want verify-retry", vr)
				}
			})
		})
	}
}

// A model-path observation of another project (another cwd, the same
// relative path) stales nothing in this one.
func TestFSModelPathScopedByCwd(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, block())
		_, o := h.run(h.call("read", read("src/a.go")), Outcome{Status: Failed, ErrorCode: ledger.CodeFSNotFound})
		r, err := h.svc.ObserveFS(context.Background(), FSRequest{Session: "s1", Workspace: "/w", Cwd: "/v",
			Observations: []FSObservation{{Path: "src/a.go", Observed: ledger.Present, Version: "1"}}})
		if err != nil || len(r.Staled) != 0 {
			t.Fatalf("fs under /v = %+v, %v; want nothing staled", r, err)
		}
		if f := h.fact(o.FactID); f.Status != ledger.Active {
			t.Fatalf("fact = %+v", f)
		}
	})
}
