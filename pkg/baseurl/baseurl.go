// Package baseurl holds the one rule for the base URLs Joulie's programs
// call (a telemetry simulator, Prometheus): http or https, a host, any
// path prefix (a proxy may serve the API under /prometheus), and no query
// or fragment, since each caller's contract adds its own path and query.
// The configuration checks and the clients apply the same rule, so a URL
// that passes the check at start never fails later.
package baseurl

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Errors of Parse, for callers that phrase them in their own words.
var (
	ErrNotURL   = errors.New("is not a URL")
	ErrScheme   = errors.New("must start with http:// or https://")
	ErrNoHost   = errors.New("has no host")
	ErrHasQuery = errors.New("must have no query or fragment (the caller adds its own)")
)

// Parse checks raw against the rule and returns it with any trailing
// slash of the path removed, so that joining a path gives one slash. Its
// errors wrap one of the Err values and never echo a password.
func Parse(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, ErrNotURL
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%s %w", u.Redacted(), ErrScheme)
	case u.Host == "":
		return nil, fmt.Errorf("%s %w", u.Redacted(), ErrNoHost)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, fmt.Errorf("%s %w", u.Redacted(), ErrHasQuery)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	return u, nil
}

// Reason is the rule err (from Parse or Expand) says raw broke, in words
// that follow a quoted URL ("must start with http:// or https://"), or ""
// for nil and other errors.
func Reason(err error) string {
	for _, e := range []error{ErrNotURL, ErrScheme, ErrNoHost, ErrHasQuery} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return ""
}

// NodePlaceholder is replaced by a node's name in a per-node base URL.
const NodePlaceholder = "{node}"

// Expand puts node (path-escaped) in place of every {node} in raw and
// parses the result.
func Expand(raw, node string) (*url.URL, error) {
	return Parse(strings.ReplaceAll(raw, NodePlaceholder, url.PathEscape(node)))
}
