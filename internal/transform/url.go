package transform

import (
	"net/url"
	"strings"
)

// sameOrigin says whether to has from's scheme, user info, host and port:
// a transformation may move a delivery within its receiver, never to
// another one.
func sameOrigin(from, to string) (bool, error) {
	a, err := url.Parse(from)
	if err != nil {
		return false, err
	}
	b, err := url.Parse(to)
	if err != nil {
		return false, err
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host) && a.User.String() == b.User.String() && b.Opaque == "", nil
}
