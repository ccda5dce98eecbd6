package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mullhq/mull/internal/testbrowser"
)

// chromium is the Chromium to drive (testbrowser.Chromium).
func chromium(t *testing.T) string { return testbrowser.Chromium(t) }

// browser is a headless Chromium on an env's server: one per test, so no
// cookie crosses tests.
type browser struct {
	t   *testing.T
	e   *env
	ctx context.Context
	// shots is where screenshots go: $MULL_TEST_SCREENSHOTS_DIR/<test name>
	// when set (scripts/screenshots), else the test's temp dir.
	shots string
}

// browser starts Chromium for t; it stops a little before the test's own
// deadline, and at most three minutes from now.
func (e *env) browser(t *testing.T) *browser {
	t.Helper()
	path := chromium(t)
	end := time.Now().Add(3 * time.Minute)
	if d, ok := t.Deadline(); ok && d.Add(-10*time.Second).Before(end) {
		end = d.Add(-10 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), end)
	t.Cleanup(cancel)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	shots := filepath.Join(t.TempDir(), "screenshots")
	if dir := os.Getenv("MULL_TEST_SCREENSHOTS_DIR"); dir != "" {
		shots = filepath.Join(dir, safeName(t.Name()))
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, e: e, ctx: bctx, shots: shots}
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func safeName(s string) string { return unsafeChars.ReplaceAllString(s, "_") }

// do runs actions, failing the test with what it was doing.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
}

// login logs in through the /login form and waits for the overview.
func (b *browser) login() {
	b.t.Helper()
	b.do("open /login", chromedp.Navigate(b.e.URL+"/login?next=/"), chromedp.WaitVisible(chromedp.ID("token")))
	b.do("log in", chromedp.SendKeys(chromedp.ID("token"), b.e.Cfg.AdminToken), chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS("main h1")))
}

// open navigates to path and waits for the page's heading (or an error
// box), then saves a screenshot named after the path.
func (b *browser) open(path string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.e.URL+path), chromedp.WaitVisible(chromedp.CSS("main h1, main .error")))
	b.shot(path)
}

// text is the visible text of the first element sel matches.
func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("browser: text of %s: %v", sel, err)
	}
	return s
}

// has reports whether sel matches an element now (without waiting).
func (b *browser) has(sel string) bool {
	b.t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`document.querySelector(`+jsString(sel)+`) !== null`))
	if err != nil {
		b.t.Fatalf("browser: query %s: %v", sel, err)
	}
	return n
}

// location is the page's URL.
func (b *browser) location() string {
	b.t.Helper()
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		b.t.Fatal(err)
	}
	return loc
}

// locationHas waits until the page's URL contains part: after a click or
// a submit, the page still shows the old document for a while, so a wait
// on a selector both pages have would return at once. It polls the URL
// until the browser context's deadline, and ignores the errors of reading
// it while the old document is being torn down.
func locationHas(part string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		loc := ""
		for {
			if l, err := chromedp.Location()(ctx, t); err == nil {
				if loc = l; strings.Contains(loc, part) {
					return chromedp.Void{}, nil
				}
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, fmt.Errorf("the page stayed at %q, not one with %q: %w", loc, part, ctx.Err())
			case <-tick.C:
			}
		}
	}
}

// shot saves a full-page PNG named after name under b.shots.
func (b *browser) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("browser: screenshot %s: %v", name, err)
	}
	n := safeName(strings.Trim(name, "/"))
	if n == "" {
		n = "overview"
	}
	if err := os.WriteFile(filepath.Join(b.shots, n+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// jsString quotes s for a JavaScript expression.
func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`, "\r", `\r`, "\u2028", `\u2028`, "\u2029", `\u2029`)
	return "'" + r.Replace(s) + "'"
}
