// Package benchcap is the capability a benchmark cell's DSH carries
// instead of mull's secrets (bench.executor = dsh). DSH runs an agent
// that can read its own environment, so the cell is given neither
// DeepSeek's key nor mull's API token: one token that lets it reach the
// model through mull's proxy, counted on its run's budget and its job's
// call records, and read its side's snapshot, for that cell only and
// only until the cell's timeout has passed.
//
// The token is stateless: its claims and an HMAC-SHA256 over them, keyed
// by a secret kept in the database (store.ServerSecret), the one thing
// the worker that mints it and the serve process that checks it surely
// share. Any change to a claim breaks the MAC.
package benchcap

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/store"
)

// ProxyPath is mull's LLM proxy under its own URL: a cell's DSH is given
// SelfURL + ProxyPath as DEEPSEEK_BASE_URL, and posts
// ${base}/chat/completions.
const ProxyPath = "/v1/llm/proxy"

// Env is the variable a cell's DSH plugin reads its capability from.
const Env = "MULL_BENCH_CAPABILITY"

// Prefix starts every capability, so a route can tell one from mull's
// other tokens and check it strictly.
const Prefix = "mullcap1."

// Claims are what a capability allows: the cell, the snapshot it may
// read, the job its model calls are recorded under, the budget keys they
// are charged to, and when it stops working.
type Claims struct {
	Run       string     `json:"run"`
	Side      bench.Side `json:"side"`
	Case      string     `json:"case"`
	Iteration int        `json:"iteration"`
	Snapshot  string     `json:"snapshot"`
	// Job is the bench_cell job the cell runs in; Kind its kind.
	Job  int64  `json:"job"`
	Kind string `json:"kind"`
	// Attempt is the job's attempt that minted the capability, and
	// Started when River started it (attempted_at, Unix milliseconds): a
	// snoozed attempt is given back, and the job's next run has the same
	// number, started later. The capability works only while the job runs
	// that attempt (Live).
	Attempt int   `json:"attempt"`
	Started int64 `json:"started"`
	// Workspace is the run's workspace: with Kind, the budget keys
	// (budget.Keys) its calls reserve under, as the judge's do.
	Workspace string `json:"workspace"`
	// Model is the only model the cell's calls may use (bench.dsh_model,
	// else the cell kind's llm model): the proxy rewrites every request's
	// to it, so the cell cannot pick a pricier one.
	Model string `json:"model"`
	// Expires is in Unix seconds.
	Expires int64 `json:"exp"`
}

// ExpiresAt is when the capability stops working.
func (c Claims) ExpiresAt() time.Time { return time.Unix(c.Expires, 0).UTC() }

// Errors of Verify. Each says what was wrong, for the 401 that carries it.
var (
	ErrMalformed = errors.New("the bench capability is malformed (want " + Prefix + "<claims>.<mac>)")
	ErrTampered  = errors.New("the bench capability does not verify: it was altered, or minted by another mull database")
	ErrExpired   = errors.New("the bench capability has expired")
	// ErrEnded: the cell the capability was minted for is over (its
	// job's attempt is no longer running).
	ErrEnded = errors.New("the bench capability's cell has ended")
)

// Is reports a token that claims to be a capability.
func Is(token string) bool { return strings.HasPrefix(token, Prefix) }

// Mint signs claims with key.
func Mint(key []byte, c Claims) string {
	body, _ := json.Marshal(c) // strings and numbers only
	payload := base64.RawURLEncoding.EncodeToString(body)
	return Prefix + payload + "." + base64.RawURLEncoding.EncodeToString(mac(key, payload))
}

// Verify checks a token's MAC (in constant time) before reading its
// claims, then its expiry against now.
func Verify(key []byte, token string, now time.Time) (Claims, error) {
	rest, ok := strings.CutPrefix(token, Prefix)
	payload, sig, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || payload == "" || sig == "" {
		return Claims{}, ErrMalformed
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return Claims{}, ErrMalformed
	}
	if !hmac.Equal(got, mac(key, payload)) {
		return Claims{}, ErrTampered
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Claims{}, ErrMalformed
	}
	var c Claims
	if err := json.Unmarshal(body, &c); err != nil {
		return Claims{}, ErrMalformed
	}
	if !now.Before(c.ExpiresAt()) {
		return Claims{}, fmt.Errorf("%w (at %s)", ErrExpired, c.ExpiresAt().Format(time.RFC3339))
	}
	return c, nil
}

// Jobs reads the job a capability names (the store).
type Jobs interface {
	JobAttempt(ctx context.Context, id int64) (store.JobAttempt, error)
}

// Live checks that the cell c was minted for is still running: its job is
// running, on the attempt that minted c, started when that attempt was.
// A capability must not outlive its cell: once the cell's DSH is done
// (or killed, or its attempt failed and a new one minted its own), what
// it left behind (a process the agent started in the background, a file
// holding the token) calls nothing. An error wrapping ErrEnded says which
// way the cell ended; another is the job that could not be read.
func Live(ctx context.Context, jobs Jobs, c Claims) error {
	j, err := jobs.JobAttempt(ctx, c.Job)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: this cell's job %d no longer exists", ErrEnded, c.Job)
	case err != nil:
		return err
	case j.State != "running":
		return fmt.Errorf("%w: this cell's job %d is no longer running (state %s)", ErrEnded, c.Job, j.State)
	case j.Attempt != c.Attempt:
		return fmt.Errorf("%w: this capability is for attempt %d of this cell's job %d, which is now on attempt %d", ErrEnded, c.Attempt, c.Job, j.Attempt)
	case j.AttemptedAt == nil || j.AttemptedAt.UnixMilli() != c.Started:
		return fmt.Errorf("%w: this capability is for a run of attempt %d of this cell's job %d that was snoozed; the job has started again since", ErrEnded, c.Attempt, c.Job)
	}
	return nil
}

func mac(key []byte, payload string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(payload))
	return h.Sum(nil)
}

// Secrets is where the key lives (the store).
type Secrets interface {
	ServerSecret(ctx context.Context, name string) ([]byte, error)
}

// Keyring mints and verifies with the database's key, read once.
type Keyring struct {
	secrets Secrets
	mu      sync.Mutex
	key     []byte
}

// NewKeyring is a keyring over secrets.
func NewKeyring(secrets Secrets) *Keyring { return &Keyring{secrets: secrets} }

// Mint signs claims.
func (k *Keyring) Mint(ctx context.Context, c Claims) (string, error) {
	key, err := k.get(ctx)
	if err != nil {
		return "", err
	}
	return Mint(key, c), nil
}

// Verify checks a token at now.
func (k *Keyring) Verify(ctx context.Context, token string, now time.Time) (Claims, error) {
	key, err := k.get(ctx)
	if err != nil {
		return Claims{}, err
	}
	return Verify(key, token, now)
}

// get reads the key the first time it is needed; a failed read is tried
// again next time.
func (k *Keyring) get(ctx context.Context) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key != nil {
		return k.key, nil
	}
	key, err := k.secrets.ServerSecret(ctx, store.SecretBenchCapability)
	if err != nil {
		return nil, fmt.Errorf("read the bench capability key: %w", err)
	}
	k.key = key
	return key, nil
}
