package bmc

import (
	"slices"
	"strings"
	"testing"
)

func TestCipherSuitesText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want CipherSuites
		err  string
	}{
		{in: "17,3", want: CipherSuites{17, 3}},
		{in: " 3 ", want: CipherSuites{3}},
		{in: "3,17", want: CipherSuites{3, 17}},
		{in: "0", err: "cipher suite 0 does not authenticate"},
		{in: "17,2", err: "cipher suite 2 does not"},
		{in: "seventeen", err: `"seventeen" is not a cipher suite ID`},
		{in: "300", err: `"300" is not a cipher suite ID`},
		{in: "", err: "no cipher suite"},
	} {
		var got CipherSuites
		err := got.UnmarshalText([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one saying %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if b, _ := got.MarshalText(); string(b) != strings.ReplaceAll(strings.TrimSpace(tc.in), " ", "") {
			t.Errorf("%q written back as %q", tc.in, b)
		}
	}
}

func TestConfigProblems(t *testing.T) {
	if ps := DefaultConfig().Problems(); len(ps) != 0 {
		t.Errorf("the defaults have problems: %v", ps)
	}
	c := DefaultConfig()
	c.CipherSuites, c.Privilege, c.Timeout, c.Retries, c.CallTimeout, c.SecretNamespace = nil, "root", 0, -1, 0, "Joulie_BMC"
	ps := c.Problems()
	for _, f := range []string{"CipherSuites", "Privilege", "Timeout", "Retries", "CallTimeout", "SecretNamespace"} {
		if ps[f] == "" {
			t.Errorf("no problem reported for %s: %v", f, ps)
		}
	}
}
