package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	"joulie.io/joulie/test/demo"
)

// A command line no demo can run is refused as bad usage (exit 2), naming
// the flag, before anything starts.
func TestBadCommandLineIsUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--nodes", "2"}, "--nodes=2"},
		{[]string{"--duration", "5s"}, "--duration=5s"},
		{[]string{"--daemon-nodes", "20"}, "--daemon-nodes=20"},
		{[]string{"--compare", "--kubeconfig", "/x"}, "--compare needs the embedded cluster"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
	} {
		err := run(c.args, io.Discard, io.Discard)
		if !errors.Is(err, demo.ErrUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error saying %q", c.args, err, c.want)
		}
	}
}

// The comparison is the default run; on a cluster of the user's, which
// the demo cannot turn Joulie off on, it is off unless asked for.
func TestCompareIsTheDefaultOnTheEmbeddedCluster(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--compare=false"}, false},
		{[]string{"--kubeconfig", "/x"}, false},
		{[]string{"--kubeconfig", "/x", "--compare=false"}, false},
	} {
		o, err := parseFlags(c.args, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if o.Compare != c.want {
			t.Errorf("%v: compare %v, want %v", c.args, o.Compare, c.want)
		}
		if err := o.Validate(); err != nil {
			t.Errorf("%v: %v", c.args, err)
		}
	}
}
