package prober

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeTCP: the ports FreeTCP picks lie below the kernel's ephemeral
// range (which connections and binds to port 0 draw from), above
// minPickedPort, are free (a server can listen there at once), and vary
// from call to call.
func TestFreeTCP(t *testing.T) {
	lo := ephemeralLow()
	if lo <= minPickedPort {
		t.Skipf("ephemeral range starts at %d: no ports below it to pick", lo)
	}
	seen := map[int]bool{}
	for range 20 {
		tg, err := FreeTCP()
		if err != nil {
			t.Fatal(err)
		}
		port, err := strconv.Atoi(tg.Port())
		if err != nil || tg.Network != "tcp" {
			t.Fatalf("FreeTCP() = %+v: not a TCP port", tg)
		}
		if port < minPickedPort || port >= lo {
			t.Errorf("port %d outside [%d, %d): the ephemeral range starts at %d", port, minPickedPort, lo, lo)
		}
		l, err := net.Listen("tcp", tg.Address)
		if err != nil {
			t.Errorf("listen on the port picked, %s: %v", tg.Address, err)
			continue
		}
		l.Close()
		seen[port] = true
	}
	if len(seen) < 2 {
		t.Errorf("20 picks gave ports %v: not drawn at random", seen)
	}
}
