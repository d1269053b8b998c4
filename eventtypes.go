package hookd

import (
	"encoding/json"

	"github.com/hookd/hookd/internal/event"
)

// EventType is a kind of event your application publishes, offered to every
// owner's endpoints. Events of a type nobody registered are stored but
// never leave hookd, so a type you forgot to declare cannot leak.
type EventType struct {
	// Name is what endpoints subscribe to with globs: lowercase letters,
	// digits, '.', '_' and '-', e.g. "order.created".
	Name        string
	Description string
	// Scoped events are judged by Config.Scope for endpoints attached to a
	// scope source, and by the published slice for the others; events of
	// other types go to every endpoint subscribed to them.
	Scoped bool
	// Internal keeps events of this type inside hookd: stored, never sent.
	Internal bool
	// Schema, when set, is a JSON Schema (draft 2020-12) every event's
	// Data must match: Publish and PublishTx refuse one that does not, with
	// an error naming the field (e.g. "data/amount: minimum: got -1, want
	// 0"). Example is a Data payload that matches it. Open refuses a
	// schema that does not compile and an example that does not match.
	Schema  json.RawMessage
	Example json.RawMessage
}

func (t EventType) internal() event.Type {
	exp := event.Webhook
	if t.Internal {
		exp = event.Internal
	}
	return event.Type{Name: t.Name, Exposure: exp, Scoped: t.Scoped, Description: t.Description, Schema: t.Schema, Example: t.Example}
}
