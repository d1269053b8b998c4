package console

// words are what the pages call things: the standard profile's words for its
// owners, kwork's for kwork (subscriptions, delivery records, sends), in
// every language. Each is a catalog key prefix: words.<profile>.<word>.
type words struct {
	profile string
	// Grants: the profile has scoped types, so the nav offers the grants
	// page (kwork has none: its owners reach grants only by URL).
	Grants bool
	// Developer: the profile's owners mark a developer subscription (the
	// one lifecycle events go to), so the form offers the mark.
	Developer bool
}

var standardWords = words{profile: "standard", Grants: true}

var kworkWords = words{profile: "kwork", Developer: true}

func wordsFor(profile string) words {
	if profile == "kwork" {
		return kworkWords
	}
	return standardWords
}

// wordsView is words in one language, as the templates read them.
type wordsView struct {
	Section   string // the nav entry
	Endpoint  string // one
	Endpoints string // many
	Attempts  string // a delivery's tries: attempts, or kwork's sends
	Log       string // the delivery log
	LogNote   string // what the log keeps
	// PortalLogNote is LogNote in the portal, which links to no job.
	PortalLogNote string
	NoGrant       string // the grant picker's "no grant" choice
	Grants        bool
	Developer     bool
}

func (w words) in(l *locale) wordsView {
	k := func(word string) string { return l.T("words." + w.profile + "." + word) }
	return wordsView{
		Section: k("section"), Endpoint: k("endpoint"), Endpoints: k("endpoints"), Attempts: k("attempts"),
		Log: k("log"), LogNote: k("log_note"), PortalLogNote: k("log_note_portal"), NoGrant: k("no_grant"), Grants: w.Grants, Developer: w.Developer,
	}
}
