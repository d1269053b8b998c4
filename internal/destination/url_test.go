package destination_test

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/destination"
)

func TestParse(t *testing.T) {
	good := []struct {
		raw  string
		want destination.Dest
	}{
		{"amqp://guest:pw@127.0.0.1:5672/?routing_key=orders", destination.Dest{Kind: "amqp", RoutingKey: "orders"}},
		{"amqps://u:p@127.0.0.1/prod?exchange=events&routing_key=order.paid", destination.Dest{Kind: "amqp", Exchange: "events", RoutingKey: "order.paid"}},
		{"nats://127.0.0.1:4222/orders.events", destination.Dest{Kind: "nats", Subject: "orders.events"}},
		{"redis://127.0.0.1:6379/2?stream=hooks&maxlen=500", destination.Dest{Kind: "redis", Stream: "hooks", MaxLen: 500, DB: 2}},
		{"redis://127.0.0.1?stream=hooks", destination.Dest{Kind: "redis", Stream: "hooks", MaxLen: destination.DefaultMaxLen}},
		{"kafka://u:p@127.0.0.1:9092,127.0.0.2:9093/orders", destination.Dest{Kind: "kafka", Brokers: []string{"127.0.0.1:9092", "127.0.0.2:9093"}, Topic: "orders"}},
	}
	for _, g := range good {
		d, err := destination.Parse(g.raw, loopback)
		if err != nil {
			t.Fatalf("Parse(%q): %v", g.raw, err)
		}
		d.URL = nil
		if !reflect.DeepEqual(*d, g.want) {
			t.Fatalf("Parse(%q) = %+v, want %+v", g.raw, *d, g.want)
		}
	}
	bad := []struct{ raw, field string }{
		{"amqp://u:p@127.0.0.1:5672/", "routing_key"},
		{"amqp://u:p@127.0.0.1:5672/?routing_key=q&queue=q", "queue"},
		{"amqp://u:p@127.0.0.1:99999/?routing_key=q", "port"},
		{"nats://127.0.0.1:4222/", "subject"},
		{"nats://127.0.0.1:4222/orders.*", "subject"},
		{"redis://127.0.0.1:6379/0", "stream"},
		{"redis://127.0.0.1:6379/0?stream=s&maxlen=0", "maxlen"},
		{"redis://127.0.0.1:6379/99?stream=s", "db"},
		{"nats:///orders", "host"},
		{"kafka://127.0.0.1:9092/", "topic"},
		{"kafka://127.0.0.1:9092,10.9.9.9:9092/t", "host"},
	}
	for _, b := range bad {
		_, err := destination.Parse(b.raw, loopback)
		var fe *destination.FieldError
		if !errors.As(err, &fe) || fe.Field != b.field {
			t.Fatalf("Parse(%q) = %v, want a fault of %q", b.raw, err, b.field)
		}
	}
}

// The egress guard judges a broker's host as an HTTP endpoint's: loopback
// and private addresses refused unless allowed.
func TestParseEgress(t *testing.T) {
	for _, raw := range []string{
		"amqp://u:secretpw@127.0.0.1:5672/?routing_key=q",
		"nats://10.0.0.7:4222/s",
		"redis://localhost:6379?stream=s",
		"redis://2130706433:6379?stream=s",
	} {
		_, err := destination.Parse(raw, nil)
		var fe *destination.FieldError
		if !errors.As(err, &fe) || fe.Field != "host" {
			t.Fatalf("Parse(%q) without an allow list = %v, want the host refused", raw, err)
		}
		if strings.Contains(err.Error(), "secretpw") {
			t.Fatalf("the refusal shows the password: %v", err)
		}
	}
	if _, err := destination.Parse("nats://10.0.0.7:4222/s", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}); err != nil {
		t.Fatalf("an allowed private host refused: %v", err)
	}
}

func TestRedactAndKeep(t *testing.T) {
	raw := "amqp://guest:s3cr%40t@rabbit.example:5672/prod?routing_key=q"
	shown := destination.Redact(raw)
	if shown != "amqp://guest:***@rabbit.example:5672/prod?routing_key=q" {
		t.Fatalf("Redact = %q", shown)
	}
	if strings.Contains(shown, "s3cr") || !destination.HasPassword(shown) {
		t.Fatalf("Redact = %q: want the password masked, and still one", shown)
	}
	if got := destination.Redact("nats://rabbit.example/s"); got != "nats://rabbit.example/s" {
		t.Fatalf("Redact without a password = %q", got)
	}
	// The owner changes the routing key and gives the password back masked.
	kept, err := destination.Keep("amqp://guest:***@rabbit.example:5672/prod?routing_key=q2", raw)
	if err != nil || kept != "amqp://guest:s3cr%40t@rabbit.example:5672/prod?routing_key=q2" {
		t.Fatalf("Keep = %q, %v", kept, err)
	}
	// Another host must be given its password: the stored one never
	// follows the url elsewhere.
	if _, err := destination.Keep("amqp://guest:***@evil.example:5672/prod?routing_key=q", raw); err == nil {
		t.Fatal("Keep sent the stored password to another host")
	}
	if _, err := destination.Keep("amqp://admin:***@rabbit.example:5672/prod?routing_key=q", raw); err == nil {
		t.Fatal("Keep gave the stored password to another user")
	}
}
