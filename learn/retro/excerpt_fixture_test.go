package retro_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mullhq/mull/dshlog"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/retro"
)

// The real DSH logs at ../shared (shared/fixtures/dsh/FORMAT.md describes
// them), read as the importer reads them.
var fixtureSessions = filepath.Join("..", "..", "..", "shared", "fixtures", "dsh", "home", "sessions")

func fixtureEvents(t *testing.T, dir, session string) []events.Event {
	t.Helper()
	base := filepath.Join(fixtureSessions, dir, session)
	p := filepath.Join(base, "session.jsonl.zstd")
	if _, err := os.Stat(p); err != nil {
		p = filepath.Join(base, "session.jsonl")
	}
	evs, _, err := dshlog.ReadFile(p)
	if err != nil {
		t.Fatalf("fixture log (the repo expects ../shared beside it): %v", err)
	}
	return evs
}

func fixtureExcerpt(t *testing.T, dir, session string) string {
	t.Helper()
	return retro.BuildExcerpt(retro.FromEvents(fixtureEvents(t, dir, session)), retro.Caps{})
}

// TestFixtureExcerptFailingCommand: on the invoice session (S1) the
// excerpt carries the failing command's reason and exit code from the end
// of its output, marks what it cut, and shows the run that passed after
// the fix.
func TestFixtureExcerptFailingCommand(t *testing.T) {
	got := fixtureExcerpt(t, "--home-dev-invoice-utils--", "session-618f3e2a-04f1-4c07-ae0d-228954177258")
	for _, want := range []string{
		"bash exit 1: python3 -m unittest -v\n",
		"AssertionError: -720.0 != 72.0",
		"AssertionError: -864.0 != 86.4",
		"FAILED (failures=2)\n  | [exit code: 1]\n",
		" chars cut]…\n",
		"next call on the same target, it passed: [2026-11-29T18:37:22Z] bash exit 0: python3 -m unittest -v\n",
		"Ran 3 tests in 0.000s\n  |\n  | OK\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("S1 excerpt lacks %q:\n%s", want, got)
		}
	}
	if n := utf8.RuneCountInString(got); n > 3500 {
		t.Errorf("S1 excerpt has %d characters", n)
	}
}

// TestFixtureExcerptsHaveNoHarnessText: in every fixture session the only
// "user:" lines are the human's prompt; DSH's runtime-context snapshot
// (a user/message of source plugin in every log) appears nowhere.
func TestFixtureExcerptsHaveNoHarnessText(t *testing.T) {
	prompts := map[string]string{
		"--home-dev-invoice-utils--/session-618f3e2a-04f1-4c07-ae0d-228954177258": "The invoice tests are failing",
		"--home-dev-docs-site--/session-84a3435d-c180-4f56-b4b3-055358da3772":     "",
		"--home-dev-weather-cli--/session-408c8942-fb3e-4b5d-b173-6ffaed7af3c2":   "",
		"--home-dev-shop-frontend--/session-293a9768-7a49-469f-a49b-03ee04ee1add": "In this repo always use pnpm",
	}
	userLine := regexp.MustCompile(`(?m)^- \[[^\]]+\] user: (.*)$`)
	for key, prompt := range prompts {
		dir, session, _ := strings.Cut(key, "/")
		evs := fixtureEvents(t, dir, session)
		plugin := 0
		for _, e := range evs {
			if e.Type == events.UserMessage && strings.Contains(string(e.Payload), `"source":"plugin"`) {
				plugin++
			}
		}
		if plugin == 0 {
			t.Fatalf("%s: the fixture should hold a runtime-context message", dir)
		}
		got := retro.BuildExcerpt(retro.FromEvents(evs), retro.Caps{})
		if strings.Contains(got, "runtime context") || strings.Contains(got, "DSH file policy") {
			t.Errorf("%s: harness text in the excerpt:\n%s", dir, got)
		}
		users := userLine.FindAllStringSubmatch(got, -1)
		if len(users) != 1 || (prompt != "" && !strings.HasPrefix(users[0][1], prompt)) {
			t.Errorf("%s: user lines %q, want the one human prompt", dir, users)
		}
	}
}

// TestFixtureExcerptMissingFile: S2's read of a missing file shows its
// typed error and DSH's message; the agent then read another path, which
// is not the same target.
func TestFixtureExcerptMissingFile(t *testing.T) {
	got := fixtureExcerpt(t, "--home-dev-docs-site--", "session-84a3435d-c180-4f56-b4b3-055358da3772")
	for _, want := range []string{
		"read FS_NOT_FOUND: file_path: /home/dev/docs-site/docs/config.md\n",
		`=> Error: cannot read "/home/dev/docs-site/docs/config.md": not found`,
		"no later call on the same target",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("S2 excerpt lacks %q:\n%s", want, got)
		}
	}
}

// TestFixtureExcerptProviderError: S3's turn ended in a provider error
// after DSH's retries: one error, with its code.
func TestFixtureExcerptProviderError(t *testing.T) {
	got := fixtureExcerpt(t, "--home-dev-weather-cli--", "session-408c8942-fb3e-4b5d-b173-6ffaed7af3c2")
	if !strings.Contains(got, "## ERRORS (1 of 1") || !strings.Contains(got, "turn 1 [SERVER] Internal server error: upstream model worker unavailable") {
		t.Errorf("S3 excerpt:\n%s", got)
	}
}
