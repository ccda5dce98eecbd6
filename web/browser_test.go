package web_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mullhq/mull/internal/testbrowser"
	"github.com/mullhq/mull/internal/testwait"
)

// chromium is the Chromium to drive (testbrowser.Chromium).
func chromium(t *testing.T) string { return testbrowser.Chromium(t) }

// needBrowser is a browser test's first line: without a Chromium it skips
// (loudly; under CI=true it fails) before the test builds its env and
// fixtures, which take a while for nothing when no browser can look.
func needBrowser(t *testing.T) {
	t.Helper()
	chromium(t)
}

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

// browser starts Chromium for t, for as long as the test's deadline allows
// (testwait.Patience: go test -timeout, less time to report and clean up).
// The subtest as a whole has no fixed cap: on a busy machine one takes
// minutes (four at a load of 50 on 2 cores), and the old three-minute cap
// failed those runs for no fault of the panel. Each step has its own
// (stepPatience), so one that never happens fails saying what it waited for.
func (e *env) browser(t *testing.T) *browser {
	t.Helper()
	path := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Patience(t))
	t.Cleanup(cancel)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	// The first Run starts Chromium, under the test's whole deadline: a
	// step's own timeout ending would close the browser with it.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("browser: start Chromium: %v", err)
	}
	shots := filepath.Join(t.TempDir(), "screenshots")
	if dir := os.Getenv("MULL_TEST_SCREENSHOTS_DIR"); dir != "" {
		shots = filepath.Join(dir, safeName(t.Name()))
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, e: e, ctx: bctx, shots: shots}
}

// stepPatience bounds one browser step (a click and the page it leads to,
// a read, a screenshot) within the test's deadline: a step that can never
// happen (a click that navigates nowhere) fails on its own in minutes,
// saying what it waited for, rather than using up the package's -timeout.
const stepPatience = 4 * time.Minute

// step is the context of one browser step.
func (b *browser) step() context.Context {
	ctx, cancel := context.WithTimeout(b.ctx, stepPatience)
	b.t.Cleanup(cancel)
	return ctx
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func safeName(s string) string { return unsafeChars.ReplaceAllString(s, "_") }

// do runs actions, failing the test with what it was doing.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.step(), actions...); err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
}

// login logs in through the /login form and waits for the overview.
func (b *browser) login() {
	b.t.Helper()
	b.do("open /login", chromedp.Navigate(b.e.URL+"/login?next=/"), chromedp.WaitVisible(chromedp.ID("token")))
	b.do("type the token", chromedp.SendKeys(chromedp.ID("token"), b.e.Cfg.AdminToken))
	b.follow("log in", chromedp.Submit(chromedp.ID("token")))
	b.do("wait for the overview", chromedp.WaitVisible(chromedp.CSS("main h1")))
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
	s, err := chromedp.Run(b.step(), chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("browser: text of %s: %v", sel, err)
	}
	return s
}

// has reports whether sel matches an element now (without waiting).
func (b *browser) has(sel string) bool {
	b.t.Helper()
	n, err := chromedp.Run(b.step(), chromedp.Evaluate[bool](`document.querySelector(`+jsString(sel)+`) !== null`))
	if err != nil {
		b.t.Fatalf("browser: query %s: %v", sel, err)
	}
	return n
}

// location is the page's URL.
func (b *browser) location() string {
	b.t.Helper()
	loc, err := chromedp.Run(b.step(), chromedp.Location())
	if err != nil {
		b.t.Fatal(err)
	}
	return loc
}

// follow runs actions that make the page navigate (a click on a link or a
// submit button, a form's submit) and waits until the page they lead to
// has loaded (chromedp.RunResponse: the load event of the navigation they
// started, after any redirect), failing the test unless it answered 2xx.
// A wait on a selector alone is not enough: until the new document
// commits, the old one is still there and may match it, and right after
// the commit the new one can be half parsed, so a count or a text read
// then sees part of the page.
func (b *browser) follow(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	res, err := chromedp.RunResponse(b.step(), actions...)
	if err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
	if res == nil || res.Status < 200 || res.Status > 299 {
		var status int64
		if res != nil {
			status = res.Status
		}
		body, _ := chromedp.Run(b.step(), chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		b.t.Fatalf("browser: %s: the page answered %d:\n%s", what, status, body)
	}
}

// shot saves a full-page PNG named after name under b.shots.
func (b *browser) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.step(), chromedp.FullScreenshot(100))
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
