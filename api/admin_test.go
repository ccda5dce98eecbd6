package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/dlq"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

type listBody struct {
	DeadLetters []dlq.Letter `json:"dead_letters"`
	Count       int          `json:"count"`
}

type retryBody struct {
	Results []dlq.RetryResult `json:"results"`
	Retried int               `json:"retried"`
	DryRun  bool              `json:"dry_run"`
}

type purgeBody struct {
	Purged []dlq.Letter `json:"purged"`
	Count  int          `json:"count"`
	DryRun bool         `json:"dry_run"`
}

func letterIDs(letters []dlq.Letter) []int64 {
	ids := []int64{}
	for _, l := range letters {
		ids = append(ids, l.ID)
	}
	return ids
}

func TestDLQList(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, "")
		a := f.dead()
		f.run("")
		b := f.dead()

		list := func(query string) listBody {
			t.Helper()
			var body listBody
			expect(t, f.do("GET", "/v1/admin/dlq"+query, ""), http.StatusOK, &body)
			if body.Count != len(body.DeadLetters) {
				t.Fatalf("GET %s: count %d for %d letters", query, body.Count, len(body.DeadLetters))
			}
			return body
		}
		requireIDs := func(query string, want ...int64) {
			t.Helper()
			if got := letterIDs(list(query).DeadLetters); !reflect.DeepEqual(got, append([]int64{}, want...)) {
				t.Fatalf("GET /v1/admin/dlq%s: ids %v, want %v", query, got, want)
			}
		}

		all := list("").DeadLetters
		if got := letterIDs(all); !reflect.DeepEqual(got, []int64{b.ID, a.ID}) {
			t.Fatalf("ids %v, want newest first %v", got, []int64{b.ID, a.ID})
		}
		l := all[0]
		if l.Kind != "apitest" || l.Queue != "default" || l.State != "discarded" || l.Attempts != 2 ||
			l.MaxAttempts != 2 || l.LastError != "boom on attempt 2" || l.DiedAt.IsZero() || l.Errors != nil ||
			string(l.Args) == "" {
			t.Fatalf("letter = %+v", l)
		}

		requireIDs("?kind=apitest", b.ID, a.ID)
		requireIDs("?kind=other")
		requireIDs("?limit=1", b.ID)
		requireIDs("?limit=5", b.ID, a.ID)
		requireIDs("?kind=apitest&limit=1", b.ID)
		requireIDs("?since="+url.QueryEscape(all[0].DiedAt.Format(time.RFC3339Nano)), b.ID)
		requireIDs("?since="+url.QueryEscape(all[1].DiedAt.Format(time.RFC3339Nano)), b.ID, a.ID)
		requireIDs("?since=1h", b.ID, a.ID)
		requireIDs("?since=7d&limit=1", b.ID)
		f.offset.Store(int64(2 * time.Hour)) // the server's clock decides what "1h" means
		requireIDs("?since=1h")
		requireIDs("?since=3h", b.ID, a.ID)
		f.offset.Store(0)

		// An empty result is an empty array, not null.
		rec := f.do("GET", "/v1/admin/dlq?kind=other", "")
		expect(t, rec, http.StatusOK, nil)
		if !strings.Contains(rec.Body.String(), `"dead_letters": []`) {
			t.Fatalf("empty list body: %s", rec.Body)
		}

		for query, param := range map[string]string{
			"?since=yesterday":  "since:",
			"?since=2025-13-01": "since:",
			"?limit=0":          "limit:",
			"?limit=-3":         "limit:",
			"?limit=ten":        "limit:",
			"?limit=1.5":        "limit:",
		} {
			expectError(t, f.do("GET", "/v1/admin/dlq"+query, ""), http.StatusBadRequest, param)
		}
	})
}

