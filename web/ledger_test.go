package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/negledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// ledgerCall runs one tool call through the ledger as the DSH plugin does:
// check, then observe its outcome.
func (e *env) ledgerCall(n int, tool string, args map[string]any, o negledger.Outcome) negledger.ObserveResponse {
	e.t.Helper()
	ctx := context.Background()
	c := negledger.Call{ToolCallID: fmt.Sprintf("call-%d", n), Tool: tool, Args: args, Cwd: "/w", Session: "s1", Workspace: "/w"}
	chk, err := e.Neg.Check(ctx, negledger.CheckRequest{Call: c})
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := e.Neg.Observe(ctx, negledger.ObserveRequest{Call: c, Outcome: o, LeaseID: chk.LeaseID, CheckedAt: &chk.CheckedAt})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// ledgerFacts makes a command that failed twice (a duplicate failure and a
// warning) and a missing file an observation then made stale; it returns
// their ids.
func (e *env) ledgerFacts() (command, file int64) {
	e.t.Helper()
	exit1 := 1
	failed := negledger.Outcome{Status: negledger.Failed, ExitCode: &exit1, Stderr: "npm ERR! missing script: tset"}
	command = e.ledgerCall(1, "bash", map[string]any{"command": "npm run tset"}, failed).FactID
	if o := e.ledgerCall(2, "bash", map[string]any{"command": "npm run tset"}, failed); !o.Duplicate {
		e.t.Fatalf("second failure: %+v", o)
	}
	file = e.ledgerCall(3, "read", map[string]any{"file_path": "src/a.go"},
		negledger.Outcome{Status: negledger.Failed, ErrorCode: ledger.CodeFSNotFound}).FactID
	r, err := e.Neg.ObserveFS(context.Background(), negledger.FSRequest{Session: "s1", Workspace: "/w", Cwd: "/w",
		Observations: []negledger.FSObservation{{DisplayPath: "/w/src/a.go", Observed: ledger.Present, Version: "v2"}}})
	if err != nil || len(r.Staled) != 1 {
		e.t.Fatalf("fs: %+v, %v", r, err)
	}
	return command, file
}

// The ledger page shows the three counters linked to the facts behind
// them, the open facts (active and stale) with their evidence, filters by
// workspace, state and counter; a fact's page shows its evidence against
// the latest observation and its events. Empty states say what to do.
func TestPanelLedgerPages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		if code, body := e.get(c, "/ledger"); code != http.StatusOK || !strings.Contains(body, "No facts yet") {
			t.Fatalf("empty: %d\n%s", code, body)
		}
		cmd, file := e.ledgerFacts()
		code, body := e.get(c, "/ledger")
		for _, want := range []string{"command exited 1 (bash)", "file does not exist: src/a.go", ">active<", ">stale<",
			"exit code 1: npm ERR! missing script: tset", "src/a.go absent", fmt.Sprintf(`href="/ledger/%d"`, cmd),
			`href="/ledger?hit=duplicate&amp;state=all"`, `href="/ledger?hit=deny&amp;state=all"`, "duplicate failures observed"} {
			if !strings.Contains(body, want) {
				t.Fatalf("ledger lacks %q: %d\n%s", want, code, body)
			}
		}
		e.wantOnly(t, c, "/ledger?state=stale&workspace=/w", "file does not exist", "command exited 1 (bash)")
		e.wantOnly(t, c, "/ledger?state=all&hit=warn", "command exited 1 (bash)", "file does not exist")
		if _, body = e.get(c, "/ledger?state=resolved"); !strings.Contains(body, "No facts match these filters") {
			t.Fatalf("no resolved:\n%s", body)
		}
		e.wantRefused(t, c, http.StatusBadRequest, "/ledger?state=gone")

		code, body = e.get(c, fmt.Sprintf("/ledger/%d", file))
		for _, want := range []string{"file does not exist: src/a.go", "present at version v2", "differs: the fact does not apply now",
			`id="events"`, ">record<", ">stale<", `href="/sessions/s1"`, `action="/ledger/` + fmt.Sprint(file) + `/resolve"`} {
			if !strings.Contains(body, want) {
				t.Fatalf("fact %d lacks %q: %d\n%s", file, want, code, body)
			}
		}
		code, body = e.get(c, fmt.Sprintf("/ledger/%d", cmd))
		for _, want := range []string{">duplicate<", ">warn<", "call-2", "allowed <time"} {
			if !strings.Contains(body, want) {
				t.Fatalf("fact %d lacks %q: %d\n%s", cmd, want, code, body)
			}
		}
		e.wantRefused(t, c, http.StatusNotFound, "/ledger/999999", "no ledger fact 999999")
		e.wantRefused(t, c, http.StatusBadRequest, "/ledger/x")
	})
}

// Resolving a fact through its form retracts it through the ledger
// service with the reason; a forged post or one without a reason changes
// nothing.
func TestPanelLedgerResolve(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		cmd, _ := e.ledgerFacts()
		c := e.httpClient(true)
		path := fmt.Sprintf("/ledger/%d", cmd)
		_, page := e.get(c, path)
		tok := csrfToken(t, page)
		if res := e.postForm(c, path+"/resolve", url.Values{"csrf": {"forged"}, "reason": {"fixed"}}); res.StatusCode != http.StatusForbidden {
			t.Fatalf("forged: %d", res.StatusCode)
		}
		if res := e.postForm(c, path+"/resolve", url.Values{"csrf": {tok}, "reason": {" "}}); res.StatusCode != http.StatusBadRequest {
			t.Fatalf("no reason: %d", res.StatusCode)
		}
		if f, _ := e.Neg.Get(context.Background(), cmd); f.Status != ledger.Active {
			t.Fatalf("a refused post changed it: %+v", f)
		}
		res := e.postForm(c, path+"/resolve", url.Values{"csrf": {tok}, "reason": {"the script is fixed"}, "back": {path}})
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != path {
			t.Fatalf("resolve: %d to %q", res.StatusCode, res.Header.Get("Location"))
		}
		f, err := e.Neg.Get(context.Background(), cmd)
		if err != nil || f.Status != ledger.Resolved || f.LastTransition == nil || f.LastTransition.Reason != "the script is fixed" {
			t.Fatalf("after resolve: %+v, %v", f, err)
		}
		if _, body := e.get(c, path); !strings.Contains(body, "the script is fixed") || strings.Contains(body, "/resolve\"") {
			t.Fatalf("resolved fact page:\n%s", body)
		}
	})
}
