package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// serve beyond loopback without an API token refuses to start: exit 2 with
// one line naming api_token, before the database is touched.
func TestServeBeyondLoopbackNeedsAPIToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.10:7788"} {
		code, _, stderr := mull(t, context.Background(), "--data-dir", t.TempDir(), "--listen", addr, "serve")
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "api_token") || !strings.Contains(stderr, "insecure_listen") {
			t.Errorf("serve --listen %s: exit %d, stderr %q; want 2 and one line naming api_token", addr, code, stderr)
		}
	}
}

func TestCheckListen(t *testing.T) {
	for _, tt := range []struct {
		listen, token string
		insecure, ok  bool
	}{
		{"127.0.0.1:7788", "", false, true},
		{"localhost:7788", "", false, true},
		{"[::1]:7788", "", false, true},
		{"0.0.0.0:7788", "", false, false},
		{":7788", "", false, false},
		{"0.0.0.0:7788", "tok", false, true},
		{"0.0.0.0:7788", "", true, true},
	} {
		cfg := config.Default()
		cfg.Listen, cfg.APIToken, cfg.HTTP.InsecureListen = tt.listen, tt.token, tt.insecure
		if err := checkListen(cfg); (err == nil) != tt.ok {
			t.Errorf("checkListen(%+v) = %v, want ok=%v", tt, err, tt.ok)
		}
	}
}

// startServe runs serve until the test ends and returns its base URL, read
// from the start-up line, and its log.
func startServe(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	var log syncBuffer
	served := make(chan int, 1)
	go func() { served <- run(ctx, append(args, "serve", "--workers=false"), &log, &log) }()
	t.Cleanup(func() {
		stop()
		<-served
	})
	addr := regexp.MustCompile(`"addr":"(http://[^"]+)"`)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := addr.FindStringSubmatch(log.String()); m != nil {
			// A wildcard listen address is reached on loopback.
			return strings.NewReplacer("0.0.0.0", "127.0.0.1", "[::]", "127.0.0.1").Replace(m[1]), &log
		}
		select {
		case code := <-served:
			t.Fatalf("serve exited %d:\n%s", code, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", log.String())
		}
		waitBriefly(ctx)
	}
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// A password in the database URL's query reaches neither the start-up log,
// /healthz nor config print.
func TestServeMasksDatabasePassword(t *testing.T) {
	url := dbURL(storetest.Database(t, store.Postgres))
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	url += sep + "password=hunter2"
	if code, out, errOut := mull(t, context.Background(), "--database-url", url, "migrate"); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
	}
	base, log := startServe(t, "--database-url", url, "--listen", "127.0.0.1:0")
	health := getBody(t, base+"/healthz")
	_, printed, _ := mull(t, context.Background(), "--database-url", url, "config", "print")
	for what, text := range map[string]string{"start-up log": log.String(), "/healthz": health, "config print": printed} {
		if strings.Contains(text, "hunter2") || !strings.Contains(text, "password=xxxxx") {
			t.Errorf("%s does not mask the password:\n%s", what, text)
		}
	}
}

// http.insecure_listen lets serve listen everywhere without a token, loudly.
func TestServeInsecureListenWarns(t *testing.T) {
	t.Setenv("MULL_HTTP_INSECURE_LISTEN", "true")
	base, log := startServe(t, "--data-dir", t.TempDir(), "--listen", "0.0.0.0:0")
	if !strings.Contains(log.String(), "INSECURE") || !strings.Contains(log.String(), `"level":"WARN"`) {
		t.Fatalf("no WARN about the insecure listen:\n%s", log.String())
	}
	if body := getBody(t, base+"/healthz"); !strings.Contains(body, `"status"`) {
		t.Fatalf("/healthz: %s", body)
	}
}
