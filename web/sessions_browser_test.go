package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// The browser walks the sessions and lessons pages of a session mull
// learnt from: the list, the session with its failed tool call
// highlighted, the failures-only filter submitted through its form, the
// workspaces, the lessons with the gate's refusal, a lesson's lookup and
// the reflected items; then the empty pages of a fresh mull.
func TestPanelBrowserSessions(t *testing.T) {
	needBrowser(t)
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		l := e.learntSession(t)
		b := e.browser(t)
		b.login()

		b.open("/sessions")
		if got := b.text("main table.sessions tbody tr td a"); !strings.Contains(got, "Fix the invoice discount") {
			t.Fatalf("first session: %q", got)
		}
		b.follow("open the session", chromedp.Click(chromedp.CSS(`a[href="/sessions/`+l.Session+`"]`)))
		b.do("wait for the timeline", chromedp.WaitVisible(chromedp.CSS("table.timeline")))
		b.shot("session")
		if got := b.text("table.timeline tr.bad"); !strings.Contains(got, "go test ./invoice") || !strings.Contains(got, "exit 1") {
			t.Fatalf("highlighted row: %q", got)
		}
		if !b.has("table.items tr.bad") || !b.has(fmt.Sprintf(`#retro-%d`, l.RetroJob)) || !b.has(`table.calls a[href^="/llm/call_"]`) {
			t.Fatal("the session page lacks the refused item, the retro or the LLM calls")
		}
		b.do("choose failures only", chromedp.SetValue(chromedp.CSS(`select[name="only"]`), "failures"))
		b.follow("show failures only", chromedp.Submit(chromedp.CSS(`select[name="only"]`)))
		b.do("wait for the clear link", chromedp.WaitVisible(chromedp.CSS(`form.filters a[href="/sessions/`+l.Session+`#timeline"]`)))
		b.shot("session-failures")
		if loc := b.location(); !strings.Contains(loc, "only=failures") {
			t.Fatalf("after the filter the browser is at %s", loc)
		}
		if n := b.count("table.timeline tbody tr"); n != 1 {
			t.Fatalf("%d rows with failures only, want the failed tool call", n)
		}

		b.open("/workspaces")
		b.open("/lessons")
		if got := b.text("#refusals ~ table tr.bad"); !strings.Contains(got, "no_evidence") {
			t.Fatalf("refusal row: %q", got)
		}
		b.open(fmt.Sprintf("/lessons/L%d", l.Failure))
		if got := b.text("pre.lookup"); !strings.Contains(got, "SOURCE TASK "+l.Task) {
			t.Fatalf("lookup: %q", got)
		}
		b.open("/lessons/items?state=refused")

		// The same browser on a fresh mull: the empty states.
		fresh := &browser{t: t, e: newEnv(t, storetest.New(t, s.Dialect)), ctx: b.ctx, shots: b.shots}
		fresh.login()
		for _, path := range []string{"/sessions", "/lessons"} {
			fresh.do("open "+path, chromedp.Navigate(fresh.e.URL+path), chromedp.WaitVisible(chromedp.CSS("main h1")))
			fresh.shot(path + "-empty")
			if got := fresh.text("main .empty"); !strings.Contains(got, "mull dsh install") {
				t.Fatalf("%s empty state: %q", path, got)
			}
		}
	})
}

// count is how many elements sel matches now.
func (b *browser) count(sel string) int {
	b.t.Helper()
	n, err := chromedp.Run(b.step(), chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(sel)+`).length`))
	if err != nil {
		b.t.Fatalf("browser: count %s: %v", sel, err)
	}
	return n
}
