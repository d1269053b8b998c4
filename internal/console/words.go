package console

// words are what the pages call things: the standard profile's words for its
// owners, kwork's for kwork (subscriptions, delivery records).
type words struct {
	Section   string // the nav entry
	Endpoint  string // one
	Endpoints string // many
	Log       string // the delivery log
	LogNote   string // what the log keeps
	// Grants: the profile has scoped types, so the nav offers the grants
	// page (kwork has none: its owners reach grants only by URL).
	Grants bool
	// NoGrant is the grant picker's "no grant" choice.
	NoGrant string
	// Developer: the profile's owners mark a developer subscription (the
	// one lifecycle events go to), so the form offers the mark.
	Developer bool
}

var standardWords = words{
	Section: "Webhooks", Endpoint: "endpoint", Endpoints: "endpoints", Log: "Delivery log",
	LogNote: "Newest first. Each row links to the River job that delivers it.",
	Grants:  true, NoGrant: "none — published notes only",
}

var kworkWords = words{
	Section: "Event subscriptions", Endpoint: "subscription", Endpoints: "subscriptions", Log: "Delivery records",
	LogNote: "The latest 50 deliveries: type, time, sends, last status or error, state. Finished records are deleted after 30 days.",
	NoGrant: "none — published events only", Developer: true,
}

func wordsFor(profile string) words {
	if profile == "kwork" {
		return kworkWords
	}
	return standardWords
}
