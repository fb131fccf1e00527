package option

import (
	"fmt"
	"net"
	"net/netip"
)

// HostPort returns nil when s is a network address host:port with a host
// name or IP address and a decimal port from 1 to 65535.
//
// An IPv6 address must be bracketed ("[::1]:9092"). A host name may hold
// ASCII letters, digits, '-', '_' and '.', and must not start with '-' or
// '.'. The error says what is wrong without a prefix, so that the caller can
// name the option it checks.
func HostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port", s)
	}
	if host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	if !validPort(port) {
		return fmt.Errorf("port %q of %q is not a number from 1 to 65535", port, s)
	}
	if s[0] == '[' {
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() || a.Zone() != "" {
			return fmt.Errorf("%q in brackets is not an IPv6 address", host)
		}
		return nil
	}
	if !validHostName(host) {
		return fmt.Errorf("host %q of %q is not a host name or IP address", host, s)
	}
	return nil
}

func validPort(p string) bool {
	if p == "" || len(p) > 5 {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
		n = n*10 + int(p[i]-'0')
	}
	return n >= 1 && n <= 65535
}

// validHostName reports whether h is a host name or IPv4 address.
//
// That is letters, digits, '-', '_' and '.', at most 253 of them, not
// starting with '-' or '.'.
func validHostName(h string) bool {
	if len(h) > 253 || h[0] == '-' || h[0] == '.' {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		ok := c == '-' || c == '_' || c == '.' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
		if !ok {
			return false
		}
	}
	return true
}
