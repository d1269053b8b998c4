package event

// standmeet is the standard profile's built-in catalog: the 39 types an instance owner's
// endpoints may subscribe to, all webhook-visible, all thin (type, subject
// and id; receivers fetch the rest), none subscribed by default. Only
// corpus.note.changed is scoped.
var standmeet = []Type{
	{Name: "corpus.note.changed", Scoped: true, Description: "A note was created, updated or deleted: {op, note_id, published, was_published}; scoped (grants, published slice)."},
	{Name: "webhook.test", Description: "Sent by webhooks.send_test to the one endpoint it names."},
	{Name: "access_request.created", Description: "Someone asked for access to the instance."},
	{Name: "access_request.approved", Description: "An access request was approved."},
	{Name: "access_request.status_changed", Description: "An access request moved to another status."},
	{Name: "code.issued", Description: "An access code was issued."},
	{Name: "code.revoked", Description: "An access code was revoked."},
	{Name: "code.redeemed", Description: "An access code was redeemed by a visitor."},
	{Name: "conversation.started", Description: "A visitor started a conversation."},
	{Name: "conversation.message", Description: "A message was added to a conversation."},
	{Name: "conversation.pruned", Description: "Old conversations were pruned."},
	{Name: "ghost.accepted", Description: "A ghost-written draft was accepted."},
	{Name: "booking.created", Description: "A booking was made."},
	{Name: "booking.cancelled", Description: "A booking was cancelled."},
	{Name: "booking.rescheduled", Description: "A booking was moved to another time."},
	{Name: "application.committed", Description: "A job application was committed."},
	{Name: "jobs.fetched", Description: "Job listings were fetched from a source."},
	{Name: "writing.published", Description: "A piece of writing was published."},
	{Name: "writing.unpublished", Description: "A piece of writing was unpublished."},
	{Name: "vault.imported", Description: "A vault was imported into the corpus."},
	{Name: "microsite.build.settled", Description: "A microsite build finished, successfully or not."},
	{Name: "page.promoted_live", Description: "A microsite page was promoted to live."},
	{Name: "page.rolled_back", Description: "A microsite page was rolled back to an earlier version."},
	{Name: "page.unpublished", Description: "A microsite page was unpublished."},
	{Name: "microsite.store.doc_inserted", Description: "A document was inserted into a microsite's store."},
	{Name: "api_key.issued", Description: "An API key was issued."},
	{Name: "api_key.revoked", Description: "An API key was revoked."},
	{Name: "supplier.connected", Description: "A supplier was connected."},
	{Name: "supplier.disconnected", Description: "A supplier was disconnected."},
	{Name: "supplier.activated", Description: "A connected supplier was made the active one."},
	{Name: "block.installed", Description: "A block was installed."},
	{Name: "block.failed", Description: "A block failed to install or run."},
	{Name: "gas.exhausted", Description: "The instance ran out of gas (usage credit)."},
	{Name: "gas.refilled", Description: "The instance's gas was refilled."},
	{Name: "instance.upgrade_requested", Description: "An upgrade of the instance was requested."},
	{Name: "owner.login", Description: "The owner signed in (security)."},
	{Name: "owner.email_changed", Description: "The owner's email address changed (security)."},
	{Name: "owner.recovery_requested", Description: "Account recovery was requested for the owner (security)."},
	{Name: "ip_ban.added", Description: "An IP address was banned (security)."},
}

func init() {
	for i := range standmeet {
		standmeet[i].Exposure = Webhook
	}
}
