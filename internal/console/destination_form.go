package console

import (
	"net/url"
	"slices"
	"strings"

	"github.com/hookd/hookd/internal/destination"
)

// The destination picker on the endpoint form: a kind, and the fields that
// kind needs, from which the console writes the endpoint's url
// (docs/destinations.md). A secret (password, secret access key, service
// account key) is never shown: on an edit an empty one keeps the stored one.

// destField is one input of a kind: its name (the form's input is
// <kind>_<name>), its type (text, secret, check, key) and an example.
type destField struct {
	Name, Type, Example string
}

// destKind is one kind of the picker and its inputs.
type destKind struct {
	Name   string
	Fields []destField
}

// destKinds are the picker's kinds after HTTP, in its order.
var destKinds = []destKind{
	{destination.KindAMQP, []destField{{"host", "text", "rabbit.internal:5672"}, {"vhost", "text", "prod"}, {"user", "text", "app"}, {"password", "secret", ""}, {"exchange", "text", "events"}, {"routing_key", "text", "orders"}, {"tls", "check", ""}}},
	{destination.KindNATS, []destField{{"host", "text", "nats.internal:4222"}, {"user", "text", ""}, {"password", "secret", ""}, {"subject", "text", "orders.events"}}},
	{destination.KindKafka, []destField{{"brokers", "text", "broker1:9092,broker2:9092"}, {"user", "text", ""}, {"password", "secret", ""}, {"topic", "text", "orders"}}},
	{destination.KindSQS, []destField{{"queue_url", "text", "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"}, {"region", "text", "eu-west-1"}, {"access_key", "text", "AKIA…"}, {"secret_key", "secret", ""}}},
	{destination.KindPubSub, []destField{{"host", "text", "pubsub.googleapis.com"}, {"project", "text", "my-project"}, {"topic", "text", "orders"}, {"ordered", "check", ""}, {"sa_key", "key", `{"type": "service_account", …}`}}},
	{destination.KindRedis, []destField{{"host", "text", "redis.internal:6379"}, {"db", "text", "0"}, {"user", "text", ""}, {"password", "secret", ""}, {"stream", "text", "hookd-events"}, {"maxlen", "text", "10000"}, {"tls", "check", ""}}},
}

// destForm is the picker's state: the kind chosen ("http" or one of
// destKinds), its fields' values, and whether the endpoint has a secret
// stored (an empty secret field keeps it).
type destForm struct {
	Kind  string
	Kinds []destKind
	// HTTP: the picker offers HTTP; Single: it offers one kind only, so
	// there is no picker, only that kind's fields (offer).
	HTTP, Single bool
	V            map[string]string
	HasSecret    bool
}

