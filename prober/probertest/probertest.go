// Package probertest holds what tests of prober's users share.
package probertest

import (
	"testing"

	"github.com/coldstart-go/coldstart/prober"
)

// LoadTLS is prober.LoadTLS for a test: the client side's TLS from o's
// files, failing t at once when they do not load.
func LoadTLS(t testing.TB, o prober.TLSOptions) *prober.TLS {
	t.Helper()
	tl, err := prober.LoadTLS(o)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}
