package vmtest

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// RequireEnv names what a run must have: a comma-separated list of
// requirement names ("vm", ...) or "all". A test whose requirement is
// listed fails where it would otherwise skip, so CI cannot pass by
// skipping it.
const RequireEnv = "COLDSTART_REQUIRE"

// Required reports whether RequireEnv lists name (or all).
func Required(name string) bool {
	list := strings.Split(os.Getenv(RequireEnv), ",")
	for i := range list {
		list[i] = strings.TrimSpace(list[i])
	}
	return slices.Contains(list, name) || slices.Contains(list, "all")
}

// SkipUnlessRequired skips t with why, or fails it when RequireEnv lists
// name.
func SkipUnlessRequired(t testing.TB, name string, why error) {
	t.Helper()
	if Required(name) {
		t.Fatalf("%v (required: %s lists %q)", why, RequireEnv, name)
	}
	t.Skip(why)
}
