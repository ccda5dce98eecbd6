package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// In a real browser: log in, open the harness, roll a refinement back by
// clicking its button (the confirm accepted), see the store changed, and
// walk the refinement, entry and review pages; then the benchmark runs, a
// run's grid and a cell's evidence.
func TestPanelBrowserHarness(t *testing.T) {
	needBrowser(t)
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, benchEnvOpts)
		d := harnessFixture(t, e)
		run := benchFixture(t, e)
		b := e.browser(t)
		b.login()

		b.open("/harness")
		if got := b.text("main h1"); got != "Harness" {
			t.Fatalf("heading %q", got)
		}
		button := `button[value="` + d.Updated + `"]`
		if !b.has(button) {
			t.Fatalf("no rollback button for %s", d.Updated)
		}
		// Answer the form's confirm() yes, and keep its question across
		// the navigation to check it was asked.
		if _, err := chromedp.Run(b.step(), chromedp.Evaluate[any](
			`window.confirm = function (m) { sessionStorage.setItem("asked", m); return true; }; true`)); err != nil {
			t.Fatal(err)
		}
		b.follow("roll back "+d.Updated, chromedp.Click(chromedp.CSS(button)))
		b.do("wait for the flash", chromedp.WaitVisible(chromedp.CSS("p.flash")))
		b.shot("harness-rolled-back")
		if flash := b.text("p.flash"); !strings.Contains(flash, "rolled back "+d.Updated) {
			t.Fatalf("flash %q", flash)
		}
		asked, err := chromedp.Run(b.step(), chromedp.Evaluate[string](`sessionStorage.getItem("asked") || ""`))
		if err != nil || !strings.Contains(asked, "Roll back refinement "+d.Updated) {
			t.Fatalf("the confirm asked %q (%v)", asked, err)
		}
		if by := rolledBackBy(t, e, d.Updated); by != "rollback_"+d.Updated {
			t.Fatalf("after the click, %s is rolled back by %q", d.Updated, by)
		}
		if got, v := entryContent(t, e, d.Entry); got != d.Before || v != 3 {
			t.Fatalf("after the click the entry is v%d %q", v, got)
		}
		if b.has(button) {
			t.Fatalf("the rolled back refinement still offers its button")
		}

		b.open("/harness/refinements/" + d.Updated)
		if !b.has(`a[href="/harness/refinements/rollback_` + d.Updated + `"]`) {
			t.Fatalf("the refinement's page does not link its rollback")
		}
		b.open("/harness/refinements/rollback_" + d.Updated)
		b.open("/harness/entries/memory/" + d.Entry)
		if !b.has("pre.diff ins") || !b.has("pre.diff del") {
			t.Fatalf("the entry's page shows no diff")
		}
		b.open("/harness/entries/memory/" + d.Entry + "?from=1&to=3")
		b.open("/harness/refinements")
		b.open("/harness/reviews")

		b.open("/bench")
		b.follow("open the run", chromedp.Click(chromedp.CSS(`a[href="/bench/`+run.ID+`"]`)))
		b.do("wait for the grid", chromedp.WaitVisible(chromedp.CSS("table.bench-grid")))
		b.shot("/bench/run")
		if got := b.text("main h1"); got != "Benchmark run "+run.ID {
			t.Fatalf("run heading %q", got)
		}
		if cells := b.text("table.bench-grid tbody"); !strings.Contains(cells, "failed") || !strings.Contains(cells, "malformed-executor-json") {
			t.Fatalf("grid %q", cells)
		}
		cell := "/bench/" + run.ID + "/cells/run-one-test/candidate/1"
		b.follow("open a cell", chromedp.Click(chromedp.CSS(`a[href="`+cell+`"]`)))
		if loc := b.location(); !strings.HasSuffix(loc, cell) {
			t.Fatalf("the cell's link went to %s", loc)
		}
		b.do("wait for the heading", chromedp.WaitVisible(chromedp.CSS("main h1")))
		b.shot("/bench/run/cell")
		if got := b.text("main h1"); !strings.Contains(got, "run-one-test") {
			t.Fatalf("cell heading %q", got)
		}
	})
}
