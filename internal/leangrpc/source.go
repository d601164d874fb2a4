package leangrpc

import (
	"io"
	"net"
	"syscall"
	"time"
	"unsafe"
)

// source is what the reader's bufio.Reader reads: the connection, read
// with raw read system calls while at most one call is open (rawReads,
// set by the reader under mu before each wait for the server), through
// net.Conn otherwise.
//
// net.Conn's Read enters each read as a blocking-style system call
// (entersyscall), and entering one wakes the runtime's sysmon thread when
// it sleeps, which it does whenever the generator's only P is idle: with
// one call in flight that is every call, and each wake-up costs a futex
// wake, a futex wait and extra context switches on the generator's CPU. A
// raw read skips entersyscall, as the writes do (see write), and waits on
// the netpoller when there is nothing to read.
//
// With many calls in flight the P is rarely idle, so sysmon seldom sleeps
// and the wake-ups cost little, while raw reads there served fewer calls/s
// than net.Conn's: the reads stay as they were. The measurements are in
// bench/README.md and docs/performance-notes.md.
type source Conn

func (s *source) Read(p []byte) (int, error) {
	c := (*Conn)(s)
	if c.conn != c.sock {
		return c.conn.Read(p) // TLS: its records come from readSock
	}
	return c.readSock(p)
}

// readSock reads the socket (see source).
func (c *Conn) readSock(p []byte) (int, error) {
	if c.raw == nil || len(p) == 0 || !c.rawReads {
		return c.sock.Read(p)
	}
	c.rin, c.rn, c.rerr = p, 0, nil
	err := c.raw.Read(c.rfunc)
	c.rin = nil
	if err != nil {
		return 0, err
	}
	return c.rn, c.rerr
}

// rawRead reads into c.rin; false means nothing to read yet (wait).
func (c *Conn) rawRead(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rin[0])), uintptr(len(c.rin)))
		switch e {
		case 0:
			c.rn = int(n)
			if n == 0 {
				c.rerr = io.EOF
			}
			return true
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false // wait for the netpoller
		default:
			c.rerr = e
			return true
		}
	}
}

// under is the socket as the *tls.Conn of a TLS connection sees it: its
// records read and written with the raw system calls of a cleartext
// connection (readSock, writeSock), the rest sock's own. The *tls.Conn
// serializes its reads and, apart, its writes, as readSock's and
// writeSock's one read and one write in progress need.
type under Conn

func (u *under) Read(p []byte) (int, error) { return (*Conn)(u).readSock(p) }

func (u *under) Write(p []byte) (int, error) {
	if err := (*Conn)(u).writeSock(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (u *under) Close() error                       { return u.sock.Close() }
func (u *under) LocalAddr() net.Addr                { return u.sock.LocalAddr() }
func (u *under) RemoteAddr() net.Addr               { return u.sock.RemoteAddr() }
func (u *under) SetDeadline(t time.Time) error      { return u.sock.SetDeadline(t) }
func (u *under) SetReadDeadline(t time.Time) error  { return u.sock.SetReadDeadline(t) }
func (u *under) SetWriteDeadline(t time.Time) error { return u.sock.SetWriteDeadline(t) }
