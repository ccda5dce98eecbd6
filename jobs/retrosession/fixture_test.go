package retrosession_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/dshimport"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/llm/llmtest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// fixtureHome is DSH's home of the 4 sanitized fixture sessions, beside the
// checkout.
var fixtureHome = filepath.Join("..", "..", "..", "shared", "fixtures", "dsh", "home")

// fixture is one fixture session, the retro the fake answers for it, and
// what goes wrong with its first attempt.
type fixture struct {
	session, workspace string
	// marker is text of the user's request, which the excerpt quotes: the
	// fake matches the session's requests by it.
	marker string
	// fault fails the first attempt: a 500, or a hang the job's timeout
	// cuts (the job's context is cancelled mid-call).
	fault  fakeds.Fault
	answer retro.Output
}

var fixtures = []fixture{
	{session: "session-618f3e2a-04f1-4c07-ae0d-228954177258", workspace: "/home/dev/invoice-utils", marker: "after yesterday's discount change", fault: fakeds.FaultServerError,
		answer: retro.Output{
			Lessons:   []retro.Entry{{Text: "unittest failed in apply_discount -> percent was used as a fraction -> divide whole percentages by 100", Importance: 7}},
			Facts:     []retro.Entry{{Text: "invoice-utils runs its tests with python3 -m unittest -v"}},
			Methods:   []retro.Entry{{Text: "a money test fails after a formula change -> compare the expected and actual amounts first -> their ratio shows the scale error"}},
			Handoff:   []string{"Fixed apply_discount in invoice.py.", "All 3 invoice tests pass.", "Next: test a 0% discount."},
			Playbooks: []retro.Playbook{{Slug: "fix-invoice-formula", Steps: []string{"run python3 -m unittest -v", "read the failing function in invoice.py", "fix it and rerun the tests"}}},
		}},
	{session: "session-84a3435d-c180-4f56-b4b3-055358da3772", workspace: "/home/dev/docs-site", marker: "default listen port according to docs/config.md", fault: fakeds.FaultHang,
		answer: retro.Output{
			Lessons:   []retro.Entry{{Text: "read of docs/config.md failed with FS_NOT_FOUND -> the page is docs/configuration.md -> list docs/ before guessing a path"}},
			Facts:     []retro.Entry{{Text: "docs-site's default listen_port is 8443, overridden by RELAY_LISTEN_PORT"}},
			Methods:   []retro.Entry{{Text: "a docs page is missing -> list its directory -> finds a renamed page at once"}},
			Handoff:   []string{"Answered the listen port question from docs/configuration.md.", "docs/config.md does not exist.", "Next: nothing open."},
			Playbooks: []retro.Playbook{{Slug: "find-a-docs-page", Steps: []string{"list docs/", "grep for the setting's name", "read the matching page"}}},
		}},
	{session: "session-408c8942-fb3e-4b5d-b173-6ffaed7af3c2", workspace: "/home/dev/weather-cli", marker: "Add a --units flag",
		answer: retro.Output{
			Lessons:   []retro.Entry{{Text: "the turn failed with SERVER upstream model worker unavailable -> provider outage -> retry the turn later, after the provider status page shows the outage is over"}},
			Facts:     []retro.Entry{{Text: "weather-cli prints Celsius and has no --units flag yet"}},
			Methods:   []retro.Entry{{Text: "a provider error cuts a turn short -> resume from the last finished step -> nothing is done twice"}},
			Handoff:   []string{"Started adding --units (metric|imperial).", "The turn died on a provider error.", "Next: add the flag in the CLI entry point."},
			Playbooks: []retro.Playbook{{Slug: "add-cli-flag", Steps: []string{"find the CLI entry point", "add the flag and its conversion", "run the CLI with each value"}}},
		}},
	{session: "session-293a9768-7a49-469f-a49b-03ee04ee1add", workspace: "/home/dev/shop-frontend", marker: "add a GET /api/health endpoint",
		answer: retro.Output{
			Lessons:   []retro.Entry{{Text: "npm would have broken the lockfile -> the repo uses pnpm only -> run every install and script with pnpm"}},
			Facts:     []retro.Entry{{Text: "shop-frontend's API routes live in server/api.ts"}},
			Methods:   []retro.Entry{{Text: "adding an API endpoint -> add it to the routes table, then pnpm run typecheck -> catches route typos before the tests"}},
			Handoff:   []string{"Added GET /api/health returning {status: 'ok'}.", "Typecheck and tests pass with pnpm.", "Next: nothing open."},
			Playbooks: []retro.Playbook{{Slug: "add-api-endpoint", Steps: []string{"add the route in server/api.ts", "pnpm run typecheck", "pnpm test"}}},
		}},
}

