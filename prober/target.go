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
	"net"
	"strconv"
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
// answers there before they start a server.
func FreeTCP() (Target, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Target{}, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return Target{Network: "tcp", Address: "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)}, nil
}
