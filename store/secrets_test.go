package store_test

import (
	"bytes"
	"sync"
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

// Processes asking for a secret that does not exist yet, at once, all get
// the one the first insert wrote.
func TestServerSecretConcurrent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		const n = 8
		got := make([][]byte, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { got[i], errs[i] = s.ServerSecret(t.Context(), "race") })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil || !bytes.Equal(got[i], got[0]) {
				t.Fatalf("caller %d: %x %v, caller 0: %x", i, got[i], errs[i], got[0])
			}
		}
	})
}
