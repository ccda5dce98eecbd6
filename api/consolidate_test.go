package api_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/jobs/consolidate"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/workflows"
)

// consolidateFixture is a server whose River client knows the consolidate
// kinds, as serve's does, but works no jobs: an enqueued planner stays
// available for the test to read.
func consolidateFixture(t *testing.T, s *store.Store, token string) *fixture {
	t.Helper()
	f := &fixture{t: t, s: s, reg: engine.NewRegistry(nil)}
	consolidate.Register(f.reg, consolidate.Deps{Store: s, Runner: workflows.New(s, enginetest.Logger()), Logger: enginetest.Logger()})
	f.c = enginetest.NewClient(t, s, f.reg, enginetest.Config(), false)
	f.srv = f.server(s, token)
	return f
}

// remember stores one memory in ws.
func remember(t *testing.T, s *store.Store, ws string, quarantined bool) {
	t.Helper()
	if _, err := s.InsertMemory(context.Background(), s.DB, store.Memory{Workspace: ws, Kind: "fact", Text: "make test runs the race detector",
		TextNorm: "make test runs the race detector", Origin: "tool", RecordedAt: time.Now().UTC(), Quarantined: quarantined}); err != nil {
		t.Fatal(err)
	}
}

// planners lists the consolidate jobs, oldest first.
func planners(t *testing.T, f *fixture) []*rivertype.JobRow {
	t.Helper()
	res, err := f.c.JobList(context.Background(), river.NewJobListParams().Kinds("consolidate").First(100))
	if err != nil {
		t.Fatal(err)
	}
	return res.Jobs
}

type consolidateStateBody struct {
	Workspace      string             `json:"workspace"`
	Watermark      int64              `json:"watermark"`
	SessionsSince  int                `json:"sessions_since"`
	RunID          string             `json:"run_id"`
	LastStartedAt  *time.Time         `json:"last_started_at"`
	LastFinishedAt *time.Time         `json:"last_finished_at"`
	LastCounts     consolidate.Counts `json:"last_counts"`
	LastJobID      int64              `json:"last_job_id"`
	LastNote       string             `json:"last_note"`
}

type consolidateStatusBody struct {
	Workspaces []consolidateStateBody `json:"workspaces"`
}

type consolidateRunBody struct {
	JobID     int64  `json:"job_id"`
	Workspace string `json:"workspace"`
	Follow    string `json:"follow"`
}

func TestConsolidateStatus(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := consolidateFixture(t, s, "")
		ctx := context.Background()

		rec := f.do("GET", "/v1/admin/consolidate", "")
		expect(t, rec, http.StatusOK, nil)
		if !strings.Contains(rec.Body.String(), `"workspaces": []`) {
			t.Fatalf("no states: body %s", rec.Body)
		}

		started := time.Date(2026, 11, 28, 18, 30, 0, 0, time.UTC)
		counts := consolidate.Counts{Workspace: "/a", Memories: 40, Clusters: 3, Chunks: 1, Merged: 2, Superseded: 5,
			Principles: 4, Derived: true, Tokens: consolidate.Tokens{Calls: 2, Prompt: 9000, Completion: 700}}
		raw, err := json.Marshal(counts)
		if err != nil {
			t.Fatal(err)
		}
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			if err := s.PutConsolidateState(ctx, tx, store.ConsolidateState{Workspace: "/a", Watermark: 40, SessionsSince: 2,
				LastStartedAt: started, LastFinishedAt: started.Add(90 * time.Second), LastCounts: string(raw),
				LastJobID: 7, LastNote: "finished run wf_1: 2 merged"}); err != nil {
				return err
			}
			return s.PutConsolidateState(ctx, tx, store.ConsolidateState{Workspace: "", SessionsSince: 1})
		})
		if err != nil {
			t.Fatal(err)
		}

		var all consolidateStatusBody
		expect(t, f.do("GET", "/v1/admin/consolidate", ""), http.StatusOK, &all)
		if len(all.Workspaces) != 2 || all.Workspaces[0].Workspace != "" || all.Workspaces[1].Workspace != "/a" {
			t.Fatalf("all states = %+v", all)
		}
		global := all.Workspaces[0]
		if global.SessionsSince != 1 || global.LastStartedAt != nil || global.LastFinishedAt != nil ||
			!reflect.DeepEqual(global.LastCounts, consolidate.Counts{}) {
			t.Fatalf("global state = %+v", global)
		}
		a := all.Workspaces[1]
		if a.Watermark != 40 || a.SessionsSince != 2 || a.LastJobID != 7 || a.LastNote != "finished run wf_1: 2 merged" ||
			a.LastStartedAt == nil || !a.LastStartedAt.Equal(started) ||
			a.LastFinishedAt == nil || !a.LastFinishedAt.Equal(started.Add(90*time.Second)) ||
			!reflect.DeepEqual(a.LastCounts, counts) {
			t.Fatalf("state of /a = %+v", a)
		}
		// The counts are an object, not a string holding one.
		if body := f.do("GET", "/v1/admin/consolidate", "").Body.String(); !strings.Contains(body, `"last_counts": {`) {
			t.Fatalf("last_counts is not a JSON object: %s", body)
		}

		var one consolidateStatusBody
		expect(t, f.do("GET", "/v1/admin/consolidate?workspace=/a", ""), http.StatusOK, &one)
		if len(one.Workspaces) != 1 || !reflect.DeepEqual(one.Workspaces[0], a) {
			t.Fatalf("?workspace=/a = %+v", one)
		}
		// An empty workspace is the global library, not "all".
		var empty consolidateStatusBody
		expect(t, f.do("GET", "/v1/admin/consolidate?workspace=", ""), http.StatusOK, &empty)
		if len(empty.Workspaces) != 1 || !reflect.DeepEqual(empty.Workspaces[0], global) {
			t.Fatalf("?workspace= = %+v", empty)
		}
		expectError(t, f.do("GET", "/v1/admin/consolidate?workspace=/nowhere", ""), http.StatusNotFound,
			`workspace "/nowhere" has no consolidation state`)
	})
}

