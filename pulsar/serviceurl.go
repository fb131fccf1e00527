package pulsar

import (
	"fmt"
	"strings"

	"github.com/babelqueue/babelqueue-go/core/option"
)

// serviceSchemes are the schemes of a service URL the Pulsar client
// dials: the binary protocol, plain or TLS, and the HTTP lookup service.
var serviceSchemes = []string{"pulsar", "pulsar+ssl", "http", "https"}

// parseServiceURL returns url as the client is given it, or the problem
// that makes it no service URL.
//
// A service URL is a scheme of serviceSchemes, "://" and one or more
// host:port addresses separated by ',' or ';' (as the client allows), with
// at most a trailing '/'. Spaces around the URL and its addresses are
// dropped; the scheme is written in lower case and the addresses are
// joined with ','.
func parseServiceURL(url string) (string, error) {
	s := strings.TrimSpace(url)
	if s == "" {
		return "", fmt.Errorf("service URL is blank")
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return "", fmt.Errorf("service URL %q has no scheme: want pulsar://host:port or pulsar+ssl://host:port", url)
	}
	scheme = strings.ToLower(scheme)
	known := false
	for _, k := range serviceSchemes {
		known = known || scheme == k
	}
	if !known {
		return "", fmt.Errorf("service URL %q: scheme %q is not one of %s", url, scheme, strings.Join(serviceSchemes, ", "))
	}
	rest = strings.TrimSuffix(rest, "/")
	if strings.ContainsAny(rest, "/?#@") {
		return "", fmt.Errorf("service URL %q: only host:port addresses may follow %s:// (no path, query or credentials: see WithToken, WithTLSAuth)", url, scheme)
	}
	var addrs []string
	for _, a := range strings.Split(strings.ReplaceAll(rest, ";", ","), ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			return "", fmt.Errorf("service URL %q: want host:port addresses separated by ',' after %s://", url, scheme)
		}
		if err := option.HostPort(a); err != nil {
			return "", fmt.Errorf("service URL %q: address %w", url, err)
		}
		addrs = append(addrs, a)
	}
	return scheme + "://" + strings.Join(addrs, ","), nil
}
