package hookd

import "context"

// CreateOwner creates an owner: whoever owns endpoints and receives their
// own events (a customer, a team, one app in one environment…). An owner
// never sees another's data. profile is "standard" or "kwork" (empty:
// Config.DefaultProfile); attrs are what the profile's envelope carries
// (kwork: app, environment…). Creating an owner that exists is an error.
func (h *Hookd) CreateOwner(ctx context.Context, id, profile string, attrs map[string]string) error {
	return h.a.CreateOwner(ctx, id, profile, attrs)
}

// CreateAPIKey creates an API key and returns it; it is shown only now
// (hookd keeps its hash). role is "admin" (manages the owner's endpoints
// and publishes), "publisher" (publishes only) or "operator" (acts on any
// owner; owner must be empty); empty means admin. The owner of an admin or
// publisher key is created, with the default profile, if it does not exist.
func (h *Hookd) CreateAPIKey(ctx context.Context, ownerID, role string) (string, error) {
	return h.a.CreateAPIKey(ctx, ownerID, role)
}
