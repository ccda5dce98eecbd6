package api_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs/reflecttask"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/tasks"
)

// noReflect stands in for the reflect_task worker so the kind can be
// enqueued; the tests never work it.
type noReflect struct {
	river.WorkerDefaults[reflecttask.Args]
}

func (*noReflect) Work(context.Context, *river.Job[reflecttask.Args]) error { return nil }

// taskServer is a server with the task service in mode over s, an
// insert-only client and the API token "tok".
func taskServer(t *testing.T, s *store.Store, mode string) *api.Server {
	t.Helper()
	cfg := enginetest.Config()
	cfg.APIToken = "tok"
	cfg.Reflection.Mode = mode
	reg := engine.NewRegistry(nil)
	engine.Add(reg, engine.Spec{}, &noReflect{})
	client := enginetest.NewClient(t, s, reg, cfg, false)
	mem := memories.New(s, cfg.Memory, cfg.Digest)
	svc := tasks.New(s, mem, ingest.New(s, ingest.Hooks{}), cfg.Reflection)
	svc.UseClient(client)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := api.New(ctx, api.Deps{Store: s, Client: client, Registry: reg, Logger: enginetest.Logger(),
		Config: cfg, Memories: mem, Tasks: svc})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

type taskBody struct {
	Task struct {
		ID          string `json:"id"`
		SessionID   string `json:"session_id"`
		Status      string `json:"status"`
		OpenedAt    string `json:"opened_at"`
		Environment struct {
			Count     *int    `json:"count"`
			Truncated *bool   `json:"truncated"`
			IDs       []int64 `json:"ids"`
		} `json:"environment"`
	} `json:"task"`
	Reflection struct {
		Mode     string `json:"mode"`
		JobID    *int64 `json:"job_id"`
		Material string `json:"material"`
	} `json:"reflection"`
}

type reflectBody struct {
	LessonsRecorded int `json:"lessons_recorded"`
	Results         []struct {
		Index    int    `json:"index"`
		Relation string `json:"relation"`
		ID       int64  `json:"id"`
		Refused  string `json:"refused"`
	} `json:"results"`
}

func storeWorkspaceLesson(t *testing.T, s *store.Store, problem string) int64 {
	t.Helper()
	m, _, err := lesson.New(memory.Memory{Workspace: "/w", Kind: memory.Lesson, Scope: memory.LessonWorkspace, Origin: memory.OriginPanel,
		Lesson: &memory.LessonFields{Problem: problem, Correction: "read the lockfile first, then handle " + problem, Boundary: "this repo"}}, s.Now())
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.InsertMemory(context.Background(), s.DB, memories.ToRow(m))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// The agent's path end to end over HTTP, in agent mode: task_start,
// task_end with the material, task_reflect through the schema, once.
func TestTaskRoutesAgentMode(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv := taskServer(t, s, config.ReflectAgent)
		tok := bearer("tok")
		target := storeWorkspaceLesson(t, s, "npm install fails")
		expect(t, serve(srv, "GET", "/v1/digest?workspace=/w", "", tok), http.StatusOK, nil)
		open := `{"session_id":"session-1","workspace":"/w","goal":"fix the lockfile","expected_result":"npm ci passes"}`
		expect(t, serve(srv, "POST", "/v1/tasks", open), http.StatusUnauthorized, nil)
		var opened taskBody
		expect(t, serve(srv, "POST", "/v1/tasks", open, tok), http.StatusCreated, &opened)
		o := opened.Task
		if !strings.HasPrefix(o.ID, "task-") || o.Status != "open" || o.SessionID != "session-1" || o.OpenedAt == "" ||
			o.Environment.Count == nil || *o.Environment.Count != 1 || o.Environment.Truncated == nil || *o.Environment.Truncated {
			t.Fatalf("opened %+v", opened)
		}
		for body, field := range map[string]string{
			`{"workspace":"/w","goal":"g"}`:                        "session_id",
			`{"session_id":"s","workspace":"/w","goal":""}`:        "goal",
			`{"session_id":"s","workspace":"rel","goal":"g"}`:      "workspace",
			`{"session_id":"s","workspace":"/w","goal":"g","x":1}`: "",
		} {
			var fb fieldBody
			expect(t, serve(srv, "POST", "/v1/tasks", body, tok), http.StatusBadRequest, &fb)
			if fb.Field != field {
				t.Errorf("%s: field %q, want %q (%s)", body, fb.Field, field, fb.Error)
			}
		}
		end := "/v1/tasks/" + o.ID + "/end"
		var fb fieldBody
		expect(t, serve(srv, "POST", end, `{"status":"done","result":"x"}`, tok), http.StatusBadRequest, &fb)
		if fb.Field != "status" {
			t.Fatalf("bad status: %+v", fb)
		}
		var closed taskBody
		expect(t, serve(srv, "POST", end, `{"status":"failed","result":"npm still rewrites the lockfile"}`, tok), http.StatusOK, &closed)
		if closed.Task.Status != "failed" || closed.Reflection.Mode != "agent" || closed.Reflection.JobID != nil ||
			!strings.Contains(closed.Reflection.Material, "fix the lockfile") {
			t.Fatalf("closed %+v", closed)
		}
		var e struct{ Error string }
		expect(t, serve(srv, "POST", end, `{"status":"succeeded","result":"x"}`, tok), http.StatusConflict, &e)
		if !strings.Contains(e.Error, "already closed (failed") {
			t.Fatalf("second end: %q", e.Error)
		}
		expect(t, serve(srv, "POST", "/v1/tasks/task-nope/end", `{"status":"failed","result":"x"}`, tok), http.StatusNotFound, nil)

		refl := "/v1/tasks/" + o.ID + "/reflect"
		expect(t, serve(srv, "POST", refl, `{"assessment":"x","lessons":[{"relation":"update"}]}`, tok), http.StatusUnprocessableEntity, &fb)
		if fb.Field != "lessons[0].relation" {
			t.Fatalf("schema refusal: %+v", fb)
		}
		expect(t, serve(srv, "POST", refl, `{"assessment":"x\u0000","lessons":[]}`, tok), http.StatusBadRequest, &fb)
		if fb.Field != "assessment" {
			t.Fatalf("NUL: %+v", fb)
		}
		var got reflectBody
		expect(t, serve(srv, "POST", refl, `{"assessment":"npm rewrote a pnpm lockfile","source":"the CI log","lessons":[
			{"relation":"new","kind":"failure","problem":"npm install rewrote the pnpm lockfile","avoid":"npm install in a pnpm repo","instead":"pnpm install"},
			{"relation":"repeat","target_id":`+strconv.FormatInt(target, 10)+`},
			{"relation":"none"}]}`, tok), http.StatusOK, &got)
		if got.LessonsRecorded != 1 || len(got.Results) != 3 || got.Results[0].ID == 0 || got.Results[1].ID != target ||
			got.Results[2].Relation != "none" || got.Results[2].ID != 0 {
			t.Fatalf("reflect: %+v", got)
		}
		expect(t, serve(srv, "POST", refl, `{"assessment":"again","lessons":[]}`, tok), http.StatusConflict, &e)
		if !strings.Contains(e.Error, "already reflected on (by agent") {
			t.Fatalf("second reflect: %q", e.Error)
		}
		var shown struct {
			Reflections []struct {
				By    string `json:"by"`
				Items []struct {
					Relation string `json:"relation"`
				} `json:"items"`
			} `json:"reflections"`
		}
		expect(t, serve(srv, "GET", "/v1/tasks/"+o.ID, "", tok), http.StatusOK, &shown)
		if len(shown.Reflections) != 1 || shown.Reflections[0].By != "agent" || len(shown.Reflections[0].Items) != 3 {
			t.Fatalf("show: %+v", shown)
		}
		var list struct {
			Tasks []struct{ ID string } `json:"tasks"`
		}
		expect(t, serve(srv, "GET", "/v1/admin/tasks?status=closed&session=session-1", ""), http.StatusOK, &list)
		if len(list.Tasks) != 1 || list.Tasks[0].ID != o.ID {
			t.Fatalf("list: %+v", list)
		}
		expect(t, serve(srv, "GET", "/v1/admin/tasks?status=bogus", ""), http.StatusBadRequest, &fb)
		if fb.Field != "status" {
			t.Fatalf("bad list status: %+v", fb)
		}
	})
}