func TestConsolidateRun(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := consolidateFixture(t, s, "")
		remember(t, s, "/a", false)
		remember(t, s, "", false)
		remember(t, s, "/held", true) // quarantined, but a memory all the same

		post := func(body string) consolidateRunBody {
			t.Helper()
			var res consolidateRunBody
			expect(t, f.do("POST", "/v1/admin/consolidate", body), http.StatusAccepted, &res)
			return res
		}
		args := func(id int64) consolidate.Args {
			t.Helper()
			row, err := f.c.JobGet(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if row.Kind != "consolidate" || row.Queue != consolidate.Spec.Queue || row.State != rivertype.JobStateAvailable {
				t.Fatalf("job %d: kind %s queue %s state %s", id, row.Kind, row.Queue, row.State)
			}
			var a consolidate.Args
			if err := json.Unmarshal(row.EncodedArgs, &a); err != nil {
				t.Fatal(err)
			}
			return a
		}

		before := time.Now().UTC()
		first := post(`{"workspace":"/a"}`)
		want := consolidateRunBody{JobID: first.JobID, Workspace: "/a",
			Follow: `mull consolidate status "/a" / GET /v1/admin/consolidate?workspace=/a`}
		if first != want {
			t.Fatalf("POST /a = %+v, want %+v", first, want)
		}
		a := args(first.JobID)
		requested, err := time.Parse(time.RFC3339Nano, a.Requested)
		if err != nil || requested.Before(before) || requested.After(time.Now()) {
			t.Fatalf("requested %q (%v), want a time since %s", a.Requested, err, before)
		}
		if a != (consolidate.Args{Workspace: "/a", Reason: consolidate.ReasonManual, Requested: a.Requested}) {
			t.Fatalf("args = %+v", a)
		}

		// A second ask is a job of its own, stamped with the server's clock.
		f.offset.Store(int64(time.Hour))
		second := post(`{"workspace":"/a","dry_run":false}`)
		if second.JobID == first.JobID {
			t.Fatalf("second POST reused job %d", first.JobID)
		}
		if r2, _ := time.Parse(time.RFC3339Nano, args(second.JobID).Requested); r2.Sub(requested) < time.Hour {
			t.Fatalf("second requested %s, first %s", r2, requested)
		}
		f.offset.Store(0)

		global := post(`{"workspace":"","dry_run":true}`)
		if global.Workspace != "" || !strings.HasPrefix(global.Follow, `mull consolidate status "" / `) {
			t.Fatalf("POST global = %+v", global)
		}
		if g := args(global.JobID); g.Workspace != "" || !g.DryRun || g.Reason != consolidate.ReasonManual || g.Requested == "" {
			t.Fatalf("global args = %+v", g)
		}
		held := post(`{"workspace":"/held"}`)

		// Bad requests and unknown workspaces enqueue nothing.
		for body, msg := range map[string]string{
			`{}`:                                "workspace: required",
			`{"dry_run":true}`:                  "workspace: required",
			`{"workspace":null}`:                "workspace: required",
			`{"workspace":"/a","force":true}`:   "unknown field",
			`{"workspace":5}`:                   "invalid JSON",
			`{"workspace":"/a","dry_run":"no"}`: "invalid JSON",
			`not json`:                          "invalid JSON",
			``:                                  "invalid JSON",
		} {
			expectError(t, f.do("POST", "/v1/admin/consolidate", body), http.StatusBadRequest, msg)
		}
		expectError(t, f.do("POST", "/v1/admin/consolidate", `{"workspace":"/none"}`), http.StatusNotFound,
			`workspace "/none" has no memories`)

		var ids []int64
		for _, j := range planners(t, f) {
			ids = append(ids, j.ID)
		}
		if want := []int64{first.JobID, second.JobID, global.JobID, held.JobID}; !reflect.DeepEqual(ids, want) {
			t.Fatalf("planners %v, want %v", ids, want)
		}
	})
}

func TestConsolidateAdminGuard(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := consolidateFixture(t, s, token)
		remember(t, s, "/a", false)
		const body = `{"workspace":"/a"}`

		for _, opts := range [][]reqOpt{nil, {bearer("nope")}, {header("Authorization", token)}} {
			expectError(t, f.do("GET", "/v1/admin/consolidate", "", opts...), http.StatusUnauthorized, "Authorization: Bearer")
			expectError(t, f.do("POST", "/v1/admin/consolidate", body, opts...), http.StatusUnauthorized, "Authorization: Bearer")
		}
		if n := len(planners(t, f)); n != 0 {
			t.Fatalf("%d planners after refused POSTs", n)
		}
		expect(t, f.do("GET", "/v1/admin/consolidate", "", bearer(token), from("203.0.113.5:1234")), http.StatusOK, nil)
		expect(t, f.do("POST", "/v1/admin/consolidate", body, bearer(token), from("203.0.113.5:1234")), http.StatusAccepted, nil)

		// Without a token, only loopback.
		open := f.server(s, "")
		for _, method := range []string{"GET", "POST"} {
			expectError(t, serve(open, method, "/v1/admin/consolidate", body, from("203.0.113.5:1234")), http.StatusForbidden, "loopback")
		}
		expect(t, serve(open, "POST", "/v1/admin/consolidate", body, from("[::1]:5000")), http.StatusAccepted, nil)
		if n := len(planners(t, f)); n != 2 {
			t.Fatalf("%d planners, want 2", n)
		}
	})
}
