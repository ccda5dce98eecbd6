package web_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/dlq"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// The overview draws its four charts (uPlot canvases) from recorded LLM
// calls, and its numbers lead to the call list and one call's prompt.
func TestPanelBrowserOverview(t *testing.T) {
	needBrowser(t)
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		callsFixture(t, e, 30)
		workersFixture(t, e)
		e.deadLetter(t, "browser-overview")
		b := e.browser(t)
		b.login()
		b.openCharts()
		b.shot("/")
		if got := b.text(".ov-cards .card:nth-child(2) .big"); got != "1" {
			t.Fatalf("dead letters card says %q", got)
		}
		b.follow("open the calls of a kind", chromedp.Click(chromedp.CSS(".ov-kinds a")))
		b.do("wait for the calls", chromedp.WaitVisible(chromedp.CSS("table.llm-calls")))
		if loc := b.location(); !strings.Contains(loc, "/llm?kind=") {
			t.Fatalf("the kind's link went to %s", loc)
		}
		b.shot("/llm")
		b.open("/llm/call_newest")
		if !strings.Contains(b.text("main pre"), "mull-prompt: retro v1") {
			t.Fatalf("the call's page lacks its prompt")
		}
	})
}

// openCharts opens the overview until its four charts are drawn. mull.js
// draws them on DOMContentLoaded, so once a load ends (b.open) they are
// there or will not come. The page has a 10-second budget for its
// sections; on SQLite, whose one connection River's loops share, a busy
// machine can use it up (seen at a load of 35 with -race: 4 of 13 loads),
// and the page then shows "context deadline exceeded" in place of the
// late sections, as designed. The test loads it again, up to 5 times; any
// other page without its charts fails at once.
func (b *browser) openCharts() {
	b.t.Helper()
	for try := 1; ; try++ {
		b.open("/")
		n, err := chromedp.Run(b.step(), chromedp.Evaluate[int](`document.querySelectorAll('.ov-charts .chart canvas').length`))
		if err != nil {
			b.t.Fatalf("browser: count the charts: %v", err)
		}
		if n == 4 {
			return
		}
		page := b.text("main")
		if !strings.Contains(page, "context deadline exceeded") || try == 5 {
			b.t.Fatalf("%d chart canvases, want 4; the page says:\n%s", n, page)
		}
		b.t.Logf("the overview ran out of its time (%d charts); loading it again", n)
	}
}

// A dead letter retried in the browser runs again and leaves the dead
// letters; the purge page shows its dry run.
func TestPanelBrowserDeadLetters(t *testing.T) {
	needBrowser(t)
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		id := e.deadLetter(t, "browser-retry")
		e.deadLetter(t, "browser-stays")
		sid := strconv.FormatInt(id, 10)
		b := e.browser(t)
		b.login()
		b.open("/dlq")
		b.open("/dlq/" + sid)
		b.follow("retry", chromedp.Click(chromedp.CSS("form.dlq-retry button")))
		b.do("wait for the flash", chromedp.WaitVisible(chromedp.CSS("main .flash")))
		if loc := b.location(); loc != e.URL+"/dlq" {
			t.Fatalf("after the retry the browser is at %s", loc)
		}
		if got := b.text("main .flash"); !strings.Contains(got, "retried job "+sid) {
			t.Fatalf("flash %q", got)
		}
		b.shot("dlq-retried")
		if row := enginetest.WaitFinal(t, e.Events, id); row.State != rivertype.JobStateCompleted {
			t.Fatalf("retried job ended %s", row.State)
		}
		if _, err := dlq.Get(context.Background(), e.Client, id); !errors.Is(err, dlq.ErrNotDead) {
			t.Fatalf("the retried job is still a dead letter: %v", err)
		}
		b.open("/dlq/purge?older_than=0s")
		if !b.has("form.dlq-confirm button.danger") {
			t.Fatal("the dry run offers no confirm button")
		}
	})
}