// faultError is what a first attempt's fault leaves in the job's errors.
var faultError = map[fakeds.Fault]string{
	fakeds.FaultServerError: "http_500",
	fakeds.FaultHang:        "context deadline exceeded",
}

// fixtureScript answers each fixture's retro with its answer, after its
// first attempt's fault.
func fixtureScript() *fakeds.Script {
	var sc fakeds.Script
	for _, f := range fixtures {
		if f.fault != "" {
			sc.Rules = append(sc.Rules, fakeds.Rule{Kind: "retro_session", Marker: f.marker, Times: 1, Fault: f.fault})
		}
		sc.Rules = append(sc.Rules, fakeds.Rule{Kind: "retro_session", Marker: f.marker,
			Response: &fakeds.Response{Content: mustJSON(f.answer)}})
	}
	return &sc
}

// startWith is start with the fake's options and the retro_session
// override given: the fixture test needs a job timeout to cut a hung call.
func startWith(t *testing.T, s *store.Store, opts fakeds.Options, jobs config.JobOverride) *env {
	t.Helper()
	return startRetros(t, s, retros{llm: llmtest.Options{Fake: opts, CallTimeout: 30 * time.Second}, jobs: jobs})
}

// The fixture sessions, imported from DSH's logs and ended, each get their
// scripted retro: its memories once, with origin retro, in the session's
// workspace; its handoff; its playbook. A first attempt that failed with a
// 500 or was cut mid-call by the job's timeout is retried and applies once.
// Re-working a job that applied (killed after its commit, before River
// recorded it) changes nothing and asks nothing; a second retro of each
// session, a job of its own as `mull retro run` makes, bumps instead of
// adding copies.
func TestFixtureRetros(t *testing.T) {
	if _, err := os.Stat(fixtureHome); err != nil {
		t.Skipf("fixtures not found beside the checkout: %v", err)
	}
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := startWith(t, s, fakeds.Options{Script: fixtureScript()},
			config.JobOverride{Backoff: config.Duration(10 * time.Millisecond), MaxAttempts: 10, Timeout: config.Duration(fixtureJobTimeout)})
		svc := ingest.New(s, ingest.Hooks{SessionEnded: retrosession.SessionEnded})
		svc.UseClient(e.client)
		importFixtures(t, s, svc)
		for _, f := range fixtures {
			endSession(t, s, svc, f.session)
		}
		first := waitRetros(t, e, len(fixtures))
		for _, f := range fixtures {
			job := first[f.session]
			checkApplied(t, s, f, job.ID, 0)
			checkAttempts(t, f, job)
		}
		before := allMemories(t, s)

		// Killed after the commit, before River recorded it: re-working the
		// same job changes nothing and asks the model nothing.
		calls := len(e.fake.Requests())
		for _, f := range fixtures {
			job := &river.Job[retrosession.Args]{JobRow: &rivertype.JobRow{ID: first[f.session].ID, Kind: "retro_session", Attempt: 3},
				Args: retrosession.Args{SessionID: f.session}}
			if err := e.worker.Work(ctx, job); err != nil {
				t.Fatal(err)
			}
		}
		if got := allMemories(t, s); fmt.Sprint(got) != fmt.Sprint(before) || len(e.fake.Requests()) != calls {
			t.Fatalf("re-working applied jobs changed memories or called the model:\n%+v\n%+v", got, before)
		}

		// A second retro of each session is a new job; it adds nothing.
		for _, f := range fixtures {
			res, err := e.client.Insert(ctx, retrosession.Args{SessionID: f.session, Requested: "second"}, nil)
			if err != nil || res.UniqueSkippedAsDuplicate {
				t.Fatalf("second retro of %s: %v (skipped as duplicate: %t)", f.session, err, res != nil && res.UniqueSkippedAsDuplicate)
			}
			if row := enginetest.WaitFinal(t, e.events, res.Job.ID); row.State != rivertype.JobStateCompleted {
				t.Fatalf("second retro job %d ended %s: %v", row.ID, row.State, row.Errors)
			}
			checkApplied(t, s, f, first[f.session].ID, 1)
			if h, _, _ := s.GetHandoff(ctx, s.DB, f.workspace); h.JobID != res.Job.ID {
				t.Fatalf("%s: handoff of job %d, want the second retro's %d", f.workspace, h.JobID, res.Job.ID)
			}
			if run, _, _ := s.GetRetroRun(ctx, s.DB, res.Job.ID); !strings.Contains(run.Counts, `"added":0,"bumped":3,`) {
				t.Fatalf("%s: second retro counts %s, want 3 bumped", f.workspace, run.Counts)
			}
		}
		if got := allMemories(t, s); len(got) != len(before) {
			t.Fatalf("%d memories after the second retros, want still %d", len(got), len(before))
		}
	})
}

