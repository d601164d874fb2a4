package leangrpc

import (
	"io"
	"syscall"
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
// wake, a futex wait, ~0.6 nanosleep and 1.6 extra context switches on the
// generator's CPU (perf stat, 2026-12-01: 6.9 system calls and 2.6
// context switches per call against 5.1 and 1.0 with raw reads; h2load
// makes 8 and 1). A raw read skips entersyscall, as the writes do (see
// write), and waits on the netpoller when there is nothing to read.
//
// With many calls in flight the P is rarely idle, so sysmon seldom sleeps
// and the wake-ups cost little (0.09 futex per call at 32), while raw
// reads there measured fewer calls/s than net.Conn's (7 of 8 rounds behind
// h2load against 5 of 8, and results/20261201-093322_generators): the
// reads stay as they were.
type source Conn

func (s *source) Read(p []byte) (int, error) {
	c := (*Conn)(s)
	if c.raw == nil || len(p) == 0 || !c.rawReads {
		return c.conn.Read(p)
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
