package retrosession_test

import (
	"context"
	"testing"

	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/llm/llmtest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// Two retros of one workspace whose answers carry the same entries, both
// answered before either applies (the llm queue works several at once):
// the second plans against what the first wrote, so each entry is stored
// once and bumped once, and one proposal is pending.
func TestConcurrentRetrosAddOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		arrived, release := make(chan struct{}, 2), make(chan struct{})
		hold := func() {
			arrived <- struct{}{}
			select {
			case <-release:
			case <-testwait.After(t):
			}
		}
		reply := &fakeds.Response{Content: mustJSON(answer)}
		e := startRetros(t, s, retros{llm: llmtest.Options{Fake: fakeds.Options{Script: &fakeds.Script{Rules: []fakeds.Rule{
			{Kind: "retro_session", Response: reply}}}}}, jobs: fast, beforeApply: hold})
		session(t, s, "session-1")
		session(t, s, "session-2")
		for _, id := range []string{"session-1", "session-2"} {
			if _, err := e.client.Insert(ctx, retrosession.Args{SessionID: id}, nil); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 {
			select {
			case <-arrived:
			case <-testwait.After(t):
				t.Fatal("the two retros were not both answered and held")
			}
		}
		close(release)
		done := waitRetros(t, e, 2)
		ids := []int64{done["session-1"].ID, done["session-2"].ID}

		ms := memories(t, s)
		if len(ms) != 3 {
			t.Fatalf("%d memories, want 3 (lesson, fact, method once each): %+v", len(ms), ms)
		}
		for _, m := range ms {
			if m.Uses != 1 || !m.InvalidAt.IsZero() {
				t.Fatalf("memory %+v: want stored by one retro and bumped by the other", m)
			}
		}
		a, b := counts(t, s, ids[0]), counts(t, s, ids[1])
		if a.Added+b.Added != 3 || a.Bumped+b.Bumped != 3 || a.Added*b.Added != 0 {
			t.Fatalf("counts %+v and %+v: want one retro to add 3 and the other to bump them", a, b)
		}
		if ps, err := s.ListProposals(ctx, s.DB, ws, store.ProposalPending); err != nil || len(ps) != 1 || a.Proposal == b.Proposal {
			t.Fatalf("pending proposals %+v, %v (stored by first %t, second %t): want one", ps, err, a.Proposal, b.Proposal)
		}
	})
}
