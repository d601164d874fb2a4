package steady

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ticker is a periodic Linux timerfd read through Go's netpoller: it wakes
// its reader within microseconds of each period, where Go's timers wake an
// idle process up to a millisecond late.
type ticker struct {
	f   *os.File
	buf [8]byte
}

func newTicker(period time.Duration) (*ticker, error) {
	if period <= 0 {
		period = time.Microsecond
	}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("create timerfd: %w", err)
	}
	ts := unix.NsecToTimespec(int64(period))
	if err := unix.TimerfdSettime(fd, 0, &unix.ItimerSpec{Interval: ts, Value: ts}, nil); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("arm timerfd: %w", err)
	}
	// A non-blocking descriptor given to os.NewFile is registered with the
	// netpoller, so Read parks the goroutine instead of blocking a thread.
	return &ticker{f: os.NewFile(uintptr(fd), "timerfd")}, nil
}

// wait blocks until the next period has passed (at once if one already
// has).
func (t *ticker) wait() error {
	_, err := t.f.Read(t.buf[:])
	return err
}

func (t *ticker) Close() error { return t.f.Close() }
