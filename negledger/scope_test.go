package negledger

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A workspace as long as a request may name (PathMax), in characters that
// do not compress: its facts and observations are stored, listed, counted
// and staled like any other (Postgres indexes the scope by its hash, since
// a btree entry holds at most 2704 bytes).
func TestLongWorkspace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, block())
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(3, 4))
		const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		b := []byte{'/'}
		for len(b) < PathMax {
			b = append(b, chars[rng.IntN(len(chars))])
		}
		ws := string(b)
		call := func(tool string, args map[string]any) Call {
			c := h.call(tool, args)
			c.Cwd, c.Workspace = ws, ws
			return c
		}
		if _, o := h.run(call("bash", bash("make")), exit(2)); o.Effect != EffectRecorded {
			t.Fatalf("a failure in a long workspace: %+v", o)
		}
		_, o := h.run(call("read", read("gone.txt")), Outcome{Status: Failed, ErrorCode: "FS_NOT_FOUND"})
		if o.Effect != EffectRecorded {
			t.Fatalf("a missing file in a long workspace: %+v", o)
		}
		if chk := h.check(call("bash", bash("make"))); chk.Verdict != ledger.AnswerDeny {
			t.Fatalf("the repeat: %+v, want deny", chk)
		}
		fs, err := h.svc.ObserveFS(ctx, FSRequest{Session: "s1", Workspace: ws, Cwd: ws,
			Observations: []FSObservation{{Path: "gone.txt", DisplayPath: "gone.txt", Observed: ledger.Present, Version: "v1"}}})
		if err != nil || len(fs.Staled) != 1 || fs.Staled[0] != o.FactID {
			t.Fatalf("fs = %+v, %v; want fact %d staled", fs, err, o.FactID)
		}
		facts, err := h.svc.List(ctx, Filter{Workspace: ws, CurrentOnly: true})
		if err != nil || len(facts) != 2 {
			t.Fatalf("list = %d facts, %v; want 2", len(facts), err)
		}
		sum, err := h.svc.Stats(ctx, ws)
		if err != nil || sum.Current != 2 || sum.CallsDenied != 1 {
			t.Fatalf("stats = %+v, %v", sum, err)
		}
	})
}
