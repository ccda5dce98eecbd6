package config_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mullhq/mull/config"
)

// Every unknown key of a file is reported at once, one line each, with the
// key it was probably meant to be.
func TestUnknownKeysAllAtOnce(t *testing.T) {
	file := write(t, `
listn = "127.0.0.1:1"
[wokers]
shutdown_grace = "1s"
heartbeat_interval = "1s"
[workers]
heartbeat_intervall = "1s"
[jobs.probe]
max_attemps = 3
[[cron]]
nme = "x"
kind = "probe"
schedule = "@hourly"
[llm]
zone = "UTC"
[llm.kinds.retro_session]
max_token = 3
[budget.limits]
"workspace:/a b" = { tokns = 4 }
[totally_else]
x = 1
`)
	_, err := config.Load(config.Source{File: file})
	var errs config.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Load = %v, want config.Errors", err)
	}
	want := []string{
		"listn: unknown key (did you mean listen?)",
		"wokers: unknown key (did you mean workers?)", // its keys are not listed one by one
		"workers.heartbeat_intervall: unknown key (did you mean workers.heartbeat_interval?)",
		"jobs.probe.max_attemps: unknown key (did you mean jobs.probe.max_attempts?)",
		"cron.nme: unknown key (did you mean cron.name?)",
		"llm.zone: unknown key (did you mean budget.zone?)", // the right name in the wrong table
		"llm.kinds.retro_session.max_token: unknown key (did you mean llm.kinds.retro_session.max_tokens?)",
		`budget.limits."workspace:/a b".tokns: unknown key (did you mean budget.limits."workspace:/a b".tokens?)`,
		"totally_else: unknown key",
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Callers that look for one *Error still find the first.
	var one *config.Error
	if !errors.As(err, &one) || one.Key != "listn" {
		t.Fatalf("errors.As *Error = %v", one)
	}
	if strings.Count(err.Error(), "\n") != len(want)-1 {
		t.Fatalf("Error() is not one line a key: %q", err)
	}
}

// A file with only known keys loads; an unknown key alone is one Errors.
func TestUnknownKeyAlone(t *testing.T) {
	_, err := config.Load(config.Source{File: write(t, "[log]\nlevel = \"debug\"\nformat_ = \"json\"\n")})
	var errs config.Errors
	if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Key != "log.format_" || !strings.Contains(errs[0].Problem, "did you mean log.format?") {
		t.Fatalf("Load = %v", err)
	}
}

func TestUnknownEnv(t *testing.T) {
	got := config.UnknownEnv([]string{
		"MULL_LOG_LEVEL=debug",                                                                           // a setting
		"MULL_LOG_LEVL=debug",                                                                            // a typo
		"MULL_WORKERS_QUEUES_LLM=3",                                                                      // a table: file only
		"MULL_LLM_DEFAULT_THINKING=true",                                                                 // a file-only key
		"MULL_CONFIG=/x.toml",                                                                            // the config file
		"MULL_TEST_DATABASE_URL=postgres://x", "MULL_PG_BIN=/x", "MULL_E2E_DSH=1", "MULL_E2E_ANYTHING=1", // tests and scripts
		"MULL_NOTHING_LIKE_IT=1",
		"PATH=/bin", "MULLX=1", // not MULL_*
		"MULL_HTTP_ALLOWED_HOSTS=a,b", // a list settable from text
	})
	want := []string{
		"MULL_LOG_LEVL is not a mull setting (did you mean MULL_LOG_LEVEL?); ignored",
		"MULL_WORKERS_QUEUES_LLM is not read: [workers.queues] is set in the config file only; ignored",
		"MULL_LLM_DEFAULT_THINKING is not read: llm.default.thinking is set in the config file only; ignored",
		"MULL_NOTHING_LIKE_IT is not a mull setting; ignored",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("UnknownEnv:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Every MULL_* variable the repository's code, tests and scripts read is a
// setting or listed in config.OtherEnv, so none of them draws a warning.
func TestRepoEnvVarsKnown(t *testing.T) {
	re := regexp.MustCompile(`MULL_[A-Z0-9_]*[A-Z0-9]`)
	seen := map[string]string{}
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case rel == filepath.Join("config", "unknown_test.go"), rel == filepath.Join("config", "unknown.go"): // typos on purpose, families
			return nil
		case strings.HasSuffix(path, ".go"), strings.HasSuffix(path, ".mjs"), strings.HasSuffix(path, ".sh"),
			strings.HasPrefix(rel, "scripts"+string(filepath.Separator)), strings.HasPrefix(rel, ".ci"+string(filepath.Separator)):
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, name := range re.FindAllString(string(b), -1) {
			if _, ok := seen[name]; !ok {
				seen[name] = rel
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 10 {
		t.Fatalf("found only %d MULL_* names: is the walk rooted at the repository?", len(seen))
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range seen {
			if !yield(k) {
				return
			}
		}
	}) {
		if w := config.UnknownEnv([]string{name + "=1"}); len(w) > 0 {
			t.Errorf("%s (in %s) would be warned about: %s; make it a setting or list it in config.OtherEnv", name, seen[name], w[0])
		}
	}
}
