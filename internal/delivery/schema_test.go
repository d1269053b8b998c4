package delivery_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/store"
)

// orderSchema is a typical event schema: a few typed, bounded fields.
const orderSchema = `{"type":"object","required":["order_id","amount","currency"],"properties":{
	"order_id":{"type":"string","pattern":"^ord_[a-z0-9]+$"},
	"amount":{"type":"integer","minimum":0},
	"currency":{"enum":["EUR","USD","GBP"]},
	"customer":{"type":"object","properties":{"id":{"type":"string"},"email":{"type":"string","maxLength":254}}},
	"items":{"type":"array","maxItems":100,"items":{"type":"object","required":["sku","qty"],"properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}}}}}}`

// putSchema gives acme's type typ the schema (and makes it webhook-exposed).
func putSchema(t testing.TB, db *store.DB, typ, schema string) {
	t.Helper()
	et := &event.Type{OwnerID: "acme", Name: typ, Exposure: event.Webhook, Schema: []byte(schema), CreatedAt: time.Now()}
	_, err := et.CheckSchema()
	must(t, err)
	must(t, db.Q().PutEventType(context.Background(), et))
}

func order(typ string, n int) *event.Event {
	return &event.Event{OwnerID: "acme", Type: typ, Data: []byte(fmt.Sprintf(
		`{"order_id":"ord_%d","amount":%d,"currency":"EUR","customer":{"id":"cus_1","email":"a@example.com"},"items":[{"sku":"tea","qty":2},{"sku":"cup","qty":1}]}`, n, n))}
}

// TestPublishGroupSchemaRefusal: in one group commit, the caller whose data
// does not match its type's schema is refused (naming the field) and the
// others of the group commit.
func TestPublishGroupSchemaRefusal(t *testing.T) {
	t.Parallel()
	eachGroupBackend(t, func(t *testing.T, b groupBench) {
		putSchema(t, b.db, "order.typed", orderSchema)
		h := holdFirstGroup(t, b)
		bad := order("order.typed", 2)
		bad.Data = []byte(`{"order_id":"ord_2","amount":-3,"currency":"EUR"}`)
		evs := []*event.Event{order("order.typed", 1), bad, order("order.typed", 3), paid("", 4)}
		answers := publishBehindHeldGroup(t, b, h, order("order.typed", 0), evs)
		if err := answers[1].err; apperr.CodeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), "data/amount") {
			t.Fatalf("bad caller: %v; want invalid naming data/amount", err)
		}
		for i, a := range answers {
			if i != 1 && (a.err != nil || a.pub.ID == "") {
				t.Fatalf("caller %d beside a refused one: %+v, %v", i, a.pub, a.err)
			}
		}
		// The refused caller was one of the group, not a group of its own.
		if got := h.groupSizes(); len(got) != 2 || got[1] != 4 {
			t.Fatalf("group sizes %v; want [1 4]", got)
		}
		wantWritten(t, b.db, 4, 4)
	})
}

// BenchmarkPublishSchema: publishing to a type with a schema against one
// without, on each engine, one event per commit (a single publish, the API's
// publish) and 100 per commit (a batch, where the check is the largest
// share). Issue 20's budget: at most 10 % more with the schema.
func BenchmarkPublishSchema(b *testing.B) {
	for _, e := range dbtest.Backends() {
		b.Run(e.Name, func(b *testing.B) {
			g := openGroupBench(b, e)
			putSchema(b, g.db, "order.typed", orderSchema)
			ctx := context.Background()
			n := 0
			// none and schema side by side, so both meet tables of about
			// the same size.
			for _, mode := range []struct {
				name string
				size int
			}{{"one", 1}, {"batch100", 100}} {
				for _, typ := range []struct{ name, typ string }{{"none", "order.paid"}, {"schema", "order.typed"}} {
					b.Run(mode.name+"/"+typ.name, func(b *testing.B) {
						for b.Loop() {
							evs := make([]*event.Event, mode.size)
							for i := range evs {
								n++
								evs[i] = order(typ.typ, n)
							}
							if mode.size == 1 {
								_, err := publishOne(ctx, g.svc, evs[0])
								must(b, err)
								continue
							}
							must(b, g.db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
								_, err := g.svc.Publish(ctx, delivery.Request{Tx: q, Events: evs})
								return err
							}))
						}
					})
				}
			}
		})
	}
}

// TestSchemaCheckedBeforeTheTransaction: the check that runs before the
// transaction (against the schema the type had at the last publish) is
// only a hint. When another process changed the schema since, the publish
// meets the new one: data the old schema admitted is refused, data it
// refused is admitted, for one event and for a batch (which checks on
// several goroutines), and a refused batch writes nothing.
func TestSchemaCheckedBeforeTheTransaction(t *testing.T) {
	t.Parallel()
	eachGroupBackend(t, func(t *testing.T, b groupBench) {
		ctx := context.Background()
		capped := strings.Replace(orderSchema, `"minimum":0`, `"minimum":0,"maximum":5`, 1)
		batch := func(from, n, bad int) []*event.Event {
			evs := make([]*event.Event, n)
			for i := range evs {
				evs[i] = order("order.typed", from+i%5)
				if i == bad {
					evs[i] = order("order.typed", 10)
				}
			}
			return evs
		}
		publishBatch := func(evs []*event.Event) error {
			return b.db.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
				_, err := b.svc.Publish(ctx, delivery.Request{Tx: q, Events: evs})
				return err
			})
		}
		wantRefused := func(err error, where string) {
			t.Helper()
			if apperr.CodeOf(err) != apperr.Invalid || !strings.HasPrefix(apperr.MessageOf(err), where) || !strings.Contains(err.Error(), "data/amount: maximum") {
				t.Fatalf("%v; want invalid, %q naming data/amount's maximum", err, where)
			}
		}

		putSchema(t, b.db, "order.typed", orderSchema)
		_, err := publishOne(ctx, b.svc, order("order.typed", 10))
		must(t, err) // this process now knows the type's schema

		// Another process caps the amount: the same data is refused.
		putSchema(t, b.db, "order.typed", capped)
		_, err = publishOne(ctx, b.svc, order("order.typed", 10))
		wantRefused(err, "")
		wantRefused(publishBatch(batch(0, 40, 13)), "events[13]: ")
		wantWritten(t, b.db, 1, 1)
		// Known now on both sides of the transaction, checked in parallel.
		wantRefused(publishBatch(batch(0, 40, 37)), "events[37]: ")
		must(t, publishBatch(batch(0, 40, -1)))
		wantWritten(t, b.db, 41, 41)

		// And lifts the cap again: data the last schema refused goes.
		putSchema(t, b.db, "order.typed", orderSchema)
		_, err = publishOne(ctx, b.svc, order("order.typed", 10))
		must(t, err)
		must(t, publishBatch(batch(0, 40, 21)))
		wantWritten(t, b.db, 82, 82)
	})
}
