package console

import "testing"

// The picker's fields make the url the API reads, and an endpoint's url
// read back into the fields makes it again (the secret as ***, kept).
func TestDestinationFormRoundTrip(t *testing.T) {
	for _, raw := range []string{
		"amqps://app:***@rabbit.example:5671/prod?exchange=events&routing_key=orders",
		"nats://nats.example:4222/orders.events",
		"kafka://u:***@b1:9092,b2:9092/orders",
		"sqs://AKIDX:***@sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo",
		"sqs://AKIDX:***@127.0.0.1:4566/000000000000/q?region=us-east-1&tls=false",
		"gcppubsub://sa:***@pubsub.googleapis.com/p/orders?ordered=true",
		"rediss://default:***@redis.example:6380/2?maxlen=500&stream=hooks",
	} {
		d := destFormOf(raw)
		if got := d.url(); got != raw {
			t.Errorf("destFormOf(%q).url() = %q", raw, got)
		}
	}
	// A new secret replaces ***; a service account key is encoded.
	d := destForm{Kind: "gcppubsub", V: map[string]string{"project": "p", "topic": "t", "sa_key": `{"type":"service_account"}`}}
	if got := d.url(); got != "gcppubsub://sa:eyJ0eXBlIjoic2VydmljZV9hY2NvdW50In0@pubsub.googleapis.com/p/t" {
		t.Errorf("url with a key = %q", got)
	}
	d = destForm{Kind: "amqp", V: map[string]string{"host": "h:5672", "user": "u", "password": "p@ss/w", "routing_key": "q"}}
	if got := d.url(); got != "amqp://u:p%40ss%2Fw@h:5672/?routing_key=q" {
		t.Errorf("url with a password = %q", got)
	}
	if in := d.destInput("url: routing_key: missing"); in != "amqp_routing_key" {
		t.Errorf("a routing key fault goes beside %q", in)
	}
	if in := (destForm{Kind: "sqs"}).destInput("url: credentials: give both"); in != "sqs_secret_key" {
		t.Errorf("an SQS credentials fault goes beside %q", in)
	}
}
