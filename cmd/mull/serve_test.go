package main

import (
	"context"
	"strings"
	"testing"

	"github.com/mullhq/mull/config"
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