func TestDLQShow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, "")
		dead := f.dead()
		done := f.run("")

		var l dlq.Letter
		expect(t, f.do("GET", fmt.Sprintf("/v1/admin/dlq/%d", dead.ID), ""), http.StatusOK, &l)
		if l.ID != dead.ID || l.State != "discarded" || len(l.Errors) != 2 {
			t.Fatalf("letter = %+v", l)
		}
		for i, e := range l.Errors {
			if e.Attempt != i+1 || e.Error != fmt.Sprintf("boom on attempt %d", i+1) || e.At.IsZero() {
				t.Fatalf("error %d = %+v", i, e)
			}
		}

		expectError(t, f.do("GET", fmt.Sprintf("/v1/admin/dlq/%d", dead.ID+1000), ""), http.StatusNotFound, "no such job")
		expectError(t, f.do("GET", fmt.Sprintf("/v1/admin/dlq/%d", done.ID), ""), http.StatusConflict, "completed")
		expectError(t, f.do("GET", "/v1/admin/dlq/abc", ""), http.StatusBadRequest, "id:")
	})
}

func TestDLQRetry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, "")
		a := f.dead()
		b := f.dead()
		done := f.run("")
		const missing = 987654321

		retry := func(body string) retryBody {
			t.Helper()
			var res retryBody
			expect(t, f.do("POST", "/v1/admin/dlq/retry", body), http.StatusOK, &res)
			return res
		}
		stillDead := func(rows ...*rivertype.JobRow) {
			t.Helper()
			for _, r := range rows {
				if got := f.get(r.ID); got.State != rivertype.JobStateDiscarded || got.Attempt != r.Attempt {
					t.Fatalf("job %d is %s attempt %d, want untouched", r.ID, got.State, got.Attempt)
				}
			}
		}

		got := retry(fmt.Sprintf(`{"ids":[%d],"dry_run":true}`, a.ID))
		want := retryBody{Results: []dlq.RetryResult{{ID: a.ID, Kind: "apitest", Retried: true}}, Retried: 1, DryRun: true}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("dry retry = %+v, want %+v", got, want)
		}
		got = retry(`{"all":true,"dry_run":true}`)
		if len(got.Results) != 2 || got.Retried != 2 || !got.DryRun {
			t.Fatalf("dry retry all = %+v", got)
		}
		stillDead(a, b)

		// Bad requests change nothing.
		for body, msg := range map[string]string{
			`{"idz":[1]}`:                  "unknown field",
			`{"ids":[1],"dry_run":"yes"}`:  "invalid JSON",
			`{}`:                           "nothing selected",
			`{"dry_run":true}`:             "nothing selected",
			`{"ids":[1],"all":true}`:       "not several",
			`{"ids":[1],"kind":"apitest"}`: "not several",
			`not json`:                     "invalid JSON",
			``:                             "invalid JSON",
		} {
			expectError(t, f.do("POST", "/v1/admin/dlq/retry", body), http.StatusBadRequest, msg)
		}
		// A failure to read the dead letters is the server's, not the request's.
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		req := httptest.NewRequestWithContext(cancelled, "POST", "/v1/admin/dlq/retry", strings.NewReader(`{"all":true}`))
		req.RemoteAddr, req.Host = loopback, "localhost:7788"
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		f.srv.ServeHTTP(rec, req)
		expectError(t, rec, http.StatusInternalServerError, "context canceled")

		huge := `{"kind":"` + strings.Repeat("x", 1<<20) + `"}`
		expectError(t, f.do("POST", "/v1/admin/dlq/retry", huge), http.StatusRequestEntityTooLarge, "1 MiB")
		stillDead(a, b)

		f.worker.healed.Store(true)
		got = retry(fmt.Sprintf(`{"ids":[%d,%d,%d]}`, a.ID, done.ID, missing))
		want = retryBody{Results: []dlq.RetryResult{
			{ID: a.ID, Kind: "apitest", Retried: true},
			{ID: done.ID, Kind: "apitest", Reason: "job is completed, not a dead letter"},
			{ID: missing, Reason: "no such job"},
		}, Retried: 1}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("retry by ids = %+v, want %+v", got, want)
		}
		if row := enginetest.WaitFinal(t, f.events, a.ID); row.State != rivertype.JobStateCompleted {
			t.Fatalf("retried job ended %s", row.State)
		}

		got = retry(`{"kind":"apitest"}`)
		if len(got.Results) != 1 || got.Results[0].ID != b.ID || got.Retried != 1 {
			t.Fatalf("retry by kind = %+v", got)
		}
		if row := enginetest.WaitFinal(t, f.events, b.ID); row.State != rivertype.JobStateCompleted {
			t.Fatalf("retried job ended %s", row.State)
		}

		rec = f.do("POST", "/v1/admin/dlq/retry", `{"all":true}`)
		expect(t, rec, http.StatusOK, nil)
		if !strings.Contains(rec.Body.String(), `"results": []`) || !strings.Contains(rec.Body.String(), `"retried": 0`) {
			t.Fatalf("retry all with nothing dead: %s", rec.Body)
		}
	})
}

