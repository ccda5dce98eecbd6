package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// SecretBenchCapability names the HMAC key of benchmark cells'
// capabilities (benchcap).
const SecretBenchCapability = "bench_capability"

// ServerSecret returns the secret called name, making it (32 random bytes)
// the first time any process asks. Two processes asking at once agree:
// the first insert wins and both read the row it wrote.
func (s *Store) ServerSecret(ctx context.Context, name string) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("server secret %s: %w", name, err)
	}
	if _, err := s.DB.ExecContext(ctx, `insert into server_secrets (name, secret, created_at) values ($1, $2, $3)
		on conflict (name) do nothing`, name, hex.EncodeToString(fresh), utcMicro(s.Now())); err != nil {
		return nil, fmt.Errorf("server secret %s: %w", name, err)
	}
	var text string
	if err := s.DB.QueryRowContext(ctx, `select secret from server_secrets where name = $1`, name).Scan(&text); err != nil {
		return nil, fmt.Errorf("server secret %s: %w", name, err)
	}
	b, err := hex.DecodeString(text)
	if err != nil || len(b) < 32 {
		return nil, fmt.Errorf("server secret %s: the stored value is not 32 hex-encoded bytes", name)
	}
	return b, nil
}