// offer narrows the picker to the kinds the operator allows (ops'
// DestinationKinds), keeping the kind shown when it is an existing
// endpoint's (saved before its kind was left out: it keeps it). A new
// endpoint whose kind is not offered starts on the first kind offered.
func (d destForm) offer(allowed []string, existing bool) destForm {
	ok := func(k string) bool { return slices.Contains(allowed, k) || existing && k == d.Kind }
	if !ok(d.Kind) && len(allowed) > 0 {
		d.Kind = allowed[0]
	}
	d.HTTP = ok(destination.KindHTTP)
	d.Kinds = nil
	for _, k := range destKinds {
		if ok(k.Name) {
			d.Kinds = append(d.Kinds, k)
		}
	}
	d.Single = len(d.Kinds)+btoi(d.HTTP) == 1
	return d
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// isBroker says the picker chose a destination other than HTTP.
func (d destForm) isBroker() bool { return d.Kind != "" && d.Kind != "http" }

// readDestForm reads the picker; "" kind (a form without the picker: the
// API's clients, older pages) is HTTP.
func readDestForm(r interface{ PostFormValue(string) string }) destForm {
	d := destForm{Kind: r.PostFormValue("dest_kind"), Kinds: destKinds, V: map[string]string{}, HasSecret: r.PostFormValue("dest_has_secret") != ""}
	for _, k := range destKinds {
		if k.Name != d.Kind {
			continue
		}
		for _, f := range k.Fields {
			d.V[f.Name] = strings.TrimSpace(r.PostFormValue(k.Name + "_" + f.Name))
		}
	}
	return d
}

// userinfo writes user and secret as a url's userinfo: "" when neither;
// the stored secret (***) when secret is empty and one is stored.
func (d destForm) userinfo(user, secret string) string {
	switch {
	case secret != "":
		return url.UserPassword(user, secret).String() + "@"
	case d.HasSecret:
		return url.User(user).String() + ":" + destination.Masked + "@" // built by hand: UserPassword would escape the asterisks
	case user != "":
		return url.User(user).String() + "@"
	}
	return ""
}

// url is the endpoint url the picker's fields make.
func (d destForm) url() string {
	v := d.V
	q := url.Values{}
	set := func(name, value string) {
		if value != "" {
			q.Set(name, value)
		}
	}
	query := func() string {
		if len(q) == 0 {
			return ""
		}
		return "?" + q.Encode()
	}
	switch d.Kind {
	case destination.KindAMQP:
		scheme := "amqp"
		if v["tls"] == "on" {
			scheme = "amqps"
		}
		set("exchange", v["exchange"])
		set("routing_key", v["routing_key"])
		return scheme + "://" + d.userinfo(v["user"], v["password"]) + v["host"] + "/" + url.PathEscape(v["vhost"]) + query()
	case destination.KindNATS:
		return "nats://" + d.userinfo(v["user"], v["password"]) + v["host"] + "/" + v["subject"]
	case destination.KindKafka:
		return "kafka://" + d.userinfo(v["user"], v["password"]) + v["brokers"] + "/" + v["topic"]
	case destination.KindSQS:
		set("region", v["region"])
		rest, isHTTP := strings.CutPrefix(v["queue_url"], "http://")
		if isHTTP {
			q.Set("tls", "false")
		} else {
			rest = strings.TrimPrefix(rest, "https://")
		}
		return "sqs://" + d.userinfo(v["access_key"], v["secret_key"]) + rest + query()
	case destination.KindPubSub:
		host := v["host"]
		if host == "" {
			host = "pubsub.googleapis.com"
		}
		if v["ordered"] == "on" {
			q.Set("ordered", "true")
		}
		key := ""
		if v["sa_key"] != "" {
			key = destination.PubSubKey([]byte(v["sa_key"]))
		}
		user := ""
		if key != "" || d.HasSecret {
			user = "sa"
		}
		return "gcppubsub://" + d.userinfo(user, key) + host + "/" + v["project"] + "/" + v["topic"] + query()
	case destination.KindRedis:
		scheme := "redis"
		if v["tls"] == "on" {
			scheme = "rediss"
		}
		set("stream", v["stream"])
		set("maxlen", v["maxlen"])
		db := ""
		if v["db"] != "" {
			db = "/" + v["db"]
		}
		return scheme + "://" + d.userinfo(v["user"], v["password"]) + v["host"] + db + query()
	}
	return ""
}

// destFormOf is the picker showing an endpoint's url (as stored: its
// secret ***, never shown).
func destFormOf(raw string) destForm {
	d := destForm{Kind: "http", Kinds: destKinds, V: map[string]string{}}
	if !destination.Is(raw) {
		return d
	}
	u, err := url.Parse(raw)
	if err != nil {
		return d
	}
	d.Kind = destination.KindOf(raw)
	d.HasSecret = destination.HasPassword(raw)
	q, v := u.Query(), d.V
	path := strings.TrimPrefix(u.Path, "/")
	user := u.User.Username()
	switch d.Kind {
	case destination.KindAMQP:
		v["host"], v["vhost"], v["user"], v["exchange"], v["routing_key"] = u.Host, path, user, q.Get("exchange"), q.Get("routing_key")
		v["tls"] = check(u.Scheme == "amqps")
	case destination.KindNATS:
		v["host"], v["user"], v["subject"] = u.Host, user, path
	case destination.KindKafka:
		v["brokers"], v["user"], v["topic"] = u.Host, user, path
	case destination.KindSQS:
		scheme := "https://"
		if q.Get("tls") == "false" {
			scheme = "http://"
		}
		v["queue_url"], v["region"], v["access_key"] = scheme+u.Host+u.Path, q.Get("region"), user
	case destination.KindPubSub:
		v["host"] = strings.TrimSuffix(u.Host, ":443")
		v["project"], v["topic"], _ = strings.Cut(path, "/")
		v["ordered"] = check(q.Get("ordered") == "true")
	case destination.KindRedis:
		v["host"], v["db"], v["user"], v["stream"], v["maxlen"] = u.Host, path, user, q.Get("stream"), q.Get("maxlen")
		v["tls"] = check(u.Scheme == "rediss")
	}
	return d
}

func check(on bool) string {
	if on {
		return "on"
	}
	return ""
}

// destInput is the picker's input that a destination fault names (the
// API's 422 "url: <part>: …"), for the error to stand beside it; "" when
// the fault is not the picker's.
func (d destForm) destInput(msg string) string {
	part, ok := strings.CutPrefix(msg, "url: ")
	if !ok || !d.isBroker() {
		return ""
	}
	part, _, _ = strings.Cut(part, ":")
	var want string
	switch part {
	case "host", "port":
		want = map[string]string{destination.KindKafka: "brokers", destination.KindSQS: "queue_url"}[d.Kind]
		if want == "" {
			want = "host"
		}
	case "queue":
		want = "queue_url"
	case "credentials":
		want = map[string]string{destination.KindSQS: "secret_key", destination.KindPubSub: "sa_key"}[d.Kind]
		if want == "" {
			want = "password"
		}
	default:
		want = part
	}
	for _, k := range destKinds {
		if k.Name != d.Kind {
			continue
		}
		for _, f := range k.Fields {
			if f.Name == want {
				return k.Name + "_" + f.Name
			}
		}
		return k.Name + "_" + k.Fields[0].Name // a part with no input of its own: beside the first
	}
	return ""
}
