package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/mail"
	"strings"

	"github.com/hookd/hookd"
)

// shop is the HTTP app: its orders, its jobs, its webhooks.
type shop struct {
	db    *database
	jobs  *jobs
	hooks *hookd.Hookd
	log   *slog.Logger
}

type orderIn struct {
	SKU      string `json:"sku"`
	Quantity int64  `json:"quantity"`
	Region   string `json:"region"`
	Email    string `json:"email"`
}

type order struct {
	ID         int64  `json:"id"`
	SKU        string `json:"sku"`
	Quantity   int64  `json:"quantity"`
	TotalCents int64  `json:"total_cents"`
	Region     string `json:"region"`
	Email      string `json:"email"`
}

// errRefused is an order the shop turns down; its message says why.
type errRefused struct{ msg string }

func (e errRefused) Error() string { return e.msg }

func refuse(format string, args ...any) error { return errRefused{fmt.Sprintf(format, args...)} }

// createOrder is POST /orders: the order row, the stock it takes, its
// receipt job and its order.created webhook commit in one transaction, or
// none of them does.
func (s *shop) createOrder(w http.ResponseWriter, r *http.Request) {
	var in orderIn
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "the body is not an order: " + err.Error()})
		return
	}
	var o order
	err := s.db.inTx(r.Context(), func(t tx) error {
		var err error
		o, err = s.placeOrder(r, t, in)
		return err
	})
	var refused errRefused
	switch {
	case errors.As(err, &refused):
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": refused.msg})
	case err != nil:
		s.log.Error("create order", "error", err)
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "could not place the order"})
	default:
		writeJSON(w, http.StatusCreated, o)
	}
}

func (s *shop) placeOrder(r *http.Request, t tx, in orderIn) (order, error) {
	ctx := r.Context()
	if _, err := mail.ParseAddress(in.Email); err != nil {
		return order{}, refuse("email %q is not an address", in.Email)
	}
	if in.Quantity < 1 {
		return order{}, refuse("quantity %d: order at least 1", in.Quantity)
	}
	o := order{SKU: in.SKU, Quantity: in.Quantity, Region: strings.ToLower(in.Region), Email: in.Email}
	var price int64
	if err := t.queryRow(ctx, `SELECT price_cents FROM products WHERE sku = $1`, in.SKU).Scan(&price); err != nil {
		return order{}, refuse("no product %q (try mug or poster)", in.SKU)
	}
	o.TotalCents = price * in.Quantity
	if err := t.queryRow(ctx, `INSERT INTO orders (sku, quantity, total_cents, region, email) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
		o.SKU, o.Quantity, o.TotalCents, o.Region, o.Email).Scan(&o.ID); err != nil {
		return order{}, fmt.Errorf("insert order: %w", err)
	}
	if err := s.jobs.insertTx(ctx, t.native(), receiptArgs{OrderID: o.ID, Email: o.Email}); err != nil {
		return order{}, fmt.Errorf("queue receipt: %w", err)
	}
	// The webhook, in the same transaction as the order: thin (ids and what
	// changed), so receivers fetch the rest from the shop's API. order.created
	// is a scoped type: partners see it as partnerScope says, every other
	// endpoint when the data says it is published.
	data, _ := json.Marshal(map[string]any{"order_id": o.ID, "sku": o.SKU, "quantity": o.Quantity, "total_cents": o.TotalCents, "region": o.Region, "published": true})
	if _, err := s.hooks.PublishTx(ctx, t.native(), hookd.Event{Owner: owner, Type: "order.created", Subject: fmt.Sprintf("order://%d", o.ID), Data: data}); err != nil {
		return order{}, fmt.Errorf("publish order.created: %w", err)
	}
	// Stock is checked last, as a real shop's payment or reservation step
	// might fail after everything else was written: the rollback takes the
	// order, the receipt job and the webhook with it.
	n, err := t.exec(ctx, `UPDATE products SET stock = stock - $1 WHERE sku = $2 AND stock >= $1`, o.Quantity, o.SKU)
	if err != nil {
		return order{}, fmt.Errorf("take stock: %w", err)
	}
	if n == 0 {
		return order{}, refuse("not enough %q in stock for %d", o.SKU, o.Quantity)
	}
	return o, nil
}

// listOrders is GET /orders.
func (s *shop) listOrders(w http.ResponseWriter, r *http.Request) {
	out := []order{}
	err := s.db.inTx(r.Context(), func(t tx) error {
		return t.each(r.Context(), `SELECT id, sku, quantity, total_cents, region, email FROM orders ORDER BY id`, func(scan func(...any) error) error {
			var o order
			if err := scan(&o.ID, &o.SKU, &o.Quantity, &o.TotalCents, &o.Region, &o.Email); err != nil {
				return err
			}
			out = append(out, o)
			return nil
		})
	})
	if err != nil {
		s.log.Error("list orders", "error", err)
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "could not list the orders"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": out})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