func TestDLQPurge(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newFixture(t, s, "")
		old := f.dead()
		done := f.run("")

		purge := func(body string) purgeBody {
			t.Helper()
			var res purgeBody
			expect(t, f.do("POST", "/v1/admin/dlq/purge", body), http.StatusOK, &res)
			if res.Count != len(res.Purged) {
				t.Fatalf("purge %s: count %d for %d letters", body, res.Count, len(res.Purged))
			}
			return res
		}

		for body, msg := range map[string]string{
			`{}`:                                     "older_than: required",
			`{"dry_run":true}`:                       "older_than: required",
			`{"older_than":"soon"}`:                  "older_than:",
			`{"older_than":"-1h"}`:                   "older_than:",
			`{"older_than":"999999999h"}`:            "too long ago: at most 100 years",
			`{"older_than":"106751d"}`:               "too long ago: at most 100 years",
			`{"older_than":"99999999999999999999d"}`: "too long ago",
			`{"older_than":"1h","bogus":true}`:       "unknown field",
			`{"older_than":720}`:                     "invalid JSON",
		} {
			expectError(t, f.do("POST", "/v1/admin/dlq/purge", body), http.StatusBadRequest, msg)
		}

		if got := purge(`{"older_than":"1h"}`); got.Count != 0 || got.DryRun {
			t.Fatalf("nothing is an hour old yet, purged %+v", got)
		}
		f.offset.Store(int64(2 * time.Hour)) // the server's clock decides what is old
		got := purge(`{"older_than":"1h","dry_run":true}`)
		if !reflect.DeepEqual(letterIDs(got.Purged), []int64{old.ID}) || !got.DryRun {
			t.Fatalf("dry purge = %+v", got)
		}
		if row := f.get(old.ID); row.State != rivertype.JobStateDiscarded {
			t.Fatalf("dry purge touched job %d: %s", old.ID, row.State)
		}
		if got := purge(`{"older_than":"1h","kind":"other"}`); got.Count != 0 {
			t.Fatalf("purge of another kind = %+v", got)
		}
		if got := purge(`{"older_than":"3h"}`); got.Count != 0 {
			t.Fatalf("purge older than 3h = %+v", got)
		}

		got = purge(`{"older_than":"1h","kind":"apitest"}`)
		if !reflect.DeepEqual(letterIDs(got.Purged), []int64{old.ID}) || got.DryRun {
			t.Fatalf("purge = %+v", got)
		}
		if _, err := f.c.JobGet(ctx, old.ID); !errors.Is(err, river.ErrNotFound) {
			t.Fatalf("purged job %d: JobGet err = %v", old.ID, err)
		}
		if row := f.get(done.ID); row.State != rivertype.JobStateCompleted {
			t.Fatalf("purge touched completed job %d: %s", done.ID, row.State)
		}

		rec := f.do("POST", "/v1/admin/dlq/purge", `{"older_than":"0s"}`)
		expect(t, rec, http.StatusOK, nil)
		if !strings.Contains(rec.Body.String(), `"purged": []`) {
			t.Fatalf("purge with nothing dead: %s", rec.Body)
		}
	})
}
