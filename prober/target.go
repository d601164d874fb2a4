// Package prober times the first healthy reply from a freshly started
// server: it probes where the server listens (a Target) over a fresh
// connection per attempt with a Checker (gRPC health, a gRPC method, HTTP,
// h2c, HTTP/3, TCP connect; gRPC and HTTP also over TLS, a new TLS client
// per attempt, its handshake a phase; HTTP/3 a new QUIC connection per
// attempt, its QUIC handshake that phase) until WaitReady sees it ready, and
// records each probe as a Sample with its Phases. Starting servers is package launch's.
package prober

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Target is where a server listens: ("tcp", "127.0.0.1:PORT") or
// ("unix", "/path/to.sock").
type Target struct {
	Network string `json:"network"`
	Address string `json:"address"`
}

func (t Target) String() string { return t.Network + "://" + t.Address }

// GRPCTarget is the grpc.NewClient target: passthrough for TCP, so no DNS
// resolver runs, and unix:// for sockets.
func (t Target) GRPCTarget() string {
	if t.Network == "unix" {
		return "unix://" + t.Address
	}
	return "passthrough:///" + t.Address
}

// Port is the TCP port, or "" for a Unix socket.
func (t Target) Port() string {
	if t.Network != "tcp" {
		return ""
	}
	_, p, err := net.SplitHostPort(t.Address)
	if err != nil {
		return ""
	}
	return p
}

// FreeTCP picks a free loopback port. The port is closed again before it is
// returned, so a racing process could take it; callers check that nothing
// answers there before they start a server. To narrow that race it picks
// below the kernel's ephemeral range (ip_local_port_range), at random: the
// kernel hands ports in that range to every outgoing connection and every
// bind to port 0 on the machine, so a port taken from it could be given to
// someone else's connection before the server binds it (seen in CI as
// "bind: address already in use"); a port below it is taken only by an
// explicit bind. Where no port below the range is free it takes one from
// the kernel.
func FreeTCP() (Target, error) {
	lo := ephemeralLow()
	for range 64 {
		if lo <= minPickedPort {
			break
		}
		port := minPickedPort + rand.IntN(lo-minPickedPort)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // in use (or reserved): another
		}
		l.Close()
		return Target{Network: "tcp", Address: "127.0.0.1:" + strconv.Itoa(port)}, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Target{}, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return Target{Network: "tcp", Address: "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)}, nil
}

// minPickedPort is the lowest port FreeTCP picks: above the well-known and
// the commonly configured service ports.
const minPickedPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range (32768,
// Linux's default, when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo < 1 {
		return 32768
	}
	return lo
}
