// Package version holds the version of the Joulie build, stamped in by the
// Makefile from `git describe` so every binary reports what it was built
// from.
package version

// Version is set at link time with -X; "dev" marks an unstamped build.
var Version = "dev"
