package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// In a real browser: log in, accept a proposal and reject another with a
// note by clicking their forms (the store changes), then read the
// playbooks and the ledger, with a screenshot of each page.
func TestPanelBrowserProposals(t *testing.T) {
	needBrowser(t)
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		now := time.Now()
		addProposal(t, s, "retro-1", "/home/me/api", "cache go modules in CI", now.Add(-3*time.Hour))
		addProposal(t, s, "retro-2", "/home/me/web", "add a lint step before the tests", now.Add(-time.Hour))
		addPlaybook(t, s, "/home/me/api", "go-test", now.Add(-2*time.Hour), true, true, false)
		addPlaybook(t, s, "/home/me/api", "release", now.Add(-45*24*time.Hour))
		cmd, file := e.ledgerFacts()
		b := e.browser(t)
		b.login()

		b.open("/proposals")
		b.follow("accept retro-1", chromedp.Click(chromedp.CSS("#proposal-retro-1 form.accept button")))
		b.do("wait for the flash", chromedp.WaitVisible(chromedp.CSS("main p.flash")))
		if got := b.text("main p.flash"); !strings.Contains(got, "retro-1 accepted") {
			t.Fatalf("flash after accept: %q", got)
		}
		b.shot("proposals-accepted")
		if p := proposalStatus(t, s, "retro-1"); p.Status != store.ProposalAccepted {
			t.Fatalf("after the click: %+v", p)
		}

		b.open("/proposals?status=pending")
		b.do("write the note", chromedp.SendKeys(chromedp.CSS("#proposal-retro-2 form.reject input[name=note]"), "we lint in the editor"))
		b.follow("reject retro-2", chromedp.Click(chromedp.CSS("#proposal-retro-2 form.reject button")))
		b.do("wait for the flash", chromedp.WaitVisible(chromedp.CSS("main p.flash")))
		if got := b.text("main p.flash"); !strings.Contains(got, "retro-2 rejected") {
			t.Fatalf("flash after reject: %q", got)
		}
		if p := proposalStatus(t, s, "retro-2"); p.Status != store.ProposalRejected || p.Note != "we lint in the editor" {
			t.Fatalf("after the reject: %+v", p)
		}
		if loc := b.location(); !strings.HasSuffix(loc, "/proposals?status=pending") {
			t.Fatalf("the reject went back to %s", loc)
		}
		b.open("/proposals")
		if got := b.text("#proposal-retro-2 td.decision"); !strings.Contains(got, "rejected by an admin") || !strings.Contains(got, "we lint in the editor") {
			t.Fatalf("decided proposal shows %q", got)
		}

		b.open("/playbooks")
		b.open("/playbooks?workspace=/home/me/api")
		if !b.has("#playbook-release .badge.warn") || !b.has("#playbook-go-test .badge.ok") {
			t.Fatal("the stale and fresh marks are missing")
		}
		b.open("/ledger")
		if got := b.text("main .cards"); !strings.Contains(got, "duplicate failures observed") {
			t.Fatalf("ledger counters: %q", got)
		}
		b.open(fmt.Sprintf("/ledger/%d", file))
		b.open(fmt.Sprintf("/ledger/%d", cmd))
	})
}
