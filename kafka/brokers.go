package kafka

import (
	"fmt"
	"strings"

	"github.com/babelqueue/babelqueue-go/core/option"
)

// brokerScheme is the one URL scheme WithBrokers accepts in front of a
// broker list, the form the bq tool takes.
const brokerScheme = "kafka://"

// parseBrokers returns the host:port addresses that entries name, in
// order, and one problem for each entry that is not a broker address.
//
// An entry is host:port, a comma-separated list of them (the form of
// BQ_KAFKA_BROKERS), or either behind kafka://. Spaces around an address
// are ignored. Any other scheme is a problem, kafka+ssl:// among them: TLS
// is set with WithTLS.
func parseBrokers(entries []string) (addrs []string, problems []string) {
	for _, entry := range entries {
		list := strings.TrimSpace(entry)
		if list == "" {
			problems = append(problems, "blank broker address")
			continue
		}
		if scheme, rest, ok := strings.Cut(list, "://"); ok {
			if !strings.EqualFold(scheme+"://", brokerScheme) {
				problems = append(problems, fmt.Sprintf("broker %q: scheme %q is not supported: write host:port or kafka://host:port (TLS is set with WithTLS)", entry, scheme))
				continue
			}
			list = strings.TrimSuffix(rest, "/")
			if strings.ContainsAny(list, "/?#@") {
				problems = append(problems, fmt.Sprintf("broker %q: only host:port pairs may follow kafka:// (no path, query or credentials)", entry))
				continue
			}
		}
		for _, a := range strings.Split(list, ",") {
			a = strings.TrimSpace(a)
			if a == "" {
				problems = append(problems, fmt.Sprintf("broker list %q has an empty entry", entry))
				continue
			}
			if err := option.HostPort(a); err != nil {
				problems = append(problems, fmt.Sprintf("broker address %v", err))
				continue
			}
			addrs = append(addrs, a)
		}
	}
	return addrs, problems
}
