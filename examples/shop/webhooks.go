package main

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"

	"github.com/hookd/hookd"
)

// owner is who receives the shop's webhooks: the shop's own integrations
// (a multi-tenant app would use one owner per merchant).
const owner = "shop"

// openWebhooks opens hookd on the shop's own database, declaring the one
// event type the shop publishes.
func openWebhooks(ctx context.Context, db *database, masterKey []byte, allow []netip.Prefix) (*hookd.Hookd, error) {
	cfg := hookd.Config{
		MasterKey:   masterKey,
		EgressAllow: allow,
		EventTypes:  []hookd.EventType{{Name: "order.created", Description: "A customer placed an order.", Scoped: true}},
		Scope:       partnerScope,
	}
	if db.pool != nil {
		return hookd.OpenPool(ctx, db.pool, cfg)
	}
	return hookd.OpenDB(ctx, db.sql, cfg)
}

// partnerScope admits an order to an endpoint whose scope source is
// "region:<r>" only when the order ships to region r: a regional partner
// hears of its own region's orders and no other.
func partnerScope(ctx context.Context, source string, ev hookd.Event) (bool, error) {
	region, ok := strings.CutPrefix(source, "region:")
	var order struct {
		Region string `json:"region"`
	}
	if err := json.Unmarshal(ev.Data, &order); err != nil {
		return false, err
	}
	return ok && order.Region == region, nil
}
