package dlq

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// MaxAge is the longest age ParseAge takes: 100 years. A dead letter cannot
// be older, and time.Duration itself ends near 292 years, so a larger
// number is a typo, not an instruction to purge nothing (or, wrapped
// around, everything).
const MaxAge = 100 * 365 * 24 * time.Hour

const maxAgeText = "100 years (36500d, 876000h)"

// wellFormed is a duration time.ParseDuration would read but for its size.
var wellFormed = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)$`)

// ParseAge reads an age such as "720h" or "30d": not negative, at most
// MaxAge. Numbers too large for a time.Duration are refused as such,
// never wrapped around.
func ParseAge(v string) (time.Duration, error) {
	s := strings.TrimSpace(v)
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("%q is negative; want an age such as 720h or 30d", v)
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 64)
		switch {
		case err != nil && strings.Contains(err.Error(), "range"):
			return 0, tooOld(v)
		case err != nil:
			return 0, fmt.Errorf("want an age such as 720h or 30d, got %q", v)
		case n > uint64(MaxAge/(24*time.Hour)):
			return 0, tooOld(v)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil && wellFormed.MatchString(s):
		return 0, tooOld(v)
	case err != nil:
		return 0, fmt.Errorf("want an age such as 720h or 30d, got %q", v)
	case d < 0:
		return 0, fmt.Errorf("%q is negative; want an age such as 720h or 30d", v)
	case d > MaxAge:
		return 0, tooOld(v)
	}
	return d, nil
}

func tooOld(v string) error {
	return fmt.Errorf("%q is too long ago: at most %s", v, maxAgeText)
}
