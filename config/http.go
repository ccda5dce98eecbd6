package config

import (
	"net"
	"strings"
)

// HTTP configures who may reach the HTTP API, besides the tokens.
type HTTP struct {
	// AllowedHosts are the Host header values mull answers besides the
	// loopback names (localhost, 127.0.0.0/8, [::1]): the names it is
	// reached by through a proxy or on a LAN. An entry without a port
	// matches any port. Any other Host is a 421, which stops DNS
	// rebinding. Defaults to none. Env: MULL_HTTP_ALLOWED_HOSTS
	// (comma-separated).
	AllowedHosts []string `toml:"allowed_hosts" env:"list"`

	// InsecureListen lets mull listen on a non-loopback address without
	// api_token set, with a warning. Defaults to false: mull refuses to
	// start. Env: MULL_HTTP_INSECURE_LISTEN.
	InsecureListen bool `toml:"insecure_listen"`
}

func (h HTTP) validate() error {
	for i, host := range h.AllowedHosts {
		if host == "" || strings.ContainsAny(host, "/ \t@?#") {
			return bad("http.allowed_hosts", "entry %d, %q, is not a host name or host:port (no scheme, path or spaces)", i, host)
		}
	}
	return nil
}

// IsLoopbackHost reports whether host (a Host header or a listen address,
// with or without a port) names this machine only: localhost, an address
// in 127.0.0.0/8 or ::1. An empty host (":7788") listens everywhere and is
// not loopback.
func IsLoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// HostAllowed reports whether a request's Host header is a loopback name
// or matches an allowed_hosts entry (case-insensitive; an entry without a
// port matches any port).
func (h HTTP) HostAllowed(host string) bool {
	if IsLoopbackHost(host) {
		return true
	}
	name := host
	if n, _, err := net.SplitHostPort(host); err == nil {
		name = n
	}
	for _, a := range h.AllowedHosts {
		if strings.EqualFold(a, host) || strings.EqualFold(a, name) {
			return true
		}
	}
	return false
}