// In job mode task_end answers with the job and task_reflect is refused.
func TestTaskRoutesJobMode(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv := taskServer(t, s, config.ReflectJob)
		tok := bearer("tok")
		var opened taskBody
		expect(t, serve(srv, "POST", "/v1/tasks", `{"session_id":"session-1","workspace":"/w","goal":"g","expected_result":"e"}`, tok),
			http.StatusCreated, &opened)
		if opened.Task.Environment.Count == nil || *opened.Task.Environment.Count != 0 {
			t.Fatalf("no digest yet: %+v", opened)
		}
		var closed taskBody
		expect(t, serve(srv, "POST", "/v1/tasks/"+opened.Task.ID+"/end", `{"status":"succeeded","result":"ok"}`, tok), http.StatusOK, &closed)
		if closed.Reflection.Mode != "job" || closed.Reflection.JobID == nil || *closed.Reflection.JobID == 0 || closed.Reflection.Material != "" {
			t.Fatalf("closed %+v", closed)
		}
		var e struct{ Error string }
		expect(t, serve(srv, "POST", "/v1/tasks/"+opened.Task.ID+"/reflect", `{"assessment":"x","lessons":[]}`, tok), http.StatusConflict, &e)
		if !strings.Contains(e.Error, "reflection.mode is job: mull reflects on this task itself") {
			t.Fatalf("reflect in job mode: %q", e.Error)
		}
	})
}