// fixtureJobTimeout cuts the hung first attempt. It is short so the test
// is, which means a loaded machine can cut a healthy attempt too: such an
// attempt is retried like the hang, and checkAttempts allows it.
const fixtureJobTimeout = 3 * time.Second

// checkAttempts checks the job's failed attempts: a faulted session's first
// one failed with its fault; any other failure is the job's timeout cutting
// an attempt that a busy machine made slow (applied once all the same, as
// checkApplied shows).
func checkAttempts(t *testing.T, f fixture, job *rivertype.JobRow) {
	t.Helper()
	errs := job.Errors
	if f.fault != "" {
		// The fault is the first model call's: an attempt the busy
		// machine's timeout cut before it called the model comes first.
		at := slices.IndexFunc(errs, func(e rivertype.AttemptError) bool { return strings.Contains(e.Error, faultError[f.fault]) })
		if at < 0 {
			t.Fatalf("%s: job %d errors %v; want an attempt failed with %s", f.workspace, job.ID, errs, faultError[f.fault])
		}
		errs = slices.Delete(slices.Clone(errs), at, at+1)
	}
	for _, e := range errs {
		if !strings.Contains(e.Error, "context deadline exceeded") {
			t.Fatalf("%s: job %d failed an attempt with %q; want only its fault or the job's timeout", f.workspace, job.ID, e.Error)
		}
	}
	if job.Attempt != len(job.Errors)+1 {
		t.Fatalf("%s: job %d attempt %d with errors %v; want one more attempt than failures", f.workspace, job.ID, job.Attempt, job.Errors)
	}
	if len(errs) > 0 {
		t.Logf("%s: %d healthy attempts cut by the %s job timeout on this machine", f.workspace, len(errs), fixtureJobTimeout)
	}
}

// importFixtures imports the fixture home through svc; DSH's logs do not end
// the sessions.
func importFixtures(t *testing.T, s *store.Store, svc *ingest.Service) {
	t.Helper()
	im := &dshimport.Importer{Home: fixtureHome, Store: s, Logger: enginetest.Logger(),
		Ingester: dshimport.IngestFunc(func(ctx context.Context, b []events.Event, source string) (int, int, error) {
			r, err := svc.IngestBatch(ctx, b, source)
			return r.Stored, r.Duplicates, err
		})}
	sum, err := im.Scan(context.Background())
	if err != nil || sum.Files != len(fixtures) || len(sum.Errors) != 0 || sum.Stored == 0 {
		t.Fatalf("import: %+v, %v", sum, err)
	}
	for _, f := range fixtures {
		if sess, err := s.GetSession(context.Background(), f.session); err != nil || sess.Workspace != f.workspace || !sess.Primary {
			t.Fatalf("imported session %s: %+v, %v", f.session, sess, err)
		}
	}
}

