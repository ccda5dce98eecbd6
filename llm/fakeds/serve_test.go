package fakeds_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/llm/fakeds"
)

func TestServeStopsOnCancelAndReleasesHeldRequests(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fake := fakeds.New(fakeds.Options{
		KeepAliveEvery: time.Millisecond,
		Script:         &fakeds.Script{Rules: []fakeds.Rule{{Marker: "HANG", Fault: fakeds.FaultHang}}},
	})
	ctx, cancel := ctxWithCancel(t)
	served := make(chan error, 1)
	go func() { served <- fakeds.Serve(ctx, ln, fake) }()
	url := "http://" + ln.Addr().String()

	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(mustJSON(t, probeBody("hi", nil))))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("answer: %v %v", resp, err)
	}
	resp.Body.Close()

	held, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(mustJSON(t, probeBody("HANG", nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Body.Close()
	first := make([]byte, 1)
	if _, err := io.ReadFull(held.Body, first); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-testwait.After(t):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := io.ReadAll(held.Body); err != nil {
		t.Fatalf("held request did not end cleanly: %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
