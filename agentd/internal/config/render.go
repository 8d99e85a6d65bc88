package config

import (
	"io"
	"log/slog"
	"strconv"
	"strings"

	"joulie.io/joulie/pkg/cliapp"
)

// clone returns a deep copy, so that callers of key.ref on it create
// optional blocks in the copy only.
func (c Config) clone() *Config {
	c.StandaloneMode.Profile = *c.StandaloneMode.Profile.DeepCopy()
	return &c
}

// tidy drops optional blocks that hold nothing. The agent reads an empty
// block as an absent one (enforce treats a CPU target without watts or
// percentage as no target), so this changes no meaning and keeps a
// loaded Config equal to its own re-encoding.
func (c *Config) tidy() {
	p := &c.StandaloneMode.Profile
	if p.CPU != nil && p.CPU.PackagePowerCapWatts == nil && p.CPU.PackagePowerCapPctOfMax == nil {
		p.CPU = nil
	}
	if p.GPU != nil && p.GPU.PowerCap != nil && p.GPU.PowerCap.CapWattsPerGpu == nil && p.GPU.PowerCap.CapPctOfMax == nil {
		p.GPU.PowerCap = nil
	}
	if p.GPU != nil && p.GPU.PowerCap == nil {
		p.GPU = nil
	}
}

// Redacted returns a copy fit for logs: passwords in the backend URLs are
// replaced. Nothing else in the configuration is secret (the kubeconfig
// is a path; its credentials stay in the file).
func (c Config) Redacted() Config {
	r := *c.clone()
	r.HTTP.TelemetryURL = redactURL(r.HTTP.TelemetryURL)
	r.HTTP.ControlURL = redactURL(r.HTTP.ControlURL)
	return r
}

// redactURL hides the password of a URL's user information. It works on
// the text rather than through url.URL so that "{node}" stays as written
// (url.URL.String would escape the braces).
func redactURL(raw string) string {
	scheme := strings.Index(raw, "://")
	if scheme < 0 {
		return raw
	}
	rest := raw[scheme+3:]
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return raw
	}
	user, _, hasPassword := strings.Cut(authority[:at], ":")
	if !hasPassword {
		return raw
	}
	return raw[:scheme+3] + user + ":xxxxx" + rest[at:]
}

// settings calls fn with every key that has a value, in key order, on
// the redacted configuration.
func (c Config) settings(fn func(path, value string)) { table.Each(c.Redacted(), fn) }

// String renders the effective configuration on one line, key=value in
// key order, passwords redacted: what the daemon logs at start.
func (c Config) String() string {
	var b strings.Builder
	c.settings(func(path, value string) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(path)
		b.WriteByte('=')
		b.WriteString(quoteIfNeeded(value))
	})
	return b.String()
}

func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return r <= ' ' || r == '"' || r == '=' || r == '\\' || r > '~'
	}) {
		return strconv.Quote(s)
	}
	return s
}

// LogValue makes slog log the redacted configuration as a group of its
// keys: slog.Info("starting", "config", cfg).
func (c Config) LogValue() slog.Value {
	var attrs []slog.Attr
	c.settings(func(path, value string) {
		attrs = append(attrs, slog.String(path, value))
	})
	return slog.GroupValue(attrs...)
}

// LogHandler is the slog handler logLevel and logFormat ask for,
// writing to w.
func (c Config) LogHandler(w io.Writer) slog.Handler {
	return cliapp.LogHandler(w, c.LogLevel, c.LogFormat)
}
