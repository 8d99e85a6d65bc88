package baseurl

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		err       error
	}{
		{"http://prometheus:9090", "http://prometheus:9090", nil},
		{"https://proxy.example/prometheus/", "https://proxy.example/prometheus", nil},
		{"http://sim:8080/nodes/{node}", "http://sim:8080/nodes/%7Bnode%7D", nil},
		{"ftp://prometheus:9090", "", ErrScheme},
		{"prometheus:9090", "", ErrScheme},
		{"http:///metrics", "", ErrNoHost},
		{"http://prometheus:9090/?x=1", "", ErrHasQuery},
		{"http://prometheus:9090/?", "", ErrHasQuery},
		{"http://prometheus:9090/#top", "", ErrHasQuery},
		{"http://[::1", "", ErrNotURL},
	} {
		u, err := Parse(tc.raw)
		if !errors.Is(err, tc.err) || (err == nil && u.String() != tc.want) {
			t.Errorf("Parse(%q) = %v, %v; want %s, %v", tc.raw, u, err, tc.want, tc.err)
		}
	}
	if _, err := Parse("ftp://admin:s3cret@host"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("an error echoes the password: %v", err)
	}
}

func TestExpandEscapesTheNodeName(t *testing.T) {
	u, err := Expand("http://sim:8080/nodes/{node}/", "gpu 07")
	if err != nil || u.EscapedPath() != "/nodes/gpu%2007" {
		t.Fatalf("Expand = %v, %v", u, err)
	}
	if _, err := Expand("http://{node}:8080", "a/b"); err == nil {
		t.Error("a node name that breaks the host was accepted")
	}
}
