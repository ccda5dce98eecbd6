package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// apiPost posts body (JSON) to the API, with the admin token when admin.
func apiPost(t *testing.T, e *env, path, body string, admin bool) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if admin {
		req.Header.Set("Authorization", "Bearer "+adminToken)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// verifiedBy reads the verified_by of an API answer's memory.
func verifiedBy(t *testing.T, body string) string {
	t.Helper()
	var out struct {
		Memory struct {
			VerifiedBy string `json:"verified_by"`
		} `json:"memory"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return out.Memory.VerifiedBy
}

// Every way to verify a memory records its own actor, and the memory's
// page names it: the panel's button, the panel's add of a duplicate, the
// admin API, the agent's verify route and the agent's remember of a
// duplicate in the user's words; a row verified before mull recorded
// verifiers reads "someone (not recorded)", a merge's carried record time
// "no one", a memory never verified "never".
func TestPanelMemoryVerifier(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		t0 := time.Now().UTC().Add(-2 * time.Hour)
		seed := func(text string) int64 {
			return seedMemory(t, s, store.Memory{Workspace: testWS, Kind: "fact", Text: text, Origin: "retro", RecordedAt: t0})
		}
		button, added, admin, agent, told := seed("the api listens on 8080"), seed("the queue is river"),
			seed("ci runs on postgres 16"), seed("the cache lives in redis"), seed("deploys go out on tuesdays")
		old := seedMemory(t, s, store.Memory{Workspace: testWS, Kind: "fact", Text: "go 1.26 builds it", Origin: "retro", RecordedAt: t0,
			VerifiedAt: t0.Add(time.Hour)})
		merged := seedMemory(t, s, store.Memory{Workspace: testWS, Kind: "fact", Text: "make builds it", Origin: "sleep", RecordedAt: t0,
			VerifiedAt: t0.Add(-time.Hour), VerifiedBy: store.VerifiedByMerge})
		never := seed("lint runs in the editor")

		// The panel: the verify button, and adding what is already there.
		_, page := e.get(c, fmt.Sprintf("/memories/%d", button))
		form := url.Values{"csrf": {csrfToken(t, page)}, "back": {fmt.Sprintf("/memories/%d", button)}}
		if res := e.postForm(c, fmt.Sprintf("/memories/%d/verify", button), form); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("panel verify: %d", res.StatusCode)
		}
		add := url.Values{"csrf": form["csrf"], "back": {"/memories"}, "workspace": {testWS}, "kind": {"fact"}, "text": {"The queue is River."}}
		if res := e.postForm(c, "/memories", add); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("panel add: %d", res.StatusCode)
		}
		// The admin API and the agent's routes.
		if code, body := apiPost(t, e, fmt.Sprintf("/v1/admin/memories/%d/verify", admin), "", true); code != http.StatusOK ||
			verifiedBy(t, body) != store.ActorAPI {
			t.Fatalf("admin API verify: %d %s", code, body)
		}
		if code, body := apiPost(t, e, fmt.Sprintf("/v1/admin/memories/%d/verify", admin), "", false); code != http.StatusUnauthorized {
			t.Fatalf("admin API verify without the token: %d %s", code, body)
		}
		if code, body := apiPost(t, e, fmt.Sprintf("/v1/memories/%d/verify", agent), "", false); code != http.StatusOK ||
			verifiedBy(t, body) != store.ActorAgent {
			t.Fatalf("agent verify: %d %s", code, body)
		}
		dup := fmt.Sprintf(`{"workspace":%q,"kind":"fact","text":"Deploys go out on Tuesdays.","src":"user"}`, testWS)
		if code, body := apiPost(t, e, "/v1/memories", dup, false); code != http.StatusOK || verifiedBy(t, body) != store.ActorAgent {
			t.Fatalf("agent remember of a duplicate: %d %s", code, body)
		}

		want := map[int64]string{button: store.ActorPanel, added: store.ActorPanel, admin: store.ActorAPI, agent: store.ActorAgent,
			told: store.ActorAgent, old: "", merged: store.VerifiedByMerge, never: ""}
		for id, by := range want {
			if m := getMemory(t, s, id); m.VerifiedBy != by || (id != never) == m.VerifiedAt.IsZero() {
				t.Errorf("memory %d verified by %q at %v, want %q", id, m.VerifiedBy, m.VerifiedAt, by)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		shows := map[int64][]string{
			button: {`an admin (panel)</span>, `, `recorded as “admin (panel)”`, "verified (last time) by an admin (panel)"},
			added:  {`an admin (panel)</span>, `},
			admin:  {`an admin (api)</span>, `, "verified (last time) by an admin (api)"},
			agent:  {`an agent</span>, `, `recorded as “agent”`},
			told:   {`an agent</span>, `},
			old:    {`someone (not recorded)</span>, `, "verified before mull recorded who verifies", "verified (last time) by someone (not recorded)"},
			merged: {`no one (consolidation kept its newest source&#39;s record time)</span>, `, "freshness carried by consolidation"},
			never:  {"never: its freshness runs from when it was recorded"},
		}
		for id, wants := range shows {
			code, page := e.get(c, fmt.Sprintf("/memories/%d", id))
			if code != http.StatusOK {
				t.Fatalf("memory %d: %d", id, code)
			}
			wantIn(t, fmt.Sprintf("memory %d's page", id), page, wants...)
			for _, other := range []string{"an admin (panel)", "an admin (api)", "an agent", "someone (not recorded)", "no one ("} {
				if !strings.Contains(strings.Join(wants, " "), other) && strings.Contains(page, other) {
					t.Errorf("memory %d's page names %q, not its verifier", id, other)
				}
			}
		}
		if m := getMemory(t, s, told); m.Src != string(memory.SrcUser) {
			t.Fatalf("the agent's duplicate left src %q", m.Src)
		}
	})
}