// endSession stores a session_end a second after the session's last event:
// the ingest hook enqueues its retro in that transaction.
func endSession(t *testing.T, s *store.Store, svc *ingest.Service, id string) {
	t.Helper()
	sess, err := s.GetSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	end := events.Event{ID: id + "-end", Type: events.SessionEnd, SessionID: id, Workspace: sess.Workspace,
		Time: sess.LastEventAt.Add(time.Second), Payload: json.RawMessage(`{"reason":"completed"}`)}
	res, err := svc.IngestBatch(context.Background(), []events.Event{end}, store.SourcePush)
	if err != nil || !slices.Equal(res.Ended, []string{id}) {
		t.Fatalf("end %s: %+v, %v", id, res, err)
	}
}

// waitRetros waits until n retro_session jobs completed and returns their
// rows by session; a job that ends otherwise fails the test.
func waitRetros(t *testing.T, e *env, n int) map[string]*rivertype.JobRow {
	t.Helper()
	done := map[string]*rivertype.JobRow{}
	for len(done) < n {
		ev := enginetest.WaitFor(t, e.events, func(ev *river.Event) bool {
			return ev.Job.Kind == "retro_session" && ev.Job.FinalizedAt != nil
		})
		if ev.Job.State != rivertype.JobStateCompleted {
			t.Fatalf("retro job %d ended %s: %v", ev.Job.ID, ev.Job.State, ev.Job.Errors)
		}
		var args retrosession.Args
		if err := json.Unmarshal(ev.Job.EncodedArgs, &args); err != nil {
			t.Fatal(err)
		}
		row, err := e.client.JobGet(context.Background(), ev.Job.ID)
		if err != nil {
			t.Fatal(err)
		}
		done[args.SessionID] = row
	}
	return done
}

// checkApplied: the workspace holds exactly the answer's lesson, fact and
// method, once each, from job, used uses times since; its handoff is the
// answer's; its playbook is stored.
func checkApplied(t *testing.T, s *store.Store, f fixture, job int64, uses int) {
	t.Helper()
	ctx := context.Background()
	ms, err := s.ListMemories(ctx, s.DB, store.MemoryFilter{Workspaces: []string{f.workspace}, All: true, Oldest: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{storedLesson(t, f.answer.Lessons[0].Text): "lesson", f.answer.Facts[0].Text: "fact", f.answer.Methods[0].Text: "method"}
	if len(ms) != len(want) {
		t.Fatalf("%s: %d memories, want %d: %+v", f.workspace, len(ms), len(want), ms)
	}
	for _, m := range ms {
		if kind, ok := want[m.Text]; !ok || m.Kind != kind || m.Origin != "retro" || m.Workspace != f.workspace ||
			m.SessionID != f.session || m.JobID != job || m.Uses != uses || m.Quarantined || !m.InvalidAt.IsZero() {
			t.Fatalf("%s: memory %+v; want one of %v from job %d with %d uses", f.workspace, m, want, job, uses)
		}
		delete(want, m.Text)
	}
	h, ok, err := s.GetHandoff(ctx, s.DB, f.workspace)
	if !ok || err != nil || h.Text != strings.Join(f.answer.Handoff, "\n") || h.SessionID != f.session {
		t.Fatalf("%s: handoff %+v, %v, %v", f.workspace, h, ok, err)
	}
	pbs, err := s.ListPlaybooks(ctx, s.DB, f.workspace)
	p := f.answer.Playbooks[0]
	if err != nil || len(pbs) != 1 || pbs[0].Slug != p.Slug || !slices.Equal(pbs[0].Steps, p.Steps) {
		t.Fatalf("%s: playbooks %+v, %v", f.workspace, pbs, err)
	}
}

func allMemories(t *testing.T, s *store.Store) []store.Memory {
	t.Helper()
	ms, err := s.ListMemories(context.Background(), s.DB, store.MemoryFilter{All: true, Oldest: true})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// storedLesson is the Text a retro's LESSONS line is stored with: the
// structured lesson's one-line rendering (retro.Structure).
func storedLesson(t *testing.T, line string) string {
	t.Helper()
	m, _, err := retro.Structure(memory.Memory{Kind: memory.Lesson, Workspace: "/w", Text: line, Origin: memory.OriginRetro}, time.Now())
	if err != nil {
		t.Fatalf("lesson %q: %v", line, err)
	}
	return m.Text
}
