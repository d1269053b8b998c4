package hookd_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/hookd/hookd"
)

// Open hookd on an SQLite file, register a type, and publish inside a
// transaction of the application's own: the event commits with the
// business change, or not at all.
func ExampleHookd_PublishTx() {
	dir, _ := os.MkdirTemp("", "hookd-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	h, err := hookd.Open(ctx, hookd.Config{
		Database:  filepath.Join(dir, "app.db"),
		MasterKey: bytes.Repeat([]byte{1}, 32), // use HOOKD_MASTER_KEY in production
		Work:      false,                       // this process only publishes
	})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Ops.CreateOwner(ctx, "acme", "standard", nil); err != nil {
		log.Fatal(err)
	}

	tx, err := h.DB.SQLDB().BeginTx(ctx, nil) // the application's transaction
	if err != nil {
		log.Fatal(err)
	}
	// … the application's own writes in tx …
	ids, err := h.PublishTx(ctx, tx, hookd.Event{Owner: "acme", Type: "order.placed", Subject: "order://42", Data: []byte(`{"total": 4200}`)})
	if err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(ids), ids[0][:4])
	// Output: 1 evt_
}
