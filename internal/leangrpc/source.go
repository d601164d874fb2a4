package leangrpc

import (
	"io"
	"syscall"
	"unsafe"
)

// source is what the reader's bufio.Reader reads: the connection, read
// with raw read system calls that wait on the netpoller when there is
// nothing to read.
//
// net.Conn's Read makes each read a blocking-style system call
// (entersyscall), and entering one wakes the runtime's sysmon thread
// whenever it sleeps: with one call in flight, that is a futex wake-up and
// a thread switch per call on a one-CPU generator, for a read that never
// blocks (the socket is non-blocking). A raw read skips that, as the
// writes do (see write). What the wake-ups buy is shown in bench/README.md:
// a thread kept warm answers sooner, so the generator's latency at one
// call in flight is lower with them, at more CPU per call.
type source Conn

func (s *source) Read(p []byte) (int, error) {
	c := (*Conn)(s)
	if c.raw == nil || len(p) == 0 {
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
