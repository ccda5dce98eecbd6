// Package testbrowser finds the Chromium that browser tests drive.
package testbrowser

import (
	"os"
	"os/exec"
	"testing"
)

// Chromium is the browser to drive: $MULL_TEST_CHROMIUM, else the usual
// names on $PATH. Without one the test skips loudly, except under
// CI=true, where a missing browser must not pass unnoticed (.ci/run
// installs it).
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("MULL_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const why = "SKIPPING A BROWSER TEST: no Chromium found (set MULL_TEST_CHROMIUM or install it: apt-get install chromium)"
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
	return ""
}
