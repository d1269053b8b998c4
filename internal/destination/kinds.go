package destination

import (
	"fmt"
	"slices"
	"strings"
)

// KindHTTP is the kind of an http:// or https:// endpoint: a webhook
// POSTed to a receiver.
const KindHTTP = "http"

// Kinds are every kind of destination, in the order pages offer them.
var Kinds = []string{KindHTTP, KindAMQP, KindNATS, KindKafka, KindSQS, KindPubSub, KindRedis}

// ParseKinds reads the operator's list of the kinds owners may create
// endpoints with (hookd serve --destinations): comma-separated names of
// Kinds (or of their schemes: https is http, amqps amqp), in any case,
// with spaces; at least one. The answer is in Kinds'
// order, each kind once.
func ParseKinds(list string) ([]string, error) {
	seen := map[string]bool{}
	for _, k := range strings.Split(list, ",") {
		k = strings.ToLower(strings.TrimSpace(k))
		switch {
		case k == "":
			continue
		case k == "https":
			k = KindHTTP // http covers https
		case kinds[k] != "":
			k = kinds[k] // a scheme names its kind: amqps is amqp
		case !slices.Contains(Kinds, k):
			return nil, fmt.Errorf("%q is no destination kind: use some of %s", k, strings.Join(Kinds, ", "))
		}
		seen[k] = true
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("no destination kind given: name at least one of %s", strings.Join(Kinds, ", "))
	}
	out := make([]string, 0, len(seen))
	for _, k := range Kinds {
		if seen[k] {
			out = append(out, k)
		}
	}
	return out, nil
}
