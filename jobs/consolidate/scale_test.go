package consolidate_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/jobs/consolidate"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// library is a synthetic workspace of n memories: distinct filler, with
// a duplicate pair planted for every tenth memory (each pair differs only
// in case and punctuation, so a faithful merge exists), half facts, half
// lessons, and one more pair whose merge must be rejected (n+2 memories in
// all). It returns the number of planted pairs that merge.
func library(t testing.TB, s *store.Store, n int) int {
	t.Helper()
	ctx := context.Background()
	pairs := n / 10
	at := time.Now().UTC().Add(-24 * time.Hour)
	err := s.InTx(ctx, func(tx *sql.Tx) error {
		put := func(kind memory.Kind, text string) error {
			_, err := s.InsertMemory(ctx, tx, store.Memory{Workspace: ws, Kind: string(kind), Text: text,
				TextNorm: memory.Normalize(text), Importance: 5, Src: "agent", Origin: "retro", RecordedAt: at})
			return err
		}
		kinds := []memory.Kind{memory.Fact, memory.Lesson}
		texts := synthetic(n - pairs)
		for i, text := range texts[:n-2*pairs] {
			if err := put(kinds[i%2], text); err != nil {
				return err
			}
		}
		for i, text := range texts[n-2*pairs:] {
			if err := put(kinds[i%2], text); err != nil {
				return err
			}
			if err := put(kinds[i%2], strings.ToUpper(text[:1])+text[1:]+"."); err != nil {
				return err
			}
		}
		// One pair a faithful merge cannot come from: the fake answers the
		// longer text, which lacks the other's port.
		if err := put(memory.Fact, "the api server listens on port 8080 in production"); err != nil {
			return err
		}
		return put(memory.Fact, "the api server listens on port 8081 in production (checked)")
	})
	if err != nil {
		t.Fatal(err)
	}
	return pairs
}

// vocabulary is 2000 made-up words: syllable pairs and triples.
var vocabulary = func() []string {
	syl := strings.Fields("ba be bi bo bu da de di do du ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo vu za ze zi zo zu")
	var out []string
	for _, a := range syl {
		for _, b := range syl {
			out = append(out, a+b)
			if len(out) == 2000 {
				return out
			}
			out = append(out, a+b+syl[(len(out)*7)%len(syl)])
		}
	}
	return out
}()

// synthetic is n texts that share little: ten words each, drawn from the
// vocabulary by a seeded generator, plus a number.
func synthetic(n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]string, n)
	for i := range out {
		w := make([]string, 10)
		for j := range w {
			w[j] = vocabulary[r.IntN(len(vocabulary))]
		}
		out[i] = fmt.Sprintf("%s %d", strings.Join(w, " "), i)
	}
	return out
}

// Consolidating a library of 10,000 memories and killing the workers
// mid-run (after the third chunk) then starting new ones finishes the
// chunks left: every chunk's merge is answered exactly once, the run
// merges every planted pair and rejects the lossy one.
func TestConsolidateResumesAfterKill(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := setup(t, s, consolidate.Settings{MinMemories: 1000000})
		e.cfg.Workers.Queues["llm"] = 1
		if err := e.fake.SetScript(&fakeds.Script{Rules: []fakeds.Rule{
			{Kind: "consolidate_merge", Fault: fakeds.FaultSlow, Delay: 150 * time.Millisecond},
		}}); err != nil {
			t.Fatal(err)
		}
		pairs := library(t, s, 10000)
		e.start(t)
		res, err := e.client.Insert(ctx, consolidate.Args{Workspace: ws, Reason: consolidate.ReasonManual, Requested: "k"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		enginetest.WaitFinal(t, e.events, res.Job.ID, 30*time.Second)
		st, _, err := s.GetConsolidateState(ctx, s.DB, ws)
		if err != nil || st.RunID == "" {
			t.Fatalf("no run started: %+v %v", st, err)
		}
		runID := st.RunID
		for range 3 {
			enginetest.WaitFor(t, e.events, 30*time.Second, func(ev *river.Event) bool {
				return ev.Job.Kind == "consolidate_merge" && ev.Job.State == rivertype.JobStateCompleted
			})
		}
		stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := e.client.StopAndCancel(stopCtx); err != nil {
			t.Fatal(err)
		}
		run, err := s.GetWorkflowRun(ctx, runID)
		if err != nil {
			t.Fatal(err)
		}
		done, total := 0, 0
		for _, step := range run.Steps {
			if strings.HasPrefix(step.Name, "merge_") {
				total++
				if step.Status == store.WorkflowStepSucceeded {
					done++
				}
			}
		}
		if done == total {
			t.Fatalf("all %d chunks finished before the kill; the test needs a slower fake", total)
		}
		t.Logf("killed after %d of %d chunks", done, total)

		e.start(t)
		_, c := e.waitRun(t, runID)
		if c.Merged != pairs || c.Rejected != 1 || c.Chunks != total {
			t.Fatalf("counts %+v, want %d merged in %d chunks", c, pairs, total)
		}
		calls, err := s.ListLLMCalls(ctx, store.LLMCallFilter{Kind: "consolidate_merge", Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		ok := map[int64]int{}
		for _, call := range calls {
			if call.Outcome == "ok" {
				ok[call.JobID]++
			}
		}
		run, err = s.GetWorkflowRun(ctx, runID)
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range run.Steps {
			if strings.HasPrefix(step.Name, "merge_") && ok[step.JobID] != 1 {
				t.Fatalf("step %s (job %d) was answered %d times", step.Name, step.JobID, ok[step.JobID])
			}
		}
		if len(ok) != total {
			t.Fatalf("%d merge jobs were answered, want %d", len(ok), total)
		}
	})
}

// BenchmarkConsolidate runs a whole consolidation of a synthetic library
// of 1k, 5k and 10k memories (10% planted duplicate pairs) against the
// fake DeepSeek, and reports the LLM calls and tokens it took: they should
// grow about linearly with the library.
//
//	go test -run '^$' -bench Consolidate -benchtime 1x ./jobs/consolidate/
func BenchmarkConsolidate(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				s := storetest.New(b, store.SQLite)
				e := setup(b, s, consolidate.Settings{})
				pairs := library(b, s, n)
				e.start(b)
				b.StartTimer()
				st, c := e.run(b, consolidate.Args{Workspace: ws, Reason: consolidate.ReasonManual, Requested: "b"})
				if c == nil {
					b.Fatalf("no run: %s", st.LastNote)
				}
				b.StopTimer()
				if c.Merged != pairs || c.Rejected != 1 {
					b.Fatalf("merged %d of %d planted pairs, rejected %d (want the lossy one)", c.Merged, pairs, c.Rejected)
				}
				b.ReportMetric(float64(c.Tokens.Calls), "calls")
				b.ReportMetric(float64(c.Tokens.Prompt), "prompt_tokens")
				b.ReportMetric(float64(c.Tokens.Completion), "completion_tokens")
				b.ReportMetric(float64(c.Tokens.Prompt+c.Tokens.Completion)/float64(n), "tokens/memory")
				b.ReportMetric(float64(c.Chunks), "chunks")
			}
		})
	}
}
