package config

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Duration is a time.Duration that reads and writes as text such as "30s",
// "720h" or "7d" (a day is 24 hours).
type Duration time.Duration

// ParseDuration reads Go duration text, also accepting a whole number of
// days such as "30d".
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (use forms like 90s, 15m, 720h or 30d)", s)
	}
	return d, nil
}

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	*d = Duration(v)
	return err
}

func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

func (d Duration) String() string { return time.Duration(d).String() }

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Database is a parsed DatabaseURL.
type Database struct {
	// Dialect is "sqlite" or "postgres".
	Dialect string
	// Path is the SQLite file (SQLite only).
	Path string
	// URL is the PostgreSQL connection URL (Postgres only).
	URL string
}

// ParseDatabaseURL turns database_url into a Database; empty means SQLite
// under dataDir.
func ParseDatabaseURL(raw, dataDir string) (Database, error) {
	switch {
	case raw == "":
		return Database{Dialect: "sqlite", Path: filepath.Join(dataDir, "mull.db")}, nil
	case strings.HasPrefix(raw, "sqlite:"):
		p := strings.TrimPrefix(strings.TrimPrefix(raw, "sqlite:"), "//")
		if p == "" {
			return Database{}, fmt.Errorf("sqlite URL %q names no file", raw)
		}
		return Database{Dialect: "sqlite", Path: p}, nil
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		u, err := url.Parse(raw)
		if err != nil {
			return Database{}, fmt.Errorf("cannot parse postgres URL: %v", redactErr(err, raw))
		}
		if u.Host == "" && u.Query().Get("host") == "" {
			return Database{}, fmt.Errorf("postgres URL names no host")
		}
		return Database{Dialect: "postgres", URL: raw}, nil
	default:
		return Database{}, fmt.Errorf("unsupported scheme in %q: want postgres://, postgresql:// or sqlite:PATH", MaskURL(raw))
	}
}

// MaskURL hides the passwords in a database URL or DSN, for /healthz, logs
// and `config print`: the userinfo password (postgres://u:pw@h), any query
// parameter whose name holds "password" (?password=pw, &sslpassword=pw), and
// key=value DSN forms (host=h password=pw). Text it cannot parse is masked
// by the DSN rule alone.
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return maskDSN(raw)
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), masked)
		}
	}
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, kv := range parts {
			k, _, ok := strings.Cut(kv, "=")
			name, _ := url.QueryUnescape(k)
			if ok && strings.Contains(strings.ToLower(name), "password") {
				parts[i] = k + "=" + masked
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	return maskDSN(u.String())
}

// masked replaces a hidden secret.
const masked = "xxxxx"

// dsnPassword is a libpq key=value password, quoted or bare.
var dsnPassword = regexp.MustCompile(`(?i)(\b\w*password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)`)

func maskDSN(s string) string {
	return dsnPassword.ReplaceAllStringFunc(s, func(m string) string {
		sub := dsnPassword.FindStringSubmatch(m)
		if sub[2] == masked {
			return m
		}
		return sub[1] + masked
	})
}

func redactErr(err error, raw string) string {
	return strings.ReplaceAll(err.Error(), raw, MaskURL(raw))
}

func validateListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %v", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	_ = host
	return nil
}

// CronParser parses mull's cron expressions: standard five fields or a
// descriptor, with an optional CRON_TZ= or TZ= prefix.
var CronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses a schedule, defaulting its time zone to UTC rather than
// the process's local zone.
func ParseCron(expr string) (cron.Schedule, error) {
	expr = strings.TrimSpace(expr)
	if !strings.HasPrefix(expr, "CRON_TZ=") && !strings.HasPrefix(expr, "TZ=") {
		expr = "CRON_TZ=UTC " + expr
	}
	return CronParser.Parse(expr)
}

// cronName keeps names usable as River tags.
var cronName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]{0,98}[A-Za-z0-9_]$`)

func validateCron(entries []Cron) error {
	seen := map[string]bool{}
	for i, c := range entries {
		key := fmt.Sprintf("cron[%d]", i)
		if c.Kind == "" {
			return bad(key+".kind", "must name a job kind")
		}
		if !cronName.MatchString(c.Name) {
			return bad(key+".name", "%q: use letters, digits, '_' and '-' (2 to 100 characters)", c.Name)
		}
		if seen[c.Name] {
			return bad(key+".name", "%q is used by an earlier entry", c.Name)
		}
		seen[c.Name] = true
		if strings.TrimSpace(c.Schedule) == "" {
			return bad(key+".schedule", "must not be empty")
		}
		if _, err := ParseCron(c.Schedule); err != nil {
			return bad(key+".schedule", "cannot parse %q: %v", c.Schedule, err)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(c.Args), &obj); err != nil {
			return bad(key+".args", "must be a JSON object: %v", err)
		}
	}
	return nil
}
