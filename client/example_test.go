package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"os"

	"github.com/hookd/hookd/client"
)

// A producer publishes an event; a 422 names what to fix.
func ExampleNew() {
	ctx := context.Background()
	c := client.New("https://hookd.example.com", os.Getenv("HOOKD_KEY"))
	ev, err := c.Events().Publish(ctx, client.EventsPublishInput{
		Type:           "invoice.paid",
		Data:           json.RawMessage(`{"id":"inv_1"}`),
		IdempotencyKey: "inv_1-paid", // the same key publishes once
	})
	var e *client.Error
	switch {
	case errors.As(err, &e) && e.Code == client.CodeInvalid:
		log.Printf("fix the event: %s", e.Message)
	case err != nil:
		log.Print(err)
	default:
		log.Printf("published %s", ev.ID)
	}
}
