package store_test

import (
	"bytes"
	"testing"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A server secret is made once: every later call, from any process on the
// database, reads the same bytes; another name is another secret.
func TestServerSecret(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		a, err := s.ServerSecret(t.Context(), store.SecretBenchCapability)
		if err != nil || len(a) != 32 {
			t.Fatalf("first: %x %v", a, err)
		}
		b, err := s.ServerSecret(t.Context(), store.SecretBenchCapability)
		if err != nil || !bytes.Equal(a, b) {
			t.Fatalf("second: %x %v, want %x", b, err, a)
		}
		c, err := s.ServerSecret(t.Context(), "other")
		if err != nil || bytes.Equal(a, c) {
			t.Fatalf("other name: %x %v", c, err)
		}
	})
}
