package destination

import (
	"slices"
	"strings"
	"testing"
)

// The operator's list of kinds: names in any case and order, https as
// http; an unknown name or an empty list refused, naming the kinds that
// exist.
func TestParseKinds(t *testing.T) {
	for in, want := range map[string][]string{
		"http,sqs":               {"http", "sqs"},
		" SQS , https,sqs ":      {"http", "sqs"},
		"redis,amqp,http":        {"http", "amqp", "redis"},
		"gcppubsub":              {"gcppubsub"},
		strings.Join(Kinds, ","): Kinds,
	} {
		got, err := ParseKinds(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseKinds(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, says := range map[string]string{
		"http,rabbitmq": `"rabbitmq" is no destination kind`,
		"http,webhook":  `"webhook" is no destination kind`,
		"":              "no destination kind given",
		" , ":           "no destination kind given",
	} {
		_, err := ParseKinds(in)
		if err == nil {
			t.Errorf("ParseKinds(%q) was accepted", in)
			continue
		}
		if !strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), "http, amqp, nats, kafka, sqs, gcppubsub, redis") {
			t.Errorf("ParseKinds(%q) says %q; want %q and the kinds that exist", in, err, says)
		}
	}
}
