package api_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mullhq/mull/internal/testbrowser"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// chromium is the Chromium to drive (testbrowser.Chromium).
func chromium(t *testing.T) string { return testbrowser.Chromium(t) }

// browserDeadline is when the browser is stopped: a little before the
// test's own deadline, and at most two minutes from now.
func browserDeadline(t *testing.T) time.Time {
	end := time.Now().Add(2 * time.Minute)
	if d, ok := t.Deadline(); ok && d.Add(-10*time.Second).Before(end) {
		end = d.Add(-10 * time.Second)
	}
	return end
}

// TestRiverUIInBrowser: with an admin token set, a real browser that opens
// River UI is sent to /login, logs in with the token, lands back on River
// UI and sees it list the dead letter (its API calls pass the guard with
// the cookie).
func TestRiverUIInBrowser(t *testing.T) {
	path := chromium(t)
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, token)
		f.dead()
		ts := httptest.NewServer(f.srv)
		t.Cleanup(ts.Close)

		ctx, cancel := context.WithDeadline(context.Background(), browserDeadline(t))
		defer cancel()
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
			chromedp.Flag("disable-gpu", true))
		actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
		defer cancelAlloc()
		bctx, cancelBrowser := chromedp.NewContext(actx)
		defer cancelBrowser()

		start := ts.URL + "/riverui/jobs?state=discarded"
		if err := chromedp.Do(bctx,
			chromedp.Navigate(start),
			chromedp.WaitVisible(chromedp.ID("token")),
		); err != nil {
			t.Fatalf("open River UI, wait for the login form: %v", err)
		}
		loc, err := chromedp.Run(bctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(loc, ts.URL+"/login?next=/riverui/jobs") {
			t.Fatalf("River UI without a login went to %s, want /login?next=…", loc)
		}
		if err := chromedp.Do(bctx,
			chromedp.SendKeys(chromedp.ID("token"), token),
			chromedp.Submit(chromedp.ID("token")),
			// River UI renders the dead letter's kind from its own API.
			chromedp.WaitVisible(chromedp.Search(`//*[contains(text(), "apitest")]`)),
		); err != nil {
			t.Fatalf("log in, wait for River UI to list the dead letter: %v", err)
		}
		if loc, err = chromedp.Run(bctx, chromedp.Location()); err != nil || loc != start {
			t.Fatalf("after the login the browser is at %s (%v), want %s", loc, err, start)
		}
	})
}
